// Command cilium-oracle answers policy verdicts with Cilium's own policy
// engine: CiliumNetworkPolicy, CiliumClusterwideNetworkPolicy and
// NetworkPolicy objects parsed by the agent's code into a real policy
// repository (pkg/policy), endpoints turned into security identities the way
// the agent does (the `labels` filter included), and each flow looked up per
// direction and port in the distilled endpoint policy, as policy.LookupFlow
// does in Cilium's tests.
//
//	cilium-oracle < input.json > output.json     (protocol: protocol.go)
//	cilium-oracle --version
//
// Exit 0 with one result per scenario (a scenario's own error is in its
// result); 2 when the input is not a JSON batch.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"github.com/cilium/cilium/pkg/identity"
	ciliumTypes "github.com/cilium/cilium/pkg/types"
)

const ciliumModule = "github.com/cilium/cilium"

func ciliumVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == ciliumModule {
				return m.Version
			}
		}
	}
	return "unknown"
}

func main() {
	if len(os.Args) > 1 {
		if os.Args[1] == "--version" || os.Args[1] == "version" {
			fmt.Printf("cilium-oracle (cilium %s)\n", ciliumVersion())
			return
		}
		fmt.Fprintln(os.Stderr, "usage: cilium-oracle < input.json > output.json | cilium-oracle --version")
		os.Exit(2)
	}
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cilium-oracle: reading stdin:", err)
		os.Exit(2)
	}
	var in Input
	if err := json.Unmarshal(data, &in); err != nil {
		fmt.Fprintln(os.Stderr, "cilium-oracle: input is not a JSON batch:", err)
		os.Exit(2)
	}
	logger := slog.New(slog.DiscardHandler)
	schema, err := newAdmission(logger)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cilium-oracle: loading the CRD schemas:", err)
		os.Exit(3)
	}
	out := Output{Cilium: ciliumVersion()}
	for i := range in.Scenarios {
		out.Scenarios = append(out.Scenarios, runScenario(logger, &in.Scenarios[i], schema))
	}
	w := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(w)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "cilium-oracle: writing output:", err)
		os.Exit(3)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "cilium-oracle: writing output:", err)
		os.Exit(3)
	}
}

func runScenario(logger *slog.Logger, sc *Scenario, schema *admission) (res ScenarioResult) {
	res = ScenarioResult{Name: sc.Name, Identities: map[string]IdentityResult{}}
	defer func() {
		// a panic inside Cilium's code is this scenario's error, not the batch's
		if r := recover(); r != nil {
			res.Error = fmt.Sprintf("panic: %v\n%s", r, firstLines(string(debug.Stack()), 30))
		}
	}()
	if err := configureAgent(logger, sc.Agent); err != nil {
		res.Error = err.Error()
		return res
	}
	nodes := map[string]Node{}
	for _, n := range sc.Nodes {
		nodes[n.Name] = n
	}
	for _, ep := range sc.Endpoints {
		if _, ok := nodes[ep.Node]; !ok && !ep.Host {
			nodes[ep.Node] = Node{Name: ep.Node} // a node nothing else says about
		}
	}
	if err := checkEndpoints(sc, nodes); err != nil {
		res.Error = err.Error()
		return res
	}
	services, err := newServiceTables(sc.Services)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	policies, parsed := parsePolicies(sc, services, schema)
	res.Policies = policies

	namespaces := map[string]Namespace{}
	for _, ns := range sc.Namespaces {
		namespaces[ns.Name] = ns
	}
	w := &world{
		logger: logger, pods: map[string]*identity.Identity{},
		podPorts: map[identity.NumericIdentity]ciliumTypes.NamedPortMap{},
		nodes:    nodes, agents: map[string]*nodeAgent{}, parsed: parsed,
	}
	ids := newIdentityTable(firstPodIdentity)
	byName := map[string]Endpoint{}
	for _, ep := range sc.Endpoints {
		byName[ep.Name] = ep
		if ep.Host {
			continue
		}
		pi := computePodIdentity(logger, ep, namespaces)
		id := ids.allocate(pi.labels)
		w.pods[ep.Name] = id
		w.podPorts[id.ID] = pi.namedPorts
	}
	for _, ep := range sc.Endpoints {
		a, err := w.agent(ep.Node)
		if err != nil {
			res.Error = err.Error()
			return res
		}
		id := w.identityAt(a, ep)
		res.Identities[ep.Name] = IdentityResult{ID: uint32(id.ID), Labels: labelStrings(id.LabelArray)}
	}
	queries := sc.Queries
	if len(queries) == 0 {
		for _, a := range sc.Endpoints {
			for _, b := range sc.Endpoints {
				queries = append(queries, Query{From: a.Name, To: b.Name, Probes: sc.Probes})
			}
		}
	}
	for _, q := range queries {
		src, ok1 := byName[q.From]
		dst, ok2 := byName[q.To]
		if !ok1 || !ok2 {
			res.Error = fmt.Sprintf("query %s -> %s names an unknown endpoint", q.From, q.To)
			return res
		}
		eg, in, err := w.lookup(src, dst, q.Probes)
		if err != nil {
			res.Error = err.Error()
			return res
		}
		res.Results = append(res.Results, QueryResult{From: q.From, To: q.To, Egress: eg, Ingress: in})
	}
	return res
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
