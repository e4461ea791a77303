package main

import "encoding/json"

// The JSON protocol: one Input on stdin, one Output on stdout. Each scenario is
// an independent cluster: its own agent options, namespaces, services, nodes,
// policies and endpoints, and the flows to look up.

// Input is a batch of scenarios.
type Input struct {
	Scenarios []Scenario `json:"scenarios"`
}

// Agent holds the cilium-agent options that change verdicts.
type Agent struct {
	// Labels is the agent's `labels` option (--labels), verbatim: extra
	// identity-relevant label prefixes; any inclusive one turns the filter
	// into an allow-list. Empty: Cilium's default filter.
	Labels []string `json:"labels"`
	// PolicyEnforcement is --enable-policy: default | always | never.
	PolicyEnforcement string `json:"policyEnforcement"`
	// HostFirewall is --enable-host-firewall (host policies apply).
	HostFirewall bool `json:"hostFirewall"`
	// ClusterName is --cluster-name (default "default").
	ClusterName string `json:"clusterName"`
	// NodeSelectorLabels is --enable-node-selector-labels (fromNodes/toNodes
	// are accepted and remote nodes get per-node identities).
	NodeSelectorLabels bool `json:"nodeSelectorLabels"`
}

type Namespace struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
}

// Service is what the agent's load-balancer tables hold of a Service.
type Service struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels"`
	Selector  map[string]string `json:"selector"`
	Backends  []string          `json:"backends"` // IPs, for selector-less services
}

type Node struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
}

type ContainerPort struct {
	Name          string `json:"name"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol"`
}

// Endpoint is a pod (labels, namespace, service account, container ports,
// node) or, with Host set, a node's host endpoint (hostNetwork pods share it).
type Endpoint struct {
	Name           string            `json:"name"`
	Namespace      string            `json:"namespace"`
	Labels         map[string]string `json:"labels"`
	ServiceAccount string            `json:"serviceAccount"`
	Ports          []ContainerPort   `json:"ports"`
	Node           string            `json:"node"`
	Host           bool              `json:"host"`
}

type Probe struct {
	Protocol string `json:"protocol"`
	Port     int    `json:"port"`
}

// Query asks for From -> To on each probe. Without queries, a scenario asks
// for every ordered pair of its endpoints (an endpoint with itself too).
type Query struct {
	From   string  `json:"from"`
	To     string  `json:"to"`
	Probes []Probe `json:"probes"`
}

type Scenario struct {
	Name       string            `json:"name"`
	Agent      Agent             `json:"agent"`
	Namespaces []Namespace       `json:"namespaces"`
	Services   []Service         `json:"services"`
	Nodes      []Node            `json:"nodes"`
	Policies   []json.RawMessage `json:"policies"`
	Endpoints  []Endpoint        `json:"endpoints"`
	Queries    []Query           `json:"queries"`
	Probes     []Probe           `json:"probes"` // for the all-pairs default
}

type Output struct {
	Cilium    string           `json:"cilium"`
	Scenarios []ScenarioResult `json:"scenarios"`
}

// PolicyResult says whether Cilium accepted one object, and what it logged.
type PolicyResult struct {
	Kind      string   `json:"kind"`
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Error     string   `json:"error,omitempty"`
	Entries   int      `json:"entries"`
	Warnings  []string `json:"warnings,omitempty"`
}

// IdentityResult is an endpoint's security identity as its own agent sees it.
type IdentityResult struct {
	ID     uint32   `json:"id"`
	Labels []string `json:"labels"`
}

// Verdict per probe, in probe order: "A" allowed, "D" denied.
type QueryResult struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Egress  string `json:"egress"`
	Ingress string `json:"ingress"`
}

type ScenarioResult struct {
	Name       string                    `json:"name"`
	Error      string                    `json:"error,omitempty"`
	Policies   []PolicyResult            `json:"policies"`
	Identities map[string]IdentityResult `json:"identities"`
	Results    []QueryResult             `json:"results"`
}
