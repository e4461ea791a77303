package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"

	"github.com/cilium/statedb"

	cmtypes "github.com/cilium/cilium/pkg/clustermesh/types"
	ipcacheTypes "github.com/cilium/cilium/pkg/ipcache/types"
	"github.com/cilium/cilium/pkg/k8s"
	cilium_v2 "github.com/cilium/cilium/pkg/k8s/apis/cilium.io/v2"
	slim_networkingv1 "github.com/cilium/cilium/pkg/k8s/slim/k8s/api/networking/v1"
	k8sTypes "github.com/cilium/cilium/pkg/k8s/types"
	"github.com/cilium/cilium/pkg/labels"
	"github.com/cilium/cilium/pkg/loadbalancer"
	"github.com/cilium/cilium/pkg/option"
	policyK8s "github.com/cilium/cilium/pkg/policy/k8s"
	policytypes "github.com/cilium/cilium/pkg/policy/types"
	policyutils "github.com/cilium/cilium/pkg/policy/utils"
	"github.com/cilium/cilium/pkg/source"
)

// parsedPolicy is one object as cilium-agent imports it: the policy entries
// its watcher hands to the repository, under the watcher's resource ID.
type parsedPolicy struct {
	resource ipcacheTypes.ResourceID
	entries  policytypes.PolicyEntries
}

type objectHead struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// warnCollector keeps the warnings Cilium logs while parsing one object
// (e.g. "illegal namespace match in EndpointSelector ... removing").
type warnCollector struct {
	mu    sync.Mutex
	lines []string
}

func (w *warnCollector) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnCollector) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	w.mu.Lock()
	w.lines = append(w.lines, b.String())
	w.mu.Unlock()
	return nil
}
func (w *warnCollector) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnCollector) WithGroup(string) slog.Handler      { return w }

// parsePolicies decodes and parses every object of a scenario. An object
// Cilium rejects gets its error and contributes nothing (the agent skips it).
func parsePolicies(sc *Scenario, services *serviceTables, schema *admission) ([]PolicyResult, []parsedPolicy) {
	results := make([]PolicyResult, 0, len(sc.Policies))
	var parsed []parsedPolicy
	for _, raw := range sc.Policies {
		var head objectHead
		res := PolicyResult{}
		if err := json.Unmarshal(raw, &head); err != nil {
			res.Error = "not a Kubernetes object: " + err.Error()
			results = append(results, res)
			continue
		}
		res.Kind, res.Name, res.Namespace = head.Kind, head.Metadata.Name, head.Metadata.Namespace
		warns := &warnCollector{}
		logger := slog.New(warns)
		p, err := admitAndParse(logger, head, raw, services, schema)
		res.Warnings = warns.lines
		if err != nil {
			res.Error = err.Error()
		} else {
			res.Entries = len(p.entries)
			parsed = append(parsed, p)
		}
		results = append(results, res)
	}
	return results, parsed
}

// admitAndParse is `kubectl apply` and then the agent: a CNP or CCNP must be
// admitted by the API server (admission.go), then the agent parses it.
func admitAndParse(logger *slog.Logger, head objectHead, raw []byte, services *serviceTables, schema *admission) (parsedPolicy, error) {
	if err := schema.admit(head.Kind, raw); err != nil {
		return parsedPolicy{}, fmt.Errorf("kubectl apply (API server): %w", err)
	}
	p, err := parseObject(logger, head, raw, services)
	if err != nil {
		return parsedPolicy{}, fmt.Errorf("cilium-agent: %w", err)
	}
	return p, nil
}

func parseObject(logger *slog.Logger, head objectHead, raw []byte, services *serviceTables) (parsedPolicy, error) {
	cluster := cmtypes.LocalClusterNameForPolicies(cmtypes.DefaultPolicyConfig, option.Config.ClusterName)
	switch head.Kind {
	case "CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy":
		if head.APIVersion != "cilium.io/v2" {
			return parsedPolicy{}, fmt.Errorf("apiVersion %q: cilium-agent watches cilium.io/v2", head.APIVersion)
		}
		cnp, kind, err := decodeCilium(head, raw)
		if err != nil {
			return parsedPolicy{}, err
		}
		slim := &k8sTypes.SlimCNP{CiliumNetworkPolicy: cnp}
		// policyWatcher.resolveCiliumNetworkPolicyRefs: ToServices are
		// translated (into ToEndpoints / ToCIDRSet) on a copy, then parsed.
		translated := slim.DeepCopy()
		if hasToServices(translated.CiliumNetworkPolicy) {
			policyK8s.ResolveToServices(services.db.ReadTxn(), services.services, services.backends, translated.CiliumNetworkPolicy)
		}
		rules, err := translated.Parse(logger, cluster)
		if err != nil {
			return parsedPolicy{}, err
		}
		return parsedPolicy{
			resource: ipcacheTypes.NewResourceID(kind, cnp.Namespace, cnp.Name),
			entries:  policyutils.RulesToPolicyEntries(rules),
		}, nil
	case "NetworkPolicy":
		if head.APIVersion != "networking.k8s.io/v1" {
			return parsedPolicy{}, fmt.Errorf("apiVersion %q: cilium-agent watches networking.k8s.io/v1", head.APIVersion)
		}
		np := &slim_networkingv1.NetworkPolicy{}
		if err := strictUnmarshal(raw, np); err != nil {
			return parsedPolicy{}, err
		}
		entries, err := k8s.ParseNetworkPolicy(logger, cluster, np)
		if err != nil {
			return parsedPolicy{}, err
		}
		return parsedPolicy{
			resource: ipcacheTypes.NewResourceID(ipcacheTypes.ResourceKindNetpol, np.Namespace, np.Name),
			entries:  entries,
		}, nil
	}
	return parsedPolicy{}, fmt.Errorf("kind %q is not a policy cilium-agent imports", head.Kind)
}

