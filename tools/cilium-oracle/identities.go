package main

import (
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/cilium/cilium/pkg/identity"
	"github.com/cilium/cilium/pkg/k8s"
	k8sConst "github.com/cilium/cilium/pkg/k8s/apis/cilium.io"
	slim_corev1 "github.com/cilium/cilium/pkg/k8s/slim/k8s/api/core/v1"
	slim_metav1 "github.com/cilium/cilium/pkg/k8s/slim/k8s/apis/meta/v1"
	"github.com/cilium/cilium/pkg/labels"
	"github.com/cilium/cilium/pkg/labelsfilter"
	"github.com/cilium/cilium/pkg/option"
	ciliumTypes "github.com/cilium/cilium/pkg/types"
)

// Numeric identities for pods (cluster-local range) and remote nodes.
const (
	firstPodIdentity  = 10000
	firstNodeIdentity = 60000
)

// nsView is what k8s.GetPodMetadata reads of a Namespace.
type nsView struct {
	name   string
	labels map[string]string
}

func (n nsView) GetName() string              { return n.name }
func (n nsView) GetLabels() map[string]string { return n.labels }

// podIdentity is one pod's security identity as cilium-agent computes it for
// a new endpoint (pkg/endpoint/metadata FetchK8sMetadataForEndpointFromPod):
// k8s.GetPodMetadata (pod labels minus Cilium's own, the namespace and its
// labels, service account, cluster), labelsfilter.Filter, then the
// generated named-ports label.
type podIdentity struct {
	labels     labels.LabelArray
	namedPorts ciliumTypes.NamedPortMap
}

func computePodIdentity(logger *slog.Logger, ep Endpoint, namespaces map[string]Namespace) podIdentity {
	ns := namespaces[ep.Namespace]
	nsLabels := map[string]string{}
	for k, v := range ns.Labels {
		nsLabels[k] = v
	}
	// The API server sets this label on every Namespace (NamespaceDefaultLabelName).
	nsLabels["kubernetes.io/metadata.name"] = ep.Namespace
	sa := ep.ServiceAccount
	if sa == "" {
		sa = "default" // the ServiceAccount admission plugin's default
	}
	pod := &slim_corev1.Pod{
		ObjectMeta: slim_metav1.ObjectMeta{Name: ep.Name, Namespace: ep.Namespace, Labels: copyMap(ep.Labels)},
		Spec:       slim_corev1.PodSpec{ServiceAccountName: sa},
	}
	var ports []slim_corev1.ContainerPort
	for _, p := range ep.Ports {
		ports = append(ports, slim_corev1.ContainerPort{
			Name: p.Name, ContainerPort: p.ContainerPort, Protocol: slim_corev1.Protocol(p.Protocol),
		})
	}
	pod.Spec.Containers = []slim_corev1.Container{{Name: "c", Ports: ports}}
	namedPorts, lbls := k8s.GetPodMetadata(logger, nsView{ep.Namespace, nsLabels}, pod)
	idLabels, _ := labelsfilter.Filter(labels.Map2Labels(lbls, labels.LabelSourceK8s))
	for _, l := range k8s.NamedPortsIdentityLabels(namedPorts) {
		idLabels[l.Key] = l
	}
	return podIdentity{labels: idLabels.LabelArray(), namedPorts: namedPorts}
}

// hostLabels is the host endpoint's identity labels (Endpoint.InitWithNodeLabels):
// reserved:host plus the node's labels through the same filter as pods.
func hostLabels(node Node) labels.LabelArray {
	lbls := labels.Labels{}
	lbls.MergeLabels(labels.LabelHost)
	filtered, _ := labelsfilter.Filter(labels.Map2Labels(node.Labels, labels.LabelSourceK8s))
	lbls.MergeLabels(filtered)
	return lbls.LabelArray()
}

// remoteNodeLabels is a remote node's identity labels (node manager
// nodeIdentityLabels): reserved:remote-node, plus with per-node labels
// (--enable-node-selector-labels) its node-source labels and cluster.
func remoteNodeLabels(node Node) labels.LabelArray {
	lbls := labels.NewFrom(labels.LabelRemoteNode)
	if option.Config.PerNodeLabelsEnabled() {
		filtered, _ := labelsfilter.FilterNodeLabels(labels.Map2Labels(node.Labels, labels.LabelSourceNode))
		lbls.MergeLabels(filtered)
		lbls.MergeLabels(labels.Map2Labels(map[string]string{
			k8sConst.PolicyLabelCluster: option.Config.ClusterName,
		}, labels.LabelSourceK8s))
	}
	return lbls.LabelArray()
}

// identityTable allocates numeric identities to label sets, one per set
// (equal labels share an identity, as the allocator does).
type identityTable struct {
	byKey map[string]identity.NumericIdentity
	ids   map[identity.NumericIdentity]*identity.Identity
	next  identity.NumericIdentity
}

func newIdentityTable(first identity.NumericIdentity) *identityTable {
	return &identityTable{
		byKey: map[string]identity.NumericIdentity{},
		ids:   map[identity.NumericIdentity]*identity.Identity{},
		next:  first,
	}
}

func (t *identityTable) allocate(lbls labels.LabelArray) *identity.Identity {
	key := lbls.String()
	if id, ok := t.byKey[key]; ok {
		return t.ids[id]
	}
	id := t.next
	t.next++
	t.byKey[key] = id
	t.ids[id] = identity.NewIdentityFromLabelArray(id, lbls)
	return t.ids[id]
}

func labelStrings(lbls labels.LabelArray) []string {
	out := make([]string, 0, len(lbls))
	for _, l := range lbls {
		out = append(out, l.String())
	}
	sort.Strings(out)
	return out
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func checkEndpoints(sc *Scenario, nodes map[string]Node) error {
	seen := map[string]bool{}
	for _, ep := range sc.Endpoints {
		if ep.Name == "" || seen[ep.Name] {
			return fmt.Errorf("endpoint names must be unique and non-empty (%q)", ep.Name)
		}
		seen[ep.Name] = true
		if ep.Host {
			if _, ok := nodes[ep.Node]; !ok {
				return fmt.Errorf("host endpoint %s: node %q is not in nodes", ep.Name, ep.Node)
			}
		} else if strings.TrimSpace(ep.Namespace) == "" {
			return fmt.Errorf("pod endpoint %s has no namespace", ep.Name)
		}
	}
	return nil
}
