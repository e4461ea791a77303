package main

// The repo-server's side: a ManifestRequest built as the application controller builds
// it (controller/state.go), sent through protobuf as over gRPC, under the controller's
// --repo-server-timeout-seconds deadline, then handled as the repo-server handles it
// (symlink check, app path, GenerateManifests).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v3/reposerver/apiclient"
	"github.com/argoproj/argo-cd/v3/reposerver/repository"
	"github.com/argoproj/argo-cd/v3/util/app/discovery"
	apppath "github.com/argoproj/argo-cd/v3/util/app/path"
	"github.com/argoproj/argo-cd/v3/util/git"
	utilio "github.com/argoproj/argo-cd/v3/util/io"
)

// request is what a test sends on stdin.
type request struct {
	// An argoproj.io/v1alpha1 Application (as JSON), decoded with Argo CD's types.
	Application json.RawMessage `json:"application"`
	// The namespace Argo CD runs in (the controller's namespace): Applications elsewhere
	// are named <namespace>_<name> (Application.InstanceName).
	ControlPlaneNamespace string `json:"controlPlaneNamespace"`
	// The checkout of the revision: what the repo-server fetched.
	RepoRoot    string   `json:"repoRoot"`
	Revision    string   `json:"revision"`
	KubeVersion string   `json:"kubeVersion"`
	APIVersions []string `json:"apiVersions"`
	// The controller's --repo-server-timeout-seconds (Argo CD's default: 60).
	TimeoutSeconds float64 `json:"timeoutSeconds"`
}

type response struct {
	AppName    string   `json:"appName"`   // ARGOCD_APP_NAME as Argo CD sets it
	Namespace  string   `json:"namespace"` // ARGOCD_APP_NAMESPACE
	SourceType string   `json:"sourceType,omitempty"`
	Manifests  []string `json:"manifests"`
	Matched    bool     `json:"matched"` // discover: a plugin claimed the folder
	AppType    string   `json:"appType,omitempty"`
	Error      string   `json:"error,omitempty"`
	Seconds    float64  `json:"seconds"`
}

const (
	appLabelKey    = "app.kubernetes.io/instance" // argocd-cm's default
	trackingMethod = "annotation"                 // Argo CD 3's default
)

func readRequest() (*request, *v1alpha1.Application, error) {
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		return nil, nil, err
	}
	var req request
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, nil, fmt.Errorf("request: %w", err)
	}
	var app v1alpha1.Application
	if err := json.Unmarshal(req.Application, &app); err != nil {
		return nil, nil, fmt.Errorf("application: %w", err)
	}
	if req.TimeoutSeconds <= 0 {
		req.TimeoutSeconds = 60
	}
	return &req, &app, nil
}

// manifestRequest is the controller's ManifestRequest, after a protobuf round trip.
func manifestRequest(req *request, app *v1alpha1.Application) (*apiclient.ManifestRequest, error) {
	source := app.Spec.GetSource()
	q := &apiclient.ManifestRequest{
		Repo:               &v1alpha1.Repository{Repo: source.RepoURL},
		Revision:           req.Revision,
		AppLabelKey:        appLabelKey,
		AppName:            app.InstanceName(req.ControlPlaneNamespace),
		Namespace:          app.Spec.Destination.Namespace,
		ApplicationSource:  &source,
		KubeVersion:        req.KubeVersion,
		ApiVersions:        req.APIVersions,
		TrackingMethod:     trackingMethod,
		HasMultipleSources: app.Spec.HasMultipleSources(),
		ProjectName:        app.Spec.GetProject(),
	}
	wire, err := q.Marshal()
	if err != nil {
		return nil, err
	}
	var sent apiclient.ManifestRequest
	if err := sent.Unmarshal(wire); err != nil {
		return nil, err
	}
	return &sent, nil
}

