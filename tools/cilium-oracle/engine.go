package main

import (
	"fmt"
	"log/slog"
	"math"

	"github.com/cilium/cilium/pkg/crypto/certificatemanager"
	"github.com/cilium/cilium/pkg/endpoint/regeneration"
	envoypolicy "github.com/cilium/cilium/pkg/envoy/policy"
	"github.com/cilium/cilium/pkg/identity"
	"github.com/cilium/cilium/pkg/identity/identitymanager"
	"github.com/cilium/cilium/pkg/policy"
	"github.com/cilium/cilium/pkg/policy/types"
	testcertificatemanager "github.com/cilium/cilium/pkg/testutils/certificatemanager"
	testidentity "github.com/cilium/cilium/pkg/testutils/identity"
	testpolicy "github.com/cilium/cilium/pkg/testutils/policy"
	ciliumTypes "github.com/cilium/cilium/pkg/types"
	"github.com/cilium/cilium/pkg/u8proto"
)

// nodeAgent is the cilium-agent of one node: its own policy repository and
// selector cache, in which identity 1 (reserved:host) is this node's host and
// every other node is a remote node.
type nodeAgent struct {
	node     string
	repo     *policy.Repository
	host     *identity.Identity
	remote   map[string]*identity.Identity // other nodes' identities
	policies map[identity.NumericIdentity]*policy.EndpointPolicy
}

// endpointOwner is the PolicyOwner of a distilled policy, as in
// pkg/policy/lookup.go (endpointInfo): ingress named ports are the
// endpoint's own.
type endpointOwner struct {
	id         uint64
	namedPorts ciliumTypes.NamedPortMap
	host       bool
}

func (o *endpointOwner) GetID() uint64 { return o.id }
func (o *endpointOwner) GetIngressNamedPort(name string, proto u8proto.U8proto) uint16 {
	port, err := o.namedPorts.GetNamedPort(name, proto)
	if err != nil {
		return 0
	}
	return port
}
func (o *endpointOwner) PolicyDebug(string, ...any)                  {}
func (o *endpointOwner) IsHost() bool                                { return o.host }
func (o *endpointOwner) PreviousMapStateSizes() policy.MapStateSizes { return policy.MapStateSizes{} }
func (o *endpointOwner) RegenerateIfAlive(*regeneration.ExternalRegenerationMetadata) <-chan bool {
	ch := make(chan bool)
	close(ch)
	return ch
}

// namedPorts is the ipcache's view of named ports by identity, which egress
// named ports resolve against.
type namedPorts struct{ m ciliumTypes.NamedPortMultiMap }

func (n namedPorts) GetNamedPorts() ciliumTypes.NamedPortMultiMap { return n.m }

type world struct {
	logger   *slog.Logger
	pods     map[string]*identity.Identity // endpoint name -> identity
	podPorts map[identity.NumericIdentity]ciliumTypes.NamedPortMap
	nodes    map[string]Node
	agents   map[string]*nodeAgent
	parsed   []parsedPolicy
}

func (w *world) agent(node string) (*nodeAgent, error) {
	if a, ok := w.agents[node]; ok {
		return a, nil
	}
	idmap := identity.IdentityMap{}
	identity.IterateReservedIdentities(func(ni identity.NumericIdentity, id *identity.Identity) {
		idmap[ni] = id.LabelArray
	})
	host := identity.NewIdentityFromLabelArray(identity.ReservedIdentityHost, hostLabels(w.nodes[node]))
	idmap[host.ID] = host.LabelArray
	remote := map[string]*identity.Identity{}
	remoteIDs := newIdentityTable(firstNodeIdentity)
	for name, n := range w.nodes {
		if name == node {
			continue
		}
		id := identity.LookupReservedIdentity(identity.ReservedIdentityRemoteNode)
		if lbls := remoteNodeLabels(n); len(lbls) > 1 {
			id = remoteIDs.allocate(lbls)
		}
		remote[name] = id
		idmap[id.ID] = id.LabelArray
	}
	npm := ciliumTypes.NewNamedPortMultiMap()
	for _, id := range w.pods {
		idmap[id.ID] = id.LabelArray
		npm.Update(id.ID, nil, w.podPorts[id.ID])
	}
	idManager := identitymanager.NewIDManager(w.logger)
	// L7 rules need the Envoy translator (HTTP rules become proxy redirects,
	// which a lookup reports as allowed at L3/L4), as in pkg/policy's tests.
	l7 := envoypolicy.NewEnvoyL7RulesTranslator(w.logger, certificatemanager.NewMockSecretManagerInline())
	repo := policy.NewPolicyRepository(w.logger, idmap, &testcertificatemanager.Fake{}, l7, idManager,
		testpolicy.NewPolicyMetricsNoop())
	repo.GetSelectorCache().SetLocalIdentityNotifier(testidentity.NewDummyIdentityNotifier())
	repo.SetNamedPortsGetter(namedPorts{npm})
	repo.UpdateIdentities(idmap, nil)
	for _, p := range w.parsed {
		// each agent imports the same objects (entries are copied per rule)
		repo.ReplaceByResource(clonePolicyEntries(p.entries), p.resource)
	}
	a := &nodeAgent{node: node, repo: repo, host: host, remote: remote,
		policies: map[identity.NumericIdentity]*policy.EndpointPolicy{}}
	w.agents[node] = a
	return a, nil
}

