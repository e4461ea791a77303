"""The audit of live training groups: pure functions over model objects and pod states.

For every job of every configured group: pod -> role -> node -> zone -> GPU
utilisation -> peer connectivity, and the flags that make a group broken:
split across zones, paths the policies deny, Running with idle GPUs, Pending
pods held by constraints too strict for the cluster. Path verdicts come from
the analysis (AnalysisContext.check_path over PolicyIndex.verdict), placement
from analysis.placement.place: nothing is decided twice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from topogen.analysis import AnalysisContext, ClusterIndex, PolicyIndex, find_groups
from topogen.analysis.members import Member
from topogen.analysis.nodeindex import NodeIndex
from topogen.analysis.placed import Placement
from topogen.analysis.placement import place
from topogen.config import GroupConfig
from topogen.model import NO_ZONE_PREFIX, Namespace, Node, Topology, TrainingGroup, Workload
from topogen.sources.live import PodRecord

__all__ = [
    "FLAG_KINDS",
    "AuditInputs",
    "AuditPod",
    "AuditReport",
    "Flag",
    "GroupAudit",
    "PodRow",
    "audit",
]

SPLIT, DENIED, IDLE, PENDING = "SPLIT_ZONES", "PATH_DENIED", "IDLE_GPUS", "PENDING_UNSCHEDULABLE"
FLAG_KINDS = (SPLIT, DENIED, IDLE, PENDING)
_FINISHED = ("Succeeded", "Failed")


@dataclass(frozen=True)
class AuditPod:
    """A live pod: its state and the pod template read from it."""

    record: PodRecord
    workload: Workload


@dataclass(frozen=True)
class AuditInputs:
    cluster: str
    topology: Topology
    index: PolicyIndex
    namespaces: Mapping[str, Namespace]
    groups: Sequence[GroupConfig]
    pods: Sequence[AuditPod]
    # (namespace, pod) -> mean GPU utilisation in percent; None: no Prometheus asked
    gpu_utilisation: Mapping[tuple[str, str], float] | None = None
    idle_threshold: float = 10.0
    domain_label: str | None = None


@dataclass(frozen=True)
class PodRow:
    namespace: str
    pod: str
    role: str
    node: str  # "" while Pending
    zone: str
    phase: str
    identity: str  # identity label value the policies see ("" when none is configured)
    gpus: Fraction  # GPUs requested
    gpu_utilisation: float | None
    peers: int  # bound peers checked
    denied_peers: tuple[str, ...]  # peers with a denied path to or from this pod

    @property
    def verdict(self) -> str:
        if not self.node:
            return "-"
        if self.denied_peers:
            return f"denied ({len(self.denied_peers)}/{self.peers} peers)"
        return f"allowed ({self.peers} peers)" if self.peers else "no peers"


@dataclass(frozen=True)
class Flag:
    kind: str
    message: str


@dataclass(frozen=True)
class GroupAudit:
    group: str
    namespace: str
    job: str
    rows: tuple[PodRow, ...]
    flags: tuple[Flag, ...]

    @property
    def broken(self) -> bool:
        return bool(self.flags)

    @property
    def zones(self) -> tuple[str, ...]:
        return tuple(sorted({r.zone for r in self.rows if r.node}))


@dataclass(frozen=True)
class AuditReport:
    cluster: str
    groups: tuple[GroupAudit, ...]
    warnings: tuple[str, ...] = ()
    gpu_measured: bool = False  # GPU utilisation was read (Prometheus given)

    @property
    def broken(self) -> tuple[GroupAudit, ...]:
        return tuple(g for g in self.groups if g.broken)


def audit(inputs: AuditInputs) -> AuditReport:
    """Audit every job of every configured group among the live pods."""
    by_key = {(p.workload.namespace, p.workload.name): p for p in inputs.pods}
    active = [
        p.workload
        for p in inputs.pods
        if p.record.phase not in _FINISHED and not p.record.terminating
    ]
    groups: list[GroupAudit] = []
    warnings: list[str] = []
    shared = ClusterIndex(inputs.topology, inputs.index, inputs.namespaces)
    for group in inputs.groups:
        jobs = find_groups(group, active)
        if not jobs:
            warnings.append(
                f"no live pods of group {group.name} in namespaces {', '.join(group.namespaces)}"
            )
        ctx = AnalysisContext(shared, group, domain_label=inputs.domain_label)
        for job in jobs:
            audited, notes = _audit_job(job, by_key, ctx, inputs)
            groups.append(audited)
            warnings.extend(notes)
    groups.sort(key=lambda g: (g.group, g.namespace, g.job))
    measured = inputs.gpu_utilisation is not None
    return AuditReport(inputs.cluster, tuple(groups), tuple(warnings), measured)


@dataclass(frozen=True)
class _Placed:
    pod: AuditPod
    role: str
    node: Node | None
    member: Member


def _audit_job(
    job: TrainingGroup,
    by_key: Mapping[tuple[str, str], AuditPod],
    ctx: AnalysisContext,
    inputs: AuditInputs,
) -> tuple[GroupAudit, list[str]]:
    nodes = {n.name: n for n in inputs.topology.nodes}
    placed: list[_Placed] = []
    for role in job.roles:
        for w in role.workloads:
            pod = by_key[(w.namespace, w.name)]
            node = nodes.get(pod.record.node)
            bound = Placement((node,), {}) if node is not None else Placement((), {})
            placed.append(_Placed(pod, role.name, node, Member(role.name, w, w.template, bound)))
    placed.sort(key=lambda p: (p.role != "coordinator", p.pod.workload.name))

    denied = _denied_pairs(placed, ctx)
    gpu_resources = inputs.topology.gpu_resources
    rows = []
    for i, p in enumerate(placed):
        peers = [j for j, q in enumerate(placed) if j != i and q.node is not None]
        rows.append(
            PodRow(
                namespace=p.pod.workload.namespace,
                pod=p.pod.workload.name,
                role=p.role,
                node=p.pod.record.node,
                zone=_zone(p),
                phase=p.pod.record.phase,
                identity=_identity(p, ctx.identity_label),
                gpus=sum(
                    (p.member.template.requests.get(r, Fraction(0)) for r in gpu_resources),
                    Fraction(0),
                ),
                gpu_utilisation=_utilisation(p, inputs.gpu_utilisation),
                peers=len(peers) if p.node is not None else 0,
                denied_peers=tuple(
                    sorted(
                        {
                            placed[j].pod.workload.name
                            for j in peers
                            if (i, j) in denied or (j, i) in denied
                        }
                    )
                ),
            )
        )
    flags: list[Flag] = []
    notes: list[str] = []
    _flag_split(placed, flags)
    _flag_denied(placed, denied, flags)
    _flag_idle(job, rows, inputs, flags, notes)
    _flag_pending(placed, ctx.cluster.nodes, flags)
    return GroupAudit(job.config_group, job.namespace, job.job, tuple(rows), tuple(flags)), notes


def _zone(p: _Placed) -> str:
    if p.node is None:
        return "" if not p.pod.record.node else "(unknown node)"
    return p.node.zone


def _identity(p: _Placed, label: str | None) -> str:
    if not label:
        return ""
    labels = p.member.template.labels
    if label in labels:
        return labels[label]
    if p.node is not None and not p.node.zone.startswith(NO_ZONE_PREFIX):
        return p.node.zone  # stamped from the node at binding, as the analysis assumes
    return ""


def _utilisation(p: _Placed, gpu: Mapping[tuple[str, str], float] | None) -> float | None:
    if gpu is None:
        return None
    return gpu.get((p.pod.workload.namespace, p.pod.workload.name))


def _denied_pairs(
    placed: Sequence[_Placed], ctx: AnalysisContext
) -> dict[tuple[int, int], tuple[str, tuple[str, ...]]]:
    """(src, dst) -> (description, policies) for every bound pair whose path is denied."""
    out: dict[tuple[int, int], tuple[str, tuple[str, ...]]] = {}
    for i, a in enumerate(placed):
        if a.node is None:
            continue
        for j, b in enumerate(placed):
            if i == j or b.node is None:
                continue
            blocked = ctx.check_path(a.member, a.node.zone, b.member, b.node.zone)
            if blocked is not None:
                out[(i, j)] = (blocked.describe(), tuple(str(x) for x in blocked.policies))
    return out


def _flag_split(placed: Sequence[_Placed], flags: list[Flag]) -> None:
    zones_by_role: dict[str, set[str]] = {}
    for p in placed:
        if p.node is not None:
            zones_by_role.setdefault(p.role, set()).add(p.node.zone)
    zones = {z for zs in zones_by_role.values() for z in zs}
    if len(zones) > 1:
        where = "; ".join(
            f"{role} in {', '.join(sorted(zs))}" for role, zs in sorted(zones_by_role.items())
        )
        flags.append(
            Flag(SPLIT, f"the group is split across zones {', '.join(sorted(zones))}: {where}")
        )


def _flag_denied(
    placed: Sequence[_Placed],
    denied: Mapping[tuple[int, int], tuple[str, tuple[str, ...]]],
    flags: list[Flag],
) -> None:
    if not denied:
        return
    kinds = Counter(desc for desc, _ in denied.values())
    policies = sorted({p for _, ps in denied.values() for p in ps})
    shown = "; ".join(
        f"{d} [{n} pod pair{'s' if n > 1 else ''}]" for d, n in sorted(kinds.items())[:3]
    )
    more = f" (+{len(kinds) - 3} more)" if len(kinds) > 3 else ""
    by = f"; policies: {', '.join(policies)}" if policies else ""
    pairs = len(denied)
    flags.append(
        Flag(
            DENIED,
            f"{pairs} pod-to-pod path{'s' if pairs > 1 else ''} of the group "
            f"denied: {shown}{more}{by}",
        )
    )


def _flag_idle(
    job: TrainingGroup,
    rows: Sequence[PodRow],
    inputs: AuditInputs,
    flags: list[Flag],
    notes: list[str],
) -> None:
    if inputs.gpu_utilisation is None:
        return
    gpu_rows = [r for r in rows if r.gpus > 0]
    if not gpu_rows or any(r.phase != "Running" for r in rows):
        return
    unknown = [r.pod for r in gpu_rows if r.gpu_utilisation is None]
    if unknown:
        notes.append(
            f"job {job.namespace}/{job.job}: no GPU utilisation samples for "
            f"{len(unknown)} of {len(gpu_rows)} GPU pods ({', '.join(unknown[:3])}"
            f"{', ...' if len(unknown) > 3 else ''})"
        )
        return
    highest = max(r.gpu_utilisation or 0.0 for r in gpu_rows)
    if highest < inputs.idle_threshold:
        flags.append(
            Flag(
                IDLE,
                f"every pod is Running but its GPUs are idle: at most "
                f"{highest:g}% utilisation across {len(gpu_rows)} GPU pods "
                f"(threshold {inputs.idle_threshold:g}%)",
            )
        )


def _flag_pending(placed: Sequence[_Placed], nodes: NodeIndex, flags: list[Flag]) -> None:
    for p in placed:
        if p.pod.record.node:
            continue
        eligible = place(p.member.template, nodes)
        ours = "" if eligible.nodes else f"no eligible node: {eligible.why_not()}"
        sched = p.pod.record.unschedulable
        if not sched and not ours:
            continue  # not yet tried by the scheduler, and it has somewhere to go
        said = f"the scheduler says: {sched}" if sched else ""
        both = "; ".join(s for s in (said, f"topogen: {ours}" if ours else "") if s)
        flags.append(
            Flag(
                PENDING,
                f"{p.role} pod {p.pod.workload.name} is Pending, held by its constraints: {both}",
            )
        )
