"""The model (shared vocabulary): plain typed objects every stage passes around. No I/O."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from functools import cached_property

__all__ = [
    "ALL_PORTS",
    "KUEUE_TAS_ANNOTATIONS",
    "KUEUE_TAS_GATE",
    "KUEUE_TAS_KEYS",
    "KUEUE_TAS_LABEL",
    "LAST_PLACEMENTS_FILE",
    "NO_ZONE_PREFIX",
    "CiliumSettings",
    "Container",
    "Endpoint",
    "Finding",
    "FindingKind",
    "LabelSelector",
    "LastPlacements",
    "Namespace",
    "Node",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "Peer",
    "PodAffinityTerm",
    "PodTemplate",
    "PolicyRef",
    "PolicyRule",
    "PolicySet",
    "PortRange",
    "Requirement",
    "Role",
    "RunningPod",
    "ScaleUp",
    "Service",
    "Taint",
    "Toleration",
    "Topology",
    "TrainingGroup",
    "Workload",
    "quantity",
]

Labels = Mapping[str, str]


def quantity(q: Fraction | int) -> str:
    """A resource quantity as a number (GPUs, CPUs, bytes): whole, or a short decimal."""
    q = Fraction(q)
    return str(q.numerator) if q.denominator == 1 else f"{float(q):g}"


# Node.zone of a node without the zone label: the prefix, then the node's name (a zone of
# its own, never a candidate domain, never stamped as an identity)
NO_ZONE_PREFIX = "<no-zone>:"
# Kueue's Topology Aware Scheduling (v0.17.0) marks the pods it places: its scheduling gate
# (at creation), a PodSet topology annotation (Kueue adds podset-unconstrained-topology for
# implicit TAS), or, before v0.14, a label; topogen never layers affinity on them.
# topogen.kueue has the rest of Kueue's vocabulary.
KUEUE_TAS_GATE = "kueue.x-k8s.io/topology"
KUEUE_TAS_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
    "kueue.x-k8s.io/podset-slice-required-topology",
)
KUEUE_TAS_LABEL = "kueue.x-k8s.io/tas"
KUEUE_TAS_KEYS = (KUEUE_TAS_LABEL, *KUEUE_TAS_ANNOTATIONS)  # label or annotation keys


@dataclass(frozen=True, order=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"

    def __str__(self) -> str:
        value = f"={self.value}" if self.value else ""
        return f"{self.key}{value}:{self.effect}"


@dataclass(frozen=True, order=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal | Exists
    value: str = ""
    effect: str = ""  # "" matches every effect

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes toleration matching (k8s.io/api/core/v1 ToleratesTaint)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.operator == "Exists":
            return not self.key or self.key == taint.key
        return self.key == taint.key and self.value == taint.value


@dataclass(frozen=True)
class ScaleUp:
    """Marks a node that does not exist yet: one an autoscaler can add (topogen.nodepools,
    analysis/provisioning.py). `cost` is what it counts against its pool's limits;
    `over_limit` says which limits it would exceed (such a node only carries the reason)."""

    pool: str  # the pool's title: `NodePool gpu`, `node group gpu-1a`
    cost: Mapping[str, Fraction] = field(default_factory=dict)
    over_limit: str = ""


@dataclass(frozen=True)
class Node:
    name: str
    labels: Labels
    taints: tuple[Taint, ...] = ()
    allocatable: Mapping[str, Fraction] = field(default_factory=dict)
    unschedulable: bool = False
    pod_cidrs: tuple[str, ...] = ()
    zone: str = ""  # value of the zone label, or NO_ZONE_PREFIX + the node's name
    scale_up: ScaleUp | None = None  # a node an autoscaler can add (none exists yet)


@dataclass(frozen=True)
class Topology:
    """Nodes grouped by zone, read once per cluster."""

    nodes: tuple[Node, ...]
    zone_label: str
    gpu_resources: tuple[str, ...]
    gpu_node_selector: Labels = field(default_factory=dict)

    @cached_property
    def zones(self) -> tuple[str, ...]:
        return tuple(sorted({n.zone for n in self.nodes}))

    def is_gpu_node(self, node: Node) -> bool:
        if any(node.allocatable.get(r, 0) > 0 for r in self.gpu_resources):
            return True
        sel = self.gpu_node_selector
        return bool(sel) and all(node.labels.get(k) == v for k, v in sel.items())


# --- selectors -------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Requirement:
    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class LabelSelector:
    """A Kubernetes/Cilium label selector. Empty selects everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: Labels) -> bool:
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for req in self.match_expressions:
            present = key_present(labels, req.key)
            if req.operator == "In":
                if not present or labels[req.key] not in req.values:
                    return False
            elif req.operator == "NotIn":
                if present and labels[req.key] in req.values:
                    return False
            elif req.operator == "Exists":
                if not present:
                    return False
            elif req.operator == "DoesNotExist":
                if present:
                    return False
            else:  # validated at the source; unknown operators select nothing
                return False
        return True

    def keys(self) -> set[str]:
        return {k for k, _ in self.match_labels} | {r.key for r in self.match_expressions}

    def __str__(self) -> str:
        parts = [f"{k}={v}" for k, v in self.match_labels]
        for r in self.match_expressions:
            vals = ",".join(r.values)
            parts.append(f"{r.key} {r.operator} ({vals})" if r.values else f"{r.key} {r.operator}")
        return "{" + ", ".join(parts) + "}" if parts else "{} (everything)"