// appPath is the Application's folder in the checkout, as the repo-server finds it.
func appPath(repoRoot string, q *apiclient.ManifestRequest) (string, error) {
	if err := apppath.CheckOutOfBoundsSymlinks(repoRoot); err != nil {
		return "", err
	}
	return apppath.Path(repoRoot, q.ApplicationSource.Path)
}

func runGenerate() int {
	req, app, err := readRequest()
	if err != nil {
		fail(err.Error())
	}
	q, err := manifestRequest(req, app)
	if err != nil {
		fail(err.Error())
	}
	resp := response{AppName: q.AppName, Namespace: q.Namespace, Manifests: []string{}}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), seconds(req.TimeoutSeconds))
	defer cancel()
	path, err := appPath(req.RepoRoot, q)
	if err == nil {
		var out *apiclient.ManifestResponse
		tarDone := make(chan bool, 1) // the repo-server unlocks the checkout on it
		out, err = repository.GenerateManifests(ctx, path, req.RepoRoot, req.Revision, q, false,
			git.NoopCredsStore{}, resource.MustParse("10M"), utilio.NewRandomizedTempPaths(os.TempDir()),
			repository.WithCMPTarDoneChannel(tarDone))
		if err == nil {
			resp.SourceType = out.SourceType
			resp.Manifests = out.Manifests
		}
	}
	resp.Seconds = time.Since(start).Seconds()
	return emit(resp, err)
}

// runDiscover is what GetAppSourceType asks for a source with no explicit type:
// discovery.AppType, whose first step is DetectConfigManagementPlugin over every socket.
func runDiscover() int {
	req, app, err := readRequest()
	if err != nil {
		fail(err.Error())
	}
	q, err := manifestRequest(req, app)
	if err != nil {
		fail(err.Error())
	}
	resp := response{AppName: q.AppName, Namespace: q.Namespace, Manifests: []string{}}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), seconds(req.TimeoutSeconds))
	defer cancel()
	path, err := appPath(req.RepoRoot, q)
	if err == nil {
		env := discoveryEnv(q).Environ()
		conn, _, detectErr := discovery.DetectConfigManagementPlugin(ctx, path, req.RepoRoot, "", env, nil)
		if detectErr == nil {
			resp.Matched = true
			utilio.Close(conn)
		}
		resp.AppType, err = discovery.AppType(ctx, path, req.RepoRoot, nil, nil, env)
	}
	resp.Seconds = time.Since(start).Seconds()
	return emit(resp, err)
}

// discoveryEnv: the ARGOCD_APP_* entries GenerateManifests passes to discovery
// (reposerver/repository newEnv, unexported there).
func discoveryEnv(q *apiclient.ManifestRequest) *v1alpha1.Env {
	short := func(n int) string { return q.Revision[:min(n, len(q.Revision))] }
	return &v1alpha1.Env{
		{Name: "ARGOCD_APP_NAME", Value: q.AppName},
		{Name: "ARGOCD_APP_NAMESPACE", Value: q.Namespace},
		{Name: "ARGOCD_APP_PROJECT_NAME", Value: q.ProjectName},
		{Name: "ARGOCD_APP_REVISION", Value: q.Revision},
		{Name: "ARGOCD_APP_REVISION_SHORT", Value: short(7)},
		{Name: "ARGOCD_APP_REVISION_SHORT_8", Value: short(8)},
		{Name: "ARGOCD_APP_SOURCE_REPO_URL", Value: q.Repo.Repo},
		{Name: "ARGOCD_APP_SOURCE_PATH", Value: q.ApplicationSource.Path},
		{Name: "ARGOCD_APP_SOURCE_TARGET_REVISION", Value: q.ApplicationSource.TargetRevision},
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// emit prints the response; the exit code is 0 either way (the error is data).
func emit(resp response, err error) int {
	if err != nil {
		resp.Error = err.Error()
	}
	enc := json.NewEncoder(os.Stdout)
	if e := enc.Encode(resp); e != nil {
		fmt.Fprintln(os.Stderr, e)
		return 3
	}
	return 0
}
