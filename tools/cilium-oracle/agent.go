package main

import (
	"fmt"
	"log/slog"

	"github.com/cilium/cilium/pkg/labelsfilter"
	"github.com/cilium/cilium/pkg/option"
	"github.com/cilium/cilium/pkg/policy"
	"github.com/cilium/cilium/pkg/policy/api"
)

// configureAgent sets the process-wide agent state Cilium's packages read
// (option.Config, the policy-enforcement mode, the identity label filter, the
// cluster entity) the way cilium-agent does at start-up. Scenarios run one
// after another, so each sets it again.
func configureAgent(logger *slog.Logger, a Agent) error {
	cluster := a.ClusterName
	if cluster == "" {
		cluster = "default" // defaults.ClusterName
	}
	mode := a.PolicyEnforcement
	switch mode {
	case "":
		mode = option.DefaultEnforcement
	case option.DefaultEnforcement, option.AlwaysEnforce, option.NeverEnforce:
	default:
		return fmt.Errorf("policyEnforcement %q: want default, always or never", mode)
	}
	cfg := option.Config
	cfg.ClusterName = cluster
	cfg.EnableHostFirewall = a.HostFirewall
	cfg.EnableNodeSelectorLabels = a.NodeSelectorLabels
	cfg.EnablePolicy = mode
	// cilium-agent turns allow-localhost=auto (the default) into "always" on
	// Kubernetes (daemon/cmd/daemon.go), so kubelet probes reach pods.
	cfg.UnsafeDaemonConfigOption.AllowLocalhost = option.AllowLocalhostAlways
	policy.SetPolicyEnabled(mode)
	if err := labelsfilter.ParseLabelPrefixCfg(logger, a.Labels, nil, ""); err != nil {
		return fmt.Errorf("labels: %w", err)
	}
	api.InitEntities(cluster)
	return nil
}
