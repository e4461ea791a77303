package main

// The ApplicationSet controller's rendering of Applications, Argo CD's plugin.yaml reader
// and a plugin's CheckPluginConfiguration.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/golang/protobuf/ptypes/empty"
	log "github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"sigs.k8s.io/yaml"

	"github.com/argoproj/argo-cd/v3/applicationset/controllers/template"
	"github.com/argoproj/argo-cd/v3/applicationset/generators"
	"github.com/argoproj/argo-cd/v3/applicationset/utils"
	pluginclient "github.com/argoproj/argo-cd/v3/cmpserver/apiclient"
	"github.com/argoproj/argo-cd/v3/cmpserver/plugin"
	"github.com/argoproj/argo-cd/v3/common"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	utilio "github.com/argoproj/argo-cd/v3/util/io"
)

// runAppSet prints the Applications the controller generates from an ApplicationSet
// whose generators are lists (the only kind that needs no cluster or SCM access).
func runAppSet(args []string) int {
	if len(args) != 1 {
		fail("usage: argocd-cmp appset FILE")
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		fail(err.Error())
	}
	var appSet v1alpha1.ApplicationSet
	if err := yaml.Unmarshal(data, &appSet); err != nil {
		fail(fmt.Sprintf("%s: %v", args[0], err))
	}
	listOnly := map[string]generators.Generator{"List": generators.NewListGenerator()}
	apps, _, err := template.GenerateApplications(log.WithField("applicationset", appSet.Name),
		appSet, listOnly, &utils.Render{}, nil)
	if err != nil {
		fail(fmt.Sprintf("%s: %v", args[0], err))
	}
	for i := range apps {
		apps[i].APIVersion = "argoproj.io/v1alpha1"
		apps[i].Kind = "Application"
	}
	return printJSON(apps)
}

type pluginCheck struct {
	Name      string `json:"name"`
	Discovery bool   `json:"discovery"` // discovery configured (Discover.IsDefined)
	Strict    string `json:"strict,omitempty"`
}

// runCheckPlugin loads DIR/plugin.yaml with the CMP server's own reader (lenient: it
// ignores unknown keys), then decodes it strictly into the same types, so a key Argo CD
// does not know is an error. Exit 1 when either fails.
func runCheckPlugin(args []string) int {
	if len(args) != 1 {
		fail("usage: argocd-cmp check-plugin DIR")
	}
	config, err := plugin.ReadPluginConfig(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "argocd-cmp: Argo CD's reader refuses %s: %v\n", args[0], err)
		return 1
	}
	check := pluginCheck{Name: config.Metadata.Name, Discovery: config.Spec.Discover.IsDefined()}
	data, err := os.ReadFile(filepath.Join(args[0], common.PluginConfigFileName))
	if err != nil {
		fail(err.Error())
	}
	var strict plugin.PluginConfig
	if err := yaml.UnmarshalStrict(data, &strict); err != nil {
		check.Strict = err.Error()
	}
	printJSON(check)
	if check.Strict != "" {
		return 1
	}
	return 0
}

// runPing asks one plugin socket what Argo CD's clients ask first
// (CheckPluginConfiguration), then makes a gRPC health check, a call Argo CD never makes
// to a plugin: the tests read the CMP server's log up to it.
func runPing(args []string) int {
	if len(args) != 1 {
		fail("usage: argocd-cmp ping SOCKET")
	}
	conn, client, err := pluginclient.NewConfigManagementPluginClientSet(args[0]).NewConfigManagementPluginClient()
	if err != nil {
		fail(err.Error())
	}
	defer utilio.Close(conn)
	resp, err := client.CheckPluginConfiguration(context.Background(), &empty.Empty{})
	if err != nil {
		fail(err.Error())
	}
	health, err := grpc.NewClient("unix://"+args[0], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fail(err.Error())
	}
	defer health.Close()
	if _, err := grpc_health_v1.NewHealthClient(health).Check(context.Background(), &grpc_health_v1.HealthCheckRequest{}); err != nil {
		fail(err.Error())
	}
	return printJSON(resp)
}

func printJSON(v any) int {
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	fmt.Println(string(out))
	return 0
}