func clonePolicyEntries(in types.PolicyEntries) types.PolicyEntries {
	out := make(types.PolicyEntries, len(in))
	for i, e := range in {
		c := *e
		out[i] = &c
	}
	return out
}

// identityAt is the identity of endpoint ep as the agent of `node` sees it.
func (w *world) identityAt(a *nodeAgent, ep Endpoint) *identity.Identity {
	if !ep.Host {
		return w.pods[ep.Name]
	}
	if ep.Node == a.node {
		return a.host
	}
	return a.remote[ep.Node]
}

// endpointPolicy resolves and distills the policy of `subject` on its agent,
// once per identity, the way policy.LookupFlow does for each flow.
func (w *world) endpointPolicy(a *nodeAgent, ep Endpoint) (*policy.EndpointPolicy, *identity.Identity, error) {
	id := w.identityAt(a, ep)
	if epp, ok := a.policies[id.ID]; ok {
		return epp, id, nil
	}
	sp, _, err := a.repo.ComputeSelectorPolicy(id)
	if err != nil {
		return nil, nil, fmt.Errorf("resolving the policy of %s: %w", ep.Name, err)
	}
	owner := &endpointOwner{id: uint64(id.ID), namedPorts: w.podPorts[id.ID], host: ep.Host}
	redirects := map[string]uint16{policy.FallbackRedirectID: math.MaxUint16}
	epp := sp.DistillPolicy(w.logger, owner, redirects)
	epp.Ready()
	epp.Detach(w.logger)
	sp.Supersede()
	a.policies[id.ID] = epp
	return epp, id, nil
}

// lookup answers one direction of src -> dst for each probe, as
// policy.LookupFlow does: the sender's egress entry for the receiver's
// identity and the receiver's ingress entry for the sender's.
func (w *world) lookup(src, dst Endpoint, probes []Probe) (string, string, error) {
	srcAgent, err := w.agent(src.Node)
	if err != nil {
		return "", "", err
	}
	dstAgent, err := w.agent(dst.Node)
	if err != nil {
		return "", "", err
	}
	egressPol, _, err := w.endpointPolicy(srcAgent, src)
	if err != nil {
		return "", "", err
	}
	ingressPol, _, err := w.endpointPolicy(dstAgent, dst)
	if err != nil {
		return "", "", err
	}
	dstSeen := w.identityAt(srcAgent, dst)
	srcSeen := w.identityAt(dstAgent, src)
	egress := make([]byte, len(probes))
	ingress := make([]byte, len(probes))
	for i, p := range probes {
		proto, err := u8proto.ParseProtocol(p.Protocol)
		if err != nil || p.Port < 1 || p.Port > 65535 {
			return "", "", fmt.Errorf("probe %s/%d is not a protocol and port", p.Protocol, p.Port)
		}
		port := uint16(p.Port)
		e, _, _ := egressPol.Lookup(policy.EgressKey().WithIdentity(dstSeen.ID).WithPortProto(proto, port))
		egress[i] = verdictByte(e.IsDeny())
		in, _, _ := ingressPol.Lookup(policy.IngressKey().WithIdentity(srcSeen.ID).WithPortProto(proto, port))
		ingress[i] = verdictByte(in.IsDeny())
	}
	return string(egress), string(ingress), nil
}

func verdictByte(deny bool) byte {
	if deny {
		return 'D'
	}
	return 'A'
}
