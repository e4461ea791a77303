"""What Kubernetes refuses, topogen refuses: one hostile input per rule of the API server's
(or Cilium's) validation, for every class of field topogen reads: quantities, label keys
and values, selectors, ports and CIDRs.

A Rule edits one object of a copy of examples/zone-split (plus BASE_FILES: a
NetworkPolicy and a Service, so those kinds are read too). Who refuses the same object:
- "kube-apiserver": tests/live/test_live_api_rules.py creates the edited object with
  dryRun=All on the harness's kube-apiserver v1.36.3 and expects `status` (422 Invalid;
  400 where the object does not even decode) with `field` in the API server's message,
  and the unedited objects created without an error;
- "cilium": tests/hostile/test_api_rules.py sends the edited policy to tools/cilium-oracle
  (Cilium v1.20.2's CRD schema through the API server's own validation code, then the
  agent's parser) and expects it rejected, and the unedited one accepted.
topogen must refuse each with one line naming the file, the object and `says`, exit 2,
and write nothing (tests/hostile/test_api_rules.py).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["ACCEPTED", "BASE_FILES", "RULES", "Rule", "edited", "target"]

NODES = "cluster/nodes.yaml"  # a List: the rule edits items[0], Node gpu-a1
COORD = "workloads/before/coordinator.yaml"  # Deployment ml-demo/trainer-coordinator
NAMESPACE = "workloads/before/namespace.yaml"
POLICIES = "cilium/zone-policies.yaml"  # document 0: CiliumNetworkPolicy allow-intra-zone-a
NETPOL = "cilium/netpol.yaml"
SERVICE = "cilium/service.yaml"

Obj = dict[str, Any]

BASE_FILES: dict[str, Obj] = {
    NETPOL: {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "hostile-np", "namespace": "ml-demo"},
        "spec": {
            "podSelector": {"matchLabels": {"app": "ml-training"}},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [{"podSelector": {}}],
                    "ports": [{"port": 29500, "protocol": "TCP"}, {"port": "rendezvous"}],
                },
                {"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}]},
            ],
        },
    },
    SERVICE: {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "hostile-svc", "namespace": "ml-demo", "labels": {"app": "web"}},
        "spec": {"selector": {"app": "ml-training"}, "ports": [{"port": 29500}]},
    },
}


@dataclass(frozen=True)
class Rule:
    id: str
    file: str
    edit: Callable[[Obj], None]  # on the object (for NODES: the Node gpu-a1)
    says: str  # a fragment of topogen's one line (after the file and the object)
    field: str  # the field the judge names
    source: str  # the rule, where upstream states it
    judge: str = "kube-apiserver"  # or "cilium"
    status: int = 422  # the API server's answer (400: the object does not decode)


def edited(rule: Rule, obj: Obj) -> Obj:
    out = copy.deepcopy(obj)
    rule.edit(out)
    return out


def _at(obj: Obj, *path: str | int) -> Any:
    """The value at `path`, creating maps on the way."""
    for part in path:
        obj = obj[part] if isinstance(part, int) else obj.setdefault(part, {})
    return obj


def _put(*path: str | int, value: Any) -> Callable[[Obj], None]:
    def edit(obj: Obj) -> None:
        _at(obj, *path[:-1])[path[-1]] = value

    return edit


_POD = ("spec", "template", "spec")
_MAIN = (*_POD, "containers", 0)


def _resources(requests: dict[str, str], limits: dict[str, str] | None = None) -> Any:
    res = {"requests": {"cpu": "2", "memory": "4Gi", **requests}}
    if limits is not None:
        res["limits"] = limits
    return _put(*_MAIN, "resources", value=res)


def _affinity(kind: str, term: Obj, key: str = "nodeSelectorTerms") -> Any:
    if kind == "nodeAffinity":
        required: Any = {key: [term]} if term else {key: []}
    else:
        required = [term]
    return _put(
        *_POD, "affinity", kind, "requiredDuringSchedulingIgnoredDuringExecution", value=required
    )


def _np_port(port: Obj) -> Any:
    return _put("spec", "ingress", 0, "ports", value=[port])


def _np_peer(peer: Obj) -> Any:
    return _put("spec", "ingress", 1, "from", value=[peer])


def _cnp_peer(section: str, item: Obj) -> Any:
    def edit(obj: Obj) -> None:
        obj["spec"].setdefault(section, []).append(item)

    return edit


_V = "k8s.io/kubernetes pkg/apis/core/validation"
_NETV = "k8s.io/kubernetes pkg/apis/networking/validation"
_META = "k8s.io/apimachinery pkg/apis/meta/v1/validation ValidateLabelSelector"
_CILIUM = "cilium v1.20.2 pkg/policy/api"
_CRD = "cilium v1.20.2 CRD ciliumnetworkpolicies.yaml"
_GPU = "nvidia.com/gpu"
_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
_R = Rule

# fmt: off
RULES: list[Rule] = [
    # --- quantities ----------------------------------------------------------------------
    _R("node-allocatable-negative", NODES, _put("status", "allocatable", "cpu", value="-1"),
       "status.allocatable.cpu: must be greater than or equal to 0", "status.allocatable.cpu",
       f"{_V} ValidateNodeResources, ValidateNonnegativeQuantity"),
    _R("node-allocatable-gpu-negative", NODES, _put("status", "allocatable", _GPU, value="-2"),
       "status.allocatable.nvidia.com/gpu: must be greater than or equal to 0",
       "status.allocatable.nvidia.com/gpu", f"{_V} ValidateResourceQuantityValue"),
    _R("node-allocatable-gpu-fraction", NODES,
       _put("status", "allocatable", _GPU, value="1500m"),
       "status.allocatable.nvidia.com/gpu: must be an integer",
       "status.allocatable.nvidia.com/gpu", f"{_V} ValidateResourceQuantityValue (extended)"),
    _R("node-allocatable-pods-fraction", NODES,
       _put("status", "allocatable", "pods", value="110.5"),
       "status.allocatable.pods: must be an integer", "status.allocatable.pods",
       f"{_V} ValidateResourceQuantityValue (integerResources)"),
    _R("pod-request-negative", COORD, _resources({"cpu": "-2"}),
       "resources.requests.cpu: must be greater than or equal to 0", "resources.requests[cpu]",
       f"{_V} validateResourceRequirements"),
    _R("pod-gpu-negative", COORD, _resources({_GPU: "-1"}, {_GPU: "-1"}),
       "resources.limits.nvidia.com/gpu: must be greater than or equal to 0",
       "resources.limits[nvidia.com/gpu]", f"{_V} ValidateResourceQuantityValue"),
    _R("pod-gpu-fraction", COORD, _resources({_GPU: "0.5"}, {_GPU: "0.5"}),
       "nvidia.com/gpu: must be an integer", "resources.limits[nvidia.com/gpu]",
       f"{_V} ValidateResourceQuantityValue (extended)"),
    _R("pod-gpu-without-limit", COORD, _resources({_GPU: "1"}),
       "needs limits.nvidia.com/gpu", "resources.limits",
       f"{_V} validateResourceRequirements (IsOvercommitAllowed)"),
    _R("pod-gpu-request-below-limit", COORD, _resources({_GPU: "1"}, {_GPU: "2"}),
       "must be equal to nvidia.com/gpu limit of 2", "resources.requests",
       f"{_V} validateResourceRequirements (IsOvercommitAllowed)"),
    _R("pod-cpu-request-over-limit", COORD, _resources({"cpu": "2"}, {"cpu": "1"}),
       "must be less than or equal to cpu limit of 1", "resources.requests",
       f"{_V} validateResourceRequirements"),
    _R("pod-resource-unprefixed", COORD, _resources({"gpu": "1"}),
       "resource name 'gpu' must be a standard resource for containers",
       "resources.requests[gpu]", f"{_V} validateContainerResourceName"),
    _R("pod-resource-requests-prefix", COORD,
       _resources({"requests.example.com/gpu": "1"}, {"requests.example.com/gpu": "1"}),
       "doesn't follow extended resource name standard",
       "resources.limits[requests.example.com/gpu]", f"{_V} validateContainerResourceName"),
    _R("pod-resource-bad-name", COORD, _resources({"example.com/gpu!": "1"}),
       "resource name 'example.com/gpu!' is not a qualified name",
       "resources.requests[example.com/gpu!]", f"{_V} validateResourceName"),
    _R("pod-init-request-negative", COORD,
       _put(*_POD, "initContainers", value=[{"name": "init", "image": "registry.example/i:1",
            "resources": {"requests": {"memory": "-1Gi"}}}]),
       "initContainers[0].resources.requests.memory: must be greater than or equal to 0",
       "initContainers[0].resources.requests[memory]", f"{_V} validateResourceRequirements"),
    # --- ports -------------------------------------------------------------------------------
    _R("pod-port-name-invalid", COORD,
       _put(*_MAIN, "ports", value=[{"name": "Rendezvous", "containerPort": 29500}]),
       "ports[0]: must contain only alpha-numeric characters", "ports[0].name",
       "k8s.io/apimachinery IsValidPortName (validateContainerPorts)"),
    _R("pod-port-name-duplicate", COORD,
       _put(*_MAIN, "ports", value=[{"name": "rdzv", "containerPort": 29500},
                                     {"name": "rdzv", "containerPort": 29501}]),
       "ports[1]: duplicate port name 'rdzv'", "ports[1].name", f"{_V} validateContainerPorts"),
    _R("pod-port-protocol-lowercase", COORD,
       _put(*_MAIN, "ports", value=[{"containerPort": 29500, "protocol": "tcp"}]),
       "ports[0]: protocol 'tcp' is not one of TCP, UDP, SCTP", "ports[0].protocol",
       f"{_V} validateContainerPorts"),
    _R("np-port-zero", NETPOL, _np_port({"port": 0}),
       "ports[0]: port 0: must be between 1 and 65535, inclusive", "ports[0].port",
       f"{_NETV} ValidateNetworkPolicyPort (IsValidPortNum)"),
    _R("np-port-number-as-string", NETPOL, _np_port({"port": "80"}),
       "port '80' is no port name: must contain at least one letter", "ports[0].port",
       f"{_NETV} ValidateNetworkPolicyPort (IsValidPortName)"),
    _R("np-port-name-invalid", NETPOL, _np_port({"port": "Web_Port"}),
       "port 'Web_Port' is no port name", "ports[0].port",
       f"{_NETV} ValidateNetworkPolicyPort (IsValidPortName)"),
    _R("np-endport-without-port", NETPOL, _np_port({"endPort": 90}),
       "endPort may not be specified when `port` is not specified", "ports[0].endPort",
       f"{_NETV} ValidateNetworkPolicyPort"),
    _R("np-endport-named-port", NETPOL, _np_port({"port": "http", "endPort": 90}),
       "endPort may not be specified when `port` is non-numeric", "ports[0].endPort",
       f"{_NETV} ValidateNetworkPolicyPort"),
    _R("np-endport-below-port", NETPOL, _np_port({"port": 90, "endPort": 80}),
       "endPort 80: must be between `port` (90) and 65535", "ports[0].endPort",
       f"{_NETV} ValidateNetworkPolicyPort"),
    _R("np-protocol-lowercase", NETPOL, _np_port({"port": 80, "protocol": "tcp"}),
       "ports[0].protocol: 'tcp' is not one of TCP, UDP, SCTP", "ports[0].protocol",
       f"{_NETV} ValidateNetworkPolicyPort"),
    _R("np-protocol-icmp", NETPOL, _np_port({"protocol": "ICMP"}),
       "ports[0].protocol: 'ICMP' is not one of TCP, UDP, SCTP", "ports[0].protocol",
       f"{_NETV} ValidateNetworkPolicyPort"),
    # --- CIDRs -------------------------------------------------------------------------------
    _R("node-podcidr-invalid", NODES, _put("spec", "podCIDRs", value=["10.244.0.0/33"]),
       "spec.podCIDRs[0] '10.244.0.0/33': must be a valid CIDR value", "spec.podCIDRs[0]",
       "k8s.io/apimachinery IsValidCIDRForLegacyField"),
    _R("node-podcidr-host-bits", NODES, _put("spec", "podCIDRs", value=["10.244.0.1/24"]),
       "must not have bits set beyond the prefix length", "spec.podCIDRs[0]",
       "k8s.io/apimachinery IsValidCIDRForLegacyField (StrictIPCIDRValidation, on in 1.36)"),
    _R("node-podcidr-leading-zero", NODES, _put("spec", "podCIDRs", value=["010.244.0.0/24"]),
       "must not have leading 0s in IP or prefix length", "spec.podCIDRs[0]",
       "k8s.io/apimachinery IsValidCIDRForLegacyField (StrictIPCIDRValidation, on in 1.36)"),
    _R("node-podcidrs-one-family", NODES,
       _put("spec", "podCIDRs", value=["10.244.0.0/24", "10.245.0.0/24"]),
       "may specify no more than one CIDR for each IP family", "spec.podCIDRs",
       f"{_V} ValidateNode"),
    _R("np-ipblock-invalid", NETPOL, _np_peer({"ipBlock": {"cidr": "10.0.0.0/33"}}),
       "ipBlock.cidr '10.0.0.0/33': must be a valid CIDR value", "ipBlock.cidr",
       f"{_NETV} ValidateIPBlock"),
    _R("np-ipblock-host-bits", NETPOL, _np_peer({"ipBlock": {"cidr": "10.0.0.1/8"}}),
       "must not have bits set beyond the prefix length", "ipBlock.cidr",
       f"{_NETV} ValidateIPBlock (StrictIPCIDRValidation, on in 1.36)"),
    _R("np-ipblock-leading-zero", NETPOL, _np_peer({"ipBlock": {"cidr": "10.0.0.0/08"}}),
       "must not have leading 0s in IP or prefix length", "ipBlock.cidr",
       f"{_NETV} ValidateIPBlock (StrictIPCIDRValidation, on in 1.36)"),
    _R("np-ipblock-ipv4-mapped", NETPOL,
       _np_peer({"ipBlock": {"cidr": "::ffff:10.0.0.0/104"}}),
       "must not have an IPv4-mapped IPv6 address", "ipBlock.cidr",
       f"{_NETV} ValidateIPBlock (StrictIPCIDRValidation, on in 1.36)"),
    _R("np-ipblock-except-outside", NETPOL,
       _np_peer({"ipBlock": {"cidr": "10.0.0.0/8", "except": ["192.168.0.0/16"]}}),
       "ipBlock.except[0] '192.168.0.0/16': must be a strict subset of `cidr`",
       "ipBlock.except[0]", f"{_NETV} ValidateIPBlock"),
    _R("np-ipblock-except-whole", NETPOL,
       _np_peer({"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.0.0.0/8"]}}),
       "must be a strict subset of `cidr`", "ipBlock.except[0]", f"{_NETV} ValidateIPBlock"),
    _R("np-ipblock-and-pod-selector", NETPOL,
       _np_peer({"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}),
       "may not specify both ipBlock and another peer", "from[0]",
       f"{_NETV} ValidateNetworkPolicyPeer"),
    _R("np-ipblock-no-cidr", NETPOL, _np_peer({"ipBlock": {"except": ["10.1.0.0/16"]}}),
       "ipBlock.cidr: Required value", "ipBlock.cidr", f"{_NETV} ValidateIPBlock"),
    # --- labels and selectors ------------------------------------------------------------------
    _R("node-label-value-float", NODES, _put("metadata", "labels", "gpu", value=1.5),
       "metadata.labels.gpu must be a string, got float 1.5", "metadata.labels",
       "core/v1 ObjectMeta.labels: map[string]string", status=400),
    _R("pod-label-value-float", COORD,
       _put(*_POD[:-1], "metadata", "labels", "rank", value=0.5),
       "metadata.labels.rank must be a string, got float 0.5", "metadata.labels",
       "core/v1 ObjectMeta.labels: map[string]string", status=400),
    _R("node-taint-duplicate", NODES,
       _put("spec", "taints", value=[_TAINT, {**_TAINT, "value": "other"}]),
       "taints must be unique by key and effect pair", "taints[1]",
       f"{_V} validateNodeTaints"),
    _R("node-taint-empty-key", NODES, _put("spec", "taints", value=[{**_TAINT, "key": ""}]),
       "spec.taints[0].key: label key '' is not a qualified name", "taints[0].key",
       f"{_V} validateNodeTaints (ValidateLabelName)"),
    _R("pod-toleration-exists-with-value", COORD,
       _put(*_POD, "tolerations", value=[{"key": "k", "operator": "Exists", "value": "v"}]),
       "value must be empty when `operator` is 'Exists'", "tolerations[0].operator",
       f"{_V} ValidateTolerations"),
    _R("pod-toleration-empty-key-equal", COORD,
       _put(*_POD, "tolerations", value=[{"operator": "Equal", "effect": "NoSchedule"}]),
       "operator must be Exists when `key` is empty", "tolerations[0].operator",
       f"{_V} ValidateTolerations"),
    _R("pod-toleration-seconds-noschedule", COORD,
       _put(*_POD, "tolerations", value=[{"key": "k", "operator": "Exists",
            "effect": "NoSchedule", "tolerationSeconds": 30}]),
       "effect must be 'NoExecute' when `tolerationSeconds` is set", "tolerations[0].effect",
       f"{_V} ValidateTolerations"),
    _R("pod-node-affinity-no-terms", COORD, _affinity("nodeAffinity", {}),
       "must have at least one node selector term", "nodeSelectorTerms",
       f"{_V} ValidateNodeSelector"),
    _R("pod-node-affinity-key-invalid", COORD,
       _affinity("nodeAffinity", {"matchExpressions": [
           {"key": "bad key", "operator": "In", "values": ["a"]}]}),
       "label key 'bad key' is not a qualified name", "matchExpressions[0].key",
       f"{_V} ValidateNodeSelectorRequirement"),
    _R("pod-node-affinity-value-invalid", COORD,
       _affinity("nodeAffinity", {"matchExpressions": [
           {"key": "pool", "operator": "In", "values": ["a b"]}]}),
       "label value 'a b' is not at most 63", "matchExpressions[0].values[0]",
       f"{_V} ValidateNodeSelectorRequirement"),
    _R("pod-node-affinity-fields-two-values", COORD,
       _affinity("nodeAffinity", {"matchFields": [
           {"key": "metadata.name", "operator": "In", "values": ["gpu-a1", "gpu-a2"]}]}),
       "supports only key metadata.name with operator In or NotIn and one value",
       "matchFields[0].values", f"{_V} ValidateNodeFieldSelectorRequirement"),
    _R("pod-pod-affinity-topology-key-invalid", COORD,
       _affinity("podAffinity", {"labelSelector": {"matchLabels": {"app": "x"}},
                                 "topologyKey": "bad key"}),
       "topologyKey: label key 'bad key' is not a qualified name", "topologyKey",
       f"{_V} validatePodAffinityTerm"),
    _R("pod-pod-affinity-selector-key-invalid", COORD,
       _affinity("podAffinity", {"labelSelector": {"matchLabels": {"bad key": "x"}},
                                 "topologyKey": "topology.kubernetes.io/zone"}),
       "labelSelector.matchLabels: label key 'bad key' is not a qualified name",
       "labelSelector.matchLabels", _META),
    _R("pod-pod-affinity-selector-value-invalid", COORD,
       _affinity("podAffinity", {"labelSelector": {"matchExpressions": [
           {"key": "app", "operator": "In", "values": ["a b"]}]},
           "topologyKey": "topology.kubernetes.io/zone"}),
       "label value 'a b' is not at most 63", "matchExpressions[0].values[0]", _META),
    _R("pod-pod-affinity-namespace-invalid", COORD,
       _affinity("podAffinity", {"labelSelector": {"matchLabels": {"app": "x"}},
                                 "namespaces": ["Bad_NS"],
                                 "topologyKey": "topology.kubernetes.io/zone"}),
       "namespaces: 'Bad_NS' is not a DNS label", "namespace",
       f"{_V} validatePodAffinityTerm (ValidateNamespaceName)"),
    _R("pod-node-selector-key-invalid", COORD,
       _put(*_POD, "nodeSelector", value={"bad key": "x"}),
       "nodeSelector: label key 'bad key' is not a qualified name", "nodeSelector",
       f"{_V} ValidatePodSpec (ValidateLabels)"),
    _R("np-pod-selector-key-invalid", NETPOL,
       _put("spec", "podSelector", value={"matchLabels": {"bad key": "x"}}),
       "spec.podSelector.matchLabels: label key 'bad key' is not a qualified name",
       "spec.podSelector.matchLabels", _META),
    _R("np-pod-selector-value-invalid", NETPOL,
       _put("spec", "podSelector", value={"matchExpressions": [
           {"key": "app", "operator": "NotIn", "values": ["a:b"]}]}),
       "label value 'a:b'", "spec.podSelector.matchExpressions[0].values[0]", _META),
    _R("np-namespace-selector-key-invalid", NETPOL,
       _np_peer({"namespaceSelector": {"matchExpressions": [
           {"key": "team/", "operator": "Exists"}]}}),
       "namespaceSelector.matchExpressions[0]: label key 'team/'",
       "namespaceSelector.matchExpressions[0].key", _META),
    _R("ns-label-value-invalid", NAMESPACE, _put("metadata", "labels", "team", value="a b"),
       "metadata.labels.team: label value 'a b'", "metadata.labels",
       "k8s.io/apimachinery ValidateObjectMeta (ValidateLabels)"),
    _R("svc-selector-key-invalid", SERVICE, _put("spec", "selector", "bad key", value="x"),
       "spec.selector: label key 'bad key' is not a qualified name", "spec.selector",
       f"{_V} ValidateService (ValidateLabels)"),
    _R("svc-selector-value-invalid", SERVICE, _put("spec", "selector", "app", value="a b"),
       "spec.selector.app: label value 'a b'", "spec.selector",
       f"{_V} ValidateService (ValidateLabels)"),
    _R("svc-label-key-invalid", SERVICE, _put("metadata", "labels", "-bad", value="x"),
       "metadata.labels: label key '-bad' is not a qualified name", "metadata.labels",
       "k8s.io/apimachinery ValidateObjectMeta (ValidateLabels)"),
    # --- Cilium: the CRD schema and the agent's parser --------------------------------------
    _R("cnp-selector-key-invalid", POLICIES,
       _put("spec", "endpointSelector", value={"matchLabels": {"bad key": "zone-a"}}),
       "spec.endpointSelector.matchLabels: label key 'bad key' is not a qualified name",
       "matchLabels", f"{_CILIUM} EndpointSelector.Sanitize", "cilium"),
    _R("cnp-selector-key-two-sources", POLICIES,
       _put("spec", "endpointSelector", value={"matchLabels": {"k8s:a:zone": "zone-a"}}),
       "Cilium takes one ':'", "only support ':'",
       "cilium v1.20.2 pkg/labels IsValidCiliumLabelKey", "cilium"),
    _R("cnp-selector-source-invalid", POLICIES,
       _put("spec", "endpointSelector", value={"matchLabels": {"k-8s:zone": "zone-a"}}),
       "its source before ':' must be letters and digits", "label source",
       "cilium v1.20.2 pkg/labels IsValidCiliumLabelKey", "cilium"),
    _R("cnp-selector-value-invalid", POLICIES,
       _put("spec", "ingress", 0, "fromEndpoints", 0, "matchLabels", "zone", value="zone a"),
       "label value 'zone a'", "matchLabels.zone", f"{_CRD} (matchLabels pattern)", "cilium"),
    _R("cnp-expression-value-invalid", POLICIES,
       _put("spec", "egress", 0, "toEndpoints", value=[{"matchExpressions": [
           {"key": "zone", "operator": "In", "values": ["a b"]}]}]),
       "label value 'a b'", "matchExpressions[0].values[0]", f"{_CILIUM} EndpointSelector.Sanitize",
       "cilium"),
    _R("cnp-fromcidr-invalid", POLICIES, _cnp_peer("ingress", {"fromCIDR": ["10.0.0.0/33"]}),
       "fromCIDR[0] '10.0.0.0/33' is not a CIDR", "fromCIDR[0]", f"{_CRD} (format: cidr)",
       "cilium"),
    _R("cnp-tocidr-bare-ip", POLICIES, _cnp_peer("egress", {"toCIDR": ["10.0.0.1"]}),
       "toCIDR[0] '10.0.0.1' is not a CIDR", "toCIDR[0]", f"{_CRD} (format: cidr)", "cilium"),
    _R("cnp-tocidr-leading-zero", POLICIES, _cnp_peer("egress", {"toCIDR": ["010.0.0.0/8"]}),
       "has leading zeros", "unable to parse CIDR", f"{_CILIUM} CIDR.sanitize (netip.ParsePrefix)",
       "cilium"),
    _R("cnp-cidrset-no-cidr", POLICIES,
       _cnp_peer("egress", {"toCIDRSet": [{"except": ["10.1.0.0/16"]}]}),
       "needs exactly one of cidr, cidrGroupRef and cidrGroupSelector", "toCIDRSet[0]",
       f"{_CRD} (CIDRRule oneOf)", "cilium"),
    _R("cnp-cidrset-two-of", POLICIES,
       _cnp_peer("egress", {"toCIDRSet": [{"cidr": "10.0.0.0/8", "cidrGroupRef": "lab"}]}),
       "needs exactly one of cidr, cidrGroupRef and cidrGroupSelector", "toCIDRSet[0]",
       f"{_CRD} (CIDRRule oneOf)", "cilium"),
    _R("cnp-cidrset-except-outside", POLICIES,
       _cnp_peer("egress", {"toCIDRSet": [{"cidr": "10.0.0.0/8", "except": ["192.168.0.0/16"]}]}),
       "does not contain exclude CIDR prefix 192.168.0.0/16", "does not contain exclude",
       f"{_CILIUM} CIDRRule.sanitize", "cilium"),
]
# fmt: on

# Odd inputs the judges accept: topogen accepts them too (exit 0)
# fmt: off
ACCEPTED: list[Rule] = [
    _R("cnp-tocidr-host-bits", POLICIES, _cnp_peer("egress", {"toCIDR": ["10.0.0.1/8"]}),
       "", "", f"{_CRD} (format: cidr: ParseCIDRSloppy), {_CILIUM} netip.ParsePrefix",
       "cilium"),
    _R("cnp-cidrset-except-inside", POLICIES,
       _cnp_peer("egress", {"toCIDRSet": [{"cidr": "10.0.0.0/8", "except": ["10.1.0.5/16"]}]}),
       "", "", f"{_CILIUM} CIDRRule.sanitize", "cilium"),
    _R("node-allocatable-gpu-whole-milli", NODES,
       _put("status", "allocatable", _GPU, value="2000m"), "", "",
       f"{_V} ValidateResourceQuantityValue"),
    _R("pod-gpu-request-equals-limit", COORD, _resources({_GPU: "1"}, {_GPU: "1"}), "", "",
       f"{_V} validateResourceRequirements"),
    _R("np-ipv6-block", NETPOL, _np_peer({"ipBlock": {"cidr": "2001:db8::/32",
                                                      "except": ["2001:db8:1::/48"]}}),
       "", "", f"{_NETV} ValidateIPBlock"),
    _R("pod-toleration-empty-key-exists", COORD,
       _put(*_POD, "tolerations", value=[{"operator": "Exists"}]), "", "",
       f"{_V} ValidateTolerations"),
]
# fmt: on


def target(rule: Rule, docs: list[Obj]) -> Obj:
    """The object a rule edits among the documents of its file."""
    return docs[0]["items"][0] if rule.file == NODES else docs[0]