// decodeCilium decodes a CNP or CCNP into the CNP shape the agent's watcher
// builds for both (a CCNP's namespace is empty: it is cluster-scoped, and the
// API server drops metadata.namespace of cluster-scoped objects).
func decodeCilium(head objectHead, raw []byte) (*cilium_v2.CiliumNetworkPolicy, ipcacheTypes.ResourceKind, error) {
	if head.Kind == "CiliumNetworkPolicy" {
		cnp := &cilium_v2.CiliumNetworkPolicy{}
		if err := strictUnmarshal(raw, cnp); err != nil {
			return nil, "", err
		}
		if cnp.Namespace == "" {
			return nil, "", fmt.Errorf("CiliumNetworkPolicy has no namespace (the API server would have set one)")
		}
		return cnp, ipcacheTypes.ResourceKindCNP, nil
	}
	ccnp := &cilium_v2.CiliumClusterwideNetworkPolicy{}
	if err := strictUnmarshal(raw, ccnp); err != nil {
		return nil, "", err
	}
	ccnp.Namespace = ""
	return &cilium_v2.CiliumNetworkPolicy{
		TypeMeta:   ccnp.TypeMeta,
		ObjectMeta: ccnp.ObjectMeta,
		Spec:       ccnp.Spec,
		Specs:      ccnp.Specs,
	}, ipcacheTypes.ResourceKindCCNP, nil
}

// strictUnmarshal decodes like the agent's informers (encoding/json into the
// typed object: unknown fields are dropped, as the API server prunes them;
// a wrong type is an error).
func strictUnmarshal(raw []byte, into any) error {
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	return nil
}

func hasToServices(cnp *cilium_v2.CiliumNetworkPolicy) bool {
	rules := cnp.Specs
	if cnp.Spec != nil {
		rules = append(rules, cnp.Spec)
	}
	for _, r := range rules {
		if r == nil {
			continue
		}
		for _, e := range r.Egress {
			if len(e.ToServices) > 0 {
				return true
			}
		}
	}
	return false
}

// serviceTables are the agent's load-balancer tables (StateDB), which
// ToServices rules are resolved against.
type serviceTables struct {
	db       *statedb.DB
	services statedb.RWTable[*loadbalancer.Service]
	backends statedb.RWTable[*loadbalancer.Backend]
}

func newServiceTables(svcs []Service) (*serviceTables, error) {
	db := statedb.New()
	services, err := loadbalancer.NewServicesTable(loadbalancer.DefaultConfig, db)
	if err != nil {
		return nil, err
	}
	backends, err := loadbalancer.NewBackendsTable(db)
	if err != nil {
		return nil, err
	}
	wtxn := db.WriteTxn(services, backends)
	defer wtxn.Commit()
	for _, s := range svcs {
		name := loadbalancer.NewServiceName(s.Namespace, s.Name)
		if _, _, err := services.Insert(wtxn, &loadbalancer.Service{
			Name:     name,
			Labels:   labels.Map2Labels(s.Labels, labels.LabelSourceK8s),
			Selector: s.Selector,
		}); err != nil {
			return nil, err
		}
		for _, ip := range s.Backends {
			addr, err := netip.ParseAddr(ip)
			if err != nil {
				return nil, fmt.Errorf("service %s/%s backend %q: %w", s.Namespace, s.Name, ip, err)
			}
			be := &loadbalancer.Backend{
				ServiceName: name,
				Address: loadbalancer.NewL3n4Addr(loadbalancer.TCP,
					cmtypes.AddrClusterFrom(addr, 0), 0, loadbalancer.ScopeExternal),
				Source: source.Kubernetes,
			}
			if _, _, err := backends.Insert(wtxn, be); err != nil {
				return nil, err
			}
		}
	}
	return &serviceTables{db: db, services: services, backends: backends}, nil
}
