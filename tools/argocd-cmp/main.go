// argocd-cmp runs Argo CD v3.6.2's own code around topogen's Config Management Plugin,
// for tests/gitops (tools/README.md). One binary, several modes:
//
//	argocd-cmp cmp-server [flags]     the sidecar: Argo CD's argocd-cmp-server command
//	                                  (also when invoked as `argocd-cmp-server`)
//	argocd-cmp generate <req.json     the repo-server: GenerateManifests for one Application
//	argocd-cmp discover <req.json     the repo-server's discovery for an unnamed source
//	argocd-cmp appset FILE            the ApplicationSet controller: the Applications of FILE
//	argocd-cmp check-plugin DIR       Argo CD's plugin.yaml reader, plus unknown keys
//	argocd-cmp ping SOCKET            CheckPluginConfiguration on one plugin socket
//	argocd-cmp kustomize ...          kustomize v5.8.3, the one Argo CD v3.6.2's image ships
//	                                  (also when invoked as `kustomize`)
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"

	"k8s.io/klog/v2"

	cmpserver "github.com/argoproj/argo-cd/v3/cmd/argocd-cmp-server/commands"
	"github.com/argoproj/argo-cd/v3/common"
	"github.com/argoproj/argo-cd/v3/util/log"
	kustomize "sigs.k8s.io/kustomize/kustomize/v5/commands"
)

const usage = "usage: argocd-cmp cmp-server|generate|discover|appset|check-plugin|ping|kustomize|version ..."

func main() {
	// as Argo CD's own main does for every command (its grpc.DisableSRVLookups is not
	// needed: it undoes what grpc's grpclb balancer sets, and that is not built in here)
	klog.SetLogger(log.NewLogrusLogger(log.NewWithCurrentConfig()))

	switch filepath.Base(os.Args[0]) {
	case common.CommandCMPServer:
		os.Exit(runCMPServer(os.Args[1:]))
	case "kustomize":
		os.Exit(runKustomize(os.Args[1:]))
	}
	if len(os.Args) < 2 {
		fail(usage)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "cmp-server":
		os.Exit(runCMPServer(args))
	case "kustomize":
		os.Exit(runKustomize(args))
	case "generate":
		os.Exit(runGenerate())
	case "discover":
		os.Exit(runDiscover())
	case "appset":
		os.Exit(runAppSet(args))
	case "check-plugin":
		os.Exit(runCheckPlugin(args))
	case "ping":
		os.Exit(runPing(args))
	case "version", "--version":
		fmt.Printf("argocd-cmp (argo-cd %s, kustomize %s)\n", depVersion(argoModule), depVersion(kustomizeModule))
	default:
		fail(usage)
	}
}

// runCMPServer is `argocd-cmp-server` exactly as Argo CD's main runs it.
func runCMPServer(args []string) int {
	command := cmpserver.NewCommand()
	command.SetArgs(args)
	if err := command.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// runKustomize is kustomize's own main.
func runKustomize(args []string) int {
	command := kustomize.NewDefaultCommand()
	command.SetArgs(args)
	if err := command.Execute(); err != nil {
		return 1
	}
	return 0
}

const (
	argoModule      = "github.com/argoproj/argo-cd/v3"
	kustomizeModule = "sigs.k8s.io/kustomize/kustomize/v5"
)

// depVersion is the version of a module built in (Argo CD's own version string is
// stamped by its release builds only: here it reads v99.99.99+unknown).
func depVersion(module string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == module {
				return dep.Version
			}
		}
	}
	return "unknown"
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "argocd-cmp: "+msg)
	os.Exit(2)
}