def key_present(labels: Labels, key: str) -> bool:
    return key in labels


@dataclass(frozen=True, order=True)
class NodeSelectorRequirement:
    key: str
    operator: str  # In NotIn Exists DoesNotExist Gt Lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Labels) -> bool:
        op, present = self.operator, self.key in labels
        if op == "In":
            return present and labels[self.key] in self.values
        if op == "NotIn":
            return not present or labels[self.key] not in self.values
        if op == "Exists":
            return present
        if op == "DoesNotExist":
            return not present
        if op in ("Gt", "Lt") and present and len(self.values) == 1:
            try:
                have, want = int(labels[self.key]), int(self.values[0])
            except ValueError:
                return False
            return have > want if op == "Gt" else have < want
        return False


@dataclass(frozen=True)
class NodeSelectorTerm:
    """matchExpressions inside a term are ANDed; an empty term matches no node."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()

    def matches(self, labels: Labels) -> bool:
        if not self.match_expressions:
            return False  # Kubernetes: "a null or empty node selector term matches no objects"
        return all(r.matches(labels) for r in self.match_expressions)


@dataclass(frozen=True)
class PodAffinityTerm:
    selector: LabelSelector
    topology_key: str
    namespaces: tuple[str, ...] = ()  # empty: the pod's own namespace
    anti: bool = False


# --- workloads --------------------------------------------------------------


@dataclass(frozen=True)
class Container:
    name: str
    requests: Mapping[str, Fraction] = field(default_factory=dict)
    ports: tuple[tuple[str, int, str], ...] = ()  # (name, port, protocol)


@dataclass(frozen=True)
class PodTemplate:
    labels: Labels
    node_selector: Labels = field(default_factory=dict)
    # None: no required node affinity; otherwise the ORed terms
    node_affinity: tuple[NodeSelectorTerm, ...] | None = None
    tolerations: tuple[Toleration, ...] = ()
    pod_affinity: tuple[PodAffinityTerm, ...] = ()
    requests: Mapping[str, Fraction] = field(default_factory=dict)
    host_network: bool = False
    ports: tuple[tuple[str, int, str], ...] = ()  # named container ports
    annotations: Labels = field(default_factory=dict)
    service_account: str = ""  # spec.serviceAccountName ("": the namespace's default)
    scheduling_gates: tuple[str, ...] = ()  # spec.schedulingGates[].name


@dataclass(frozen=True)
class Workload:
    """One pod template of a manifest (a Deployment has one, a PyTorchJob several)."""

    kind: str
    api_version: str
    namespace: str
    name: str
    replica_name: str  # "" for single-template kinds; else Master/Worker/task name
    replicas: int
    template: PodTemplate
    source: str  # file the object came from
    # where the pod template is in the manifest (JSON pointer parts; () for a Pod); None
    # when it has none (a TrainJob's pods take overrides: operators/) or is not known
    template_at: tuple[str | int, ...] | None = None
    # labels whose value ends in a number that counts up per pod (the replica index);
    # the template holds the first pod's
    indexed: tuple[str, ...] = ()
    late: bool = False  # created only once other pods of its job run: never an anchor
    queue: str = ""  # the object's kueue.x-k8s.io/queue-name label: queued to Kueue

    @property
    def ref(self) -> str:
        suffix = f"[{self.replica_name}]" if self.replica_name else ""
        return f"{self.kind} {self.namespace}/{self.name}{suffix}"


@dataclass(frozen=True)
class Namespace:
    name: str
    labels: Labels


@dataclass(frozen=True)
class Role:
    """One role of a training job: the workloads whose pods play it."""

    name: str  # coordinator | worker
    role_value: str  # value of the profile's role label (master, worker, ...)
    workloads: tuple[Workload, ...]

    @property
    def replicas(self) -> int:
        return sum(w.replicas for w in self.workloads)


@dataclass(frozen=True)
class TrainingGroup:
    """One training job: a coordinator role and worker roles sharing a job name."""

    config_group: str  # name of the group in topogen.yaml
    job: str  # value of the profile's job-name label
    namespace: str
    roles: tuple[Role, ...]
    kueue_managed: bool = False

    @property
    def key(self) -> str:
        return f"{self.config_group}/{self.namespace}/{self.job}"


# --- network policy ----------------------------------------------------------


@dataclass(frozen=True, order=True)
class PortRange:
    protocol: str  # TCP UDP SCTP
    first: int
    last: int
    name: str = ""  # a named port, resolved against the destination

    def __str__(self) -> str:
        if self.name:
            return f"{self.name}/{self.protocol}"
        if self.first == 1 and self.last == 65535:
            return f"{self.protocol}/*"
        port = str(self.first) if self.first == self.last else f"{self.first}-{self.last}"
        return f"{port}/{self.protocol}"


ALL_PORTS: tuple[PortRange, ...] = tuple(PortRange(p, 1, 65535) for p in ("TCP", "UDP", "SCTP"))


@dataclass(frozen=True, order=True)
class PolicyRef:
    kind: str  # CiliumNetworkPolicy | CiliumClusterwideNetworkPolicy | NetworkPolicy
    namespace: str  # "" for cluster-wide
    name: str
    source: str = field(default="", compare=False)

    def __str__(self) -> str:
        short = {
            "CiliumNetworkPolicy": "cnp",
            "CiliumClusterwideNetworkPolicy": "ccnp",
            "NetworkPolicy": "netpol",
        }.get(self.kind, self.kind)
        return f"{short} {self.namespace}/{self.name}" if self.namespace else f"{short} {self.name}"


@dataclass(frozen=True)
class Peer:
    """Who is on the other end of a rule. Exactly one kind of matcher is set.

    kind: endpoints (a selector over identity labels, as Cilium's parser leaves it:
    namespace and cluster requirements folded in), nodes (the same, over remote
    nodes' identities), entities, cidr (never matches pod-to-pod traffic).
    """

    kind: str
    selector: LabelSelector = field(default_factory=LabelSelector)
    entities: tuple[str, ...] = ()
    text: str = ""  # as written, for explanations

    def __str__(self) -> str:
        return self.text or self.kind


@dataclass(frozen=True)
class PolicyRule:
    """One direction of one rule of one policy, normalised.

    subject: endpoints it applies to. For pods: selector over endpoint labels
    (namespace folded in); for hosts (CCNP nodeSelector): selector over node labels.
    """

    policy: PolicyRef
    index: int  # rule index (position in specs) for explanations
    section: str  # ingress | egress | ingressDeny | egressDeny
    item: int  # position of this item in the section
    subject_host: bool
    subject: LabelSelector
    subject_namespace: str | None  # namespaced policies select only their namespace
    peers: tuple[Peer, ...]  # empty: matches nothing (an empty rule)
    ports: tuple[PortRange, ...] | None  # None: all ports
    # what Cilium enforces beyond L3/L4 here (L7 rules, authentication, FQDN ...)
    notes: tuple[str, ...] = ()

    @property
    def direction(self) -> str:
        return "ingress" if self.section.startswith("ingress") else "egress"

    @property
    def deny(self) -> bool:
        return self.section.endswith("Deny")


@dataclass(frozen=True)
class Service:
    """A Kubernetes Service, for toServices rules: its labels and pod selector."""

    namespace: str
    name: str
    labels: Labels
    selector: Labels  # empty: no selector (its endpoints are maintained by hand)


@dataclass(frozen=True)
class Isolation:
    """A rule selection that puts an endpoint in default deny for one direction."""

    policy: PolicyRef
    index: int
    direction: str
    subject_host: bool
    subject: LabelSelector
    subject_namespace: str | None


@dataclass(frozen=True)
class CiliumSettings:
    """The cilium-agent options that change verdicts (topogen.yaml `clusters[].cilium`);
    Cilium's defaults unless the cluster's config says otherwise.

    identity_labels: the agent's `labels` option, verbatim (empty: the default filter;
        topogen.cilium.labelfilter reads it).
    host_firewall: `enable-host-firewall` (host policies, i.e. nodeSelector rules, apply).
    policy_enforcement: `enable-policy`: default | always | never.
    cluster_name: `cluster-name` (the io.cilium.k8s.policy.cluster label, the cluster
        entity); policy-default-local-cluster is on, as by default.
    node_selector_labels: `enable-node-selector-labels` (fromNodes/toNodes are
        accepted, remote nodes carry their labels).
    """

    identity_labels: tuple[str, ...] = ()
    host_firewall: bool = False
    policy_enforcement: str = "default"
    cluster_name: str = "default"
    node_selector_labels: bool = False


@dataclass(frozen=True)
class PolicySet:
    """Every network policy of a cluster, normalised (sources/policies.py)."""

    rules: tuple[PolicyRule, ...]
    isolations: tuple[Isolation, ...]
    policies: tuple[PolicyRef, ...]
    # the agent options the rules were read under (and the verdicts are to use)
    cilium: CiliumSettings = field(default_factory=CiliumSettings)


@dataclass(frozen=True)
class Endpoint:
    """A network identity: a pod (labels incl. namespace) or a host (node labels)."""

    host: bool
    labels: Labels  # pods: identity labels incl. namespace keys; hosts: node labels
    namespace: str = ""
    ports: tuple[tuple[str, int, str], ...] = ()  # named ports it exposes
    node: str = ""  # for hosts: a representative node name

    def describe(self) -> str:
        if self.host:
            return f"host {self.node}"
        return f"pod in {self.namespace}"


# --- findings ---------------------------------------------------------------


class FindingKind(StrEnum):
    HARD_BLOCK = "HARD_BLOCK"
    CROSS_ZONE = "CROSS_ZONE"
    UNSCHEDULABLE = "UNSCHEDULABLE"
    IDENTITY_MISMATCH = "IDENTITY_MISMATCH"
    KUEUE_MANAGED = "KUEUE_MANAGED"
    KUEUE_CONSTRAINED = "KUEUE_CONSTRAINED"
    OK = "OK"

    @property
    def is_problem(self) -> bool:
        return self in PROBLEM_KINDS


PROBLEM_KINDS = frozenset(
    {
        FindingKind.HARD_BLOCK,
        FindingKind.CROSS_ZONE,
        FindingKind.UNSCHEDULABLE,
        FindingKind.IDENTITY_MISMATCH,
    }
)


@dataclass(frozen=True)
class Finding:
    cluster: str
    group: str  # config group
    job: str
    namespace: str
    kind: FindingKind
    roles: tuple[str, ...]
    zones: tuple[str, ...]
    policies: tuple[str, ...]
    message: str
    fix: str = ""


# policies/<cluster>/LAST_PLACEMENTS_FILE in the output tree: the domains render gave
# each group and known job, which the next render keeps (render/placements.py writes it,
# sources/last_render.py reads it back)
LAST_PLACEMENTS_FILE = "placements.yaml"


@dataclass(frozen=True)
class LastPlacements:
    """The domains the last render gave one cluster's groups and known jobs."""

    source: str  # the file they were read from
    groups: Mapping[str, str] = field(default_factory=dict)  # group -> its domain
    jobs: Mapping[tuple[str, str], str] = field(default_factory=dict)  # (group, ns/job) -> domain
    queued: frozenset[tuple[str, str]] = frozenset()  # (group, ns/job) that was queued there

    # where the jobs run (the bound pods of a snapshot, sources/running.py): a job whose
    # pods all sit in one domain keeps it, whatever the file says (moving would split it)
    running: Mapping[tuple[str, str], str] = field(default_factory=dict)  # (group, ns/job)
    running_groups: Mapping[str, str] = field(default_factory=dict)  # pin: all in one

    def job_domain(self, group: str, job: str) -> str | None:
        """The domain the last render gave the job (its placements file)."""
        return self.jobs.get((group, job))

    def running_domain(self, group: str, job: str) -> str | None:
        return self.running.get((group, job))

    def kept_domain(self, group: str, job: str) -> str | None:
        """Where the job stays: where it runs, else where the last render put it."""
        return self.running.get((group, job)) or self.jobs.get((group, job))

    def was_queued(self, group: str, job: str) -> bool:
        """Queued there by the last render (and not running elsewhere since)."""
        return (group, job) in self.queued and self.kept_domain(group, job) == self.jobs.get(
            (group, job)
        )

    def group_domain(self, group: str) -> str | None:
        """Pin: where the group stays: where all its running jobs run, else the file's."""
        return self.running_groups.get(group) or self.groups.get(group)


@dataclass(frozen=True)
class RunningPod:
    """A bound pod of a training group, as a snapshot records it: the workload read from
    its labels (a Pod) and the node it runs on."""

    workload: Workload
    node: str
