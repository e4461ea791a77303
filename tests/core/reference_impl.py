"""The analysis as first written: per node, per zone pair, per domain. Slow and obvious.

The shipped analysis computes the same answers with node classes, identity families,
bit matrices and caches (analysis/nodeindex.py, placement.py, families.py, zonepaths.py,
domains.py, plan/planner.py). tests/core/test_fast_paths.py runs both over generated fleets and
compares every result; these functions are that comparison's ground truth and nothing else.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

from topogen.analysis.cluster import candidate_domains, gpu_taints, tolerations_for
from topogen.analysis.context import AnalysisContext
from topogen.analysis.domains import DomainCheck
from topogen.analysis.findings import CROSS_ZONE_COST, JobAnalysis
from topogen.analysis.fit import exclusion
from topogen.analysis.job_fit import PodDemand, fits
from topogen.analysis.members import Member, possible_zone_pairs
from topogen.analysis.paths import BlockedPath
from topogen.analysis.placed import Placement
from topogen.analysis.reachability import PolicyIndex
from topogen.analysis.selection import selects as _selects
from topogen.model import (
    NO_ZONE_PREFIX,
    Endpoint,
    Finding,
    FindingKind,
    Isolation,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodAffinityTerm,
    PodTemplate,
    PolicyRef,
    PolicyRule,
    Toleration,
    Topology,
    TrainingGroup,
)
from topogen.model import quantity as _fmt


class NaiveIndex(PolicyIndex):
    """PolicyIndex without its shortcuts: endpoints keyed by every label (and node name),
    rules found by scanning them all."""

    def _ep_key(self, ep: Endpoint) -> object:
        labels = tuple(sorted(ep.labels.items()))
        return (ep.host, ep.namespace, ep.node if ep.host else "", labels, ep.ports)

    def _subject_rules(
        self, subject: Endpoint, subject_key: int, direction: str
    ) -> tuple[tuple[Isolation, ...], list[PolicyRule]]:
        isolations = sorted(
            {
                i
                for i in self._isolations[direction]
                if _selects(i.subject_host, i.subject, i.subject_namespace, subject)
            },
            key=lambda i: (i.policy, i.index),
        )
        rules = [
            r
            for r in self._by_direction[direction]
            if _selects(r.subject_host, r.subject, r.subject_namespace, subject)
        ]
        return tuple(isolations), rules


def place(
    template: PodTemplate,
    topology: Topology,
    extra_tolerations: Sequence[Toleration] = (),
    zones: Iterable[str] | None = None,
) -> Placement:
    tolerations = (*template.tolerations, *extra_tolerations)
    allowed = set(zones) if zones is not None else None
    ok: list[Node] = []
    excluded: Counter[str] = Counter()
    for node in topology.nodes:
        if allowed is not None and node.zone not in allowed:
            excluded["outside the chosen domain"] += 1
            continue
        reason = exclusion(template, node, tolerations)
        if reason is None:
            ok.append(node)
        else:
            excluded[reason] += 1
    return Placement(tuple(ok), dict(excluded))


def members_of(job: TrainingGroup, topology: Topology) -> list[Member]:
    return [
        Member(role.name, w, w.template, place(w.template, topology))
        for role in job.roles
        for w in role.workloads
        if w.replicas > 0
    ]


def pin(
    member: Member,
    topology: Topology,
    zones: Sequence[str],
    tolerations: Sequence[Toleration] = (),
    identity: tuple[str, str] | None = None,
    affinity: PodAffinityTerm | None = None,
) -> Member:
    t = member.template
    labels = dict(t.labels)
    if identity is not None:
        labels[identity[0]] = identity[1]
    zone_term = NodeSelectorRequirement(topology.zone_label, "In", tuple(sorted(zones)))
    terms = t.node_affinity or (NodeSelectorTerm(()),)
    pinned = tuple(NodeSelectorTerm((*term.match_expressions, zone_term)) for term in terms)
    tols = tuple(dict.fromkeys((*t.tolerations, *tolerations)))
    pod_aff = (
        t.pod_affinity if affinity is None else tuple(dict.fromkeys((*t.pod_affinity, affinity)))
    )
    new_t = replace(t, labels=labels, node_affinity=pinned, tolerations=tols, pod_affinity=pod_aff)
    return replace(member, template=new_t, placement=place(new_t, topology))


def blocked_paths(ctx: AnalysisContext, members: Sequence[Member]) -> list[BlockedPath]:
    out = []
    for (i, j), zone_pairs in sorted(possible_zone_pairs(members, ctx.topology).items()):
        for za, zb in zone_pairs:
            blocked = ctx.check_path(members[i], za, members[j], zb)
            if blocked is not None:
                out.append(blocked)
    return out


def cross_zone_pairs(
    ctx: AnalysisContext, members: Sequence[Member]
) -> list[tuple[str, str, str, str]]:
    out = []
    for (i, j), zone_pairs in sorted(possible_zone_pairs(members, ctx.topology).items()):
        a, b = members[i], members[j]
        for za, zb in zone_pairs:
            if za != zb and ctx.check_path(a, za, b, zb) is None:
                out.append((a.role, b.role, za, zb))
    return out


def pack(
    demands: Sequence[PodDemand], nodes: Sequence[Node], gpu_resources: Sequence[str]
) -> tuple[bool, str]:
    free = {n.name: dict(n.allocatable) for n in nodes}
    order = sorted(
        demands,
        key=lambda d: (
            -sum(d.requests.get(g, 0) for g in gpu_resources),
            -d.requests.get("cpu", 0),
            d.role,
        ),
    )
    for d in order:
        for placed in range(d.count):
            target = next(
                (n for n in sorted(d.nodes) if n in free and fits(d.requests, free[n])), None
            )
            if target is None:
                allocatable = {n.name: n.allocatable for n in nodes}
                return False, _shortfall(d, d.count - placed, allocatable, free, gpu_resources)
            for res, want in d.requests.items():
                if res in free[target]:
                    free[target][res] -= want
            if "pods" in free[target]:
                free[target]["pods"] -= 1
    return True, ""


def _shortfall(
    d: PodDemand,
    left: int,
    allocatable: Mapping[str, Mapping[str, Fraction]],
    free: Mapping[str, Mapping[str, Fraction]],
    gpu_resources: Sequence[str],
) -> str:
    pods = f"{left} of {d.count} {d.role} pod(s) do not fit"
    for g in gpu_resources:
        want = d.requests.get(g, 0)
        if want > 0:
            nodes = [n for n in d.nodes if n in free]
            total = sum(allocatable[n].get(g, 0) for n in nodes)
            taken = total - sum(free[n].get(g, 0) for n in nodes) - want * (d.count - left)
            others = f", {_fmt(taken)} of them taken by the job's other pods" if taken else ""
            return (
                f"{pods}: each needs {_fmt(want)} {g} on one node; the nodes they may use "
                f"have {_fmt(total)}{others}"
            )
    return f"{pods} on the nodes they may use"


def check_domain(
    members: Sequence[Member], name: str, zones: tuple[str, ...], ctx: AnalysisContext
) -> DomainCheck:
    topo = ctx.topology
    tolerations = tolerations_for(gpu_taints(topo, zones))
    identity = (ctx.identity_label, zones[0]) if ctx.identity_label and len(zones) == 1 else None
    key = topo.zone_label if ctx.colocate == "zone" or not ctx.domain_label else ctx.domain_label
    coordinator = next((m for m in members if m.role == "coordinator"), None)
    affinity = None
    if coordinator is not None:
        job = coordinator.template.labels.get(ctx.profile.job_label, "")
        affinity = PodAffinityTerm(ctx.profile.coordinator_affinity(job), key)
    fixed = [
        pin(
            m,
            topo,
            zones,
            tolerations if m.role == "coordinator" else (),
            identity,
            affinity if m.role == "worker" else None,
        )
        for m in members
    ]
    problems: list[str] = []
    policies: set[str] = set()
    for m in fixed:
        if not m.placement.nodes:
            problems.append(f"{m.role} {m.name} cannot run in {name}: {m.placement.why_not()}")
    traffic_ok = True
    if not problems:
        blocked = blocked_paths(ctx, fixed)
        if blocked:
            traffic_ok = False
            problems += [b.describe() for b in blocked[:3]]
            policies.update(str(p) for b in blocked for p in b.policies)
    demands = [
        PodDemand(m.role, m.replicas, m.template.requests, frozenset(n.name for n in m.placement.nodes))
        for m in fixed
    ]  # fmt: skip
    domain_nodes = [n for n in topo.nodes if n.zone in zones]
    fits, short = pack(demands, domain_nodes, topo.gpu_resources) if not problems else (False, "")
    if short:
        problems.append(short)
    gpus = topo.gpu_resources
    need = sum((m.template.requests.get(g, Fraction(0)) * m.replicas for m in members
                for g in gpus), Fraction(0))  # fmt: skip
    free = sum((n.allocatable.get(g, Fraction(0)) for n in domain_nodes for g in gpus), Fraction(0))
    already = sum(1 for m in members if set(zones) & set(m.placement.zones))
    return DomainCheck(
        name, zones, tolerations, identity, traffic_ok, fits, tuple(problems),
        tuple(sorted(policies)), free, need, already, free,
    )  # fmt: skip


@dataclass(frozen=True)
class Analysis:
    """What analyze_job decides, in plain lists."""

    members: tuple[Member, ...]
    findings: tuple[Finding, ...]
    domains: tuple[DomainCheck, ...]
    blocked: tuple[BlockedPath, ...]


def analyze_job(cluster: str, job: TrainingGroup, ctx: AnalysisContext) -> Analysis:
    members = members_of(job, ctx.topology)
    findings: list[Finding] = []

    def add(
        kind: FindingKind, roles: set[str], zones: set[str], policies: set[str], msg: str
    ) -> None:
        findings.append(Finding(cluster, job.config_group, job.job, job.namespace, kind,
                                tuple(sorted(roles)), tuple(sorted(zones)),
                                tuple(sorted(policies)), msg))  # fmt: skip

    for m in members:
        if not m.placement.nodes:
            add(FindingKind.UNSCHEDULABLE, {m.role}, set(), set(),
                f"{m.role} {m.name} has no eligible node: {m.placement.why_not()}")  # fmt: skip
        kind, value = m.identity(ctx.identity_label)
        if kind == "static" and value is not None:
            elsewhere = [z for z in m.placement.zones if z != value]
            if elsewhere:
                can = "can only land in" if value not in m.placement.zones else "may land in"
                add(FindingKind.IDENTITY_MISMATCH, {m.role}, {value, *elsewhere}, set(),
                    f"{m.role} {m.name} claims {ctx.identity_label}={value} but {can} "
                    f"{', '.join(elsewhere)}")  # fmt: skip
    placeable = all(m.placement.nodes for m in members)
    blocked = blocked_paths(ctx, members) if placeable else []
    if job.kueue_managed:
        policies = {str(p) for b in blocked for p in b.policies}
        note = (
            f"; across zones its traffic is denied ({', '.join(sorted(policies))}), so the "
            "Kueue topology request must keep it in one zone"
            if blocked
            else ""
        )
        add(FindingKind.KUEUE_MANAGED, {m.role for m in members},
            {z for b in blocked for z in (b.src_zone, b.dst_zone)}, policies,
            "placed by Kueue Topology Aware Scheduling (its pods carry Kueue's TAS marks), but "
            f"it names no queue (kueue.x-k8s.io/queue-name); topogen adds no affinity{note}")  # fmt: skip
        return Analysis(tuple(members), tuple(findings), (), tuple(blocked))
    if blocked:
        shown = "; ".join(b.describe() for b in blocked[:2])
        more = f" (+{len(blocked) - 2} more paths)" if len(blocked) > 2 else ""
        add(FindingKind.HARD_BLOCK, {r for b in blocked for r in (b.src_role, b.dst_role)},
            {z for b in blocked for z in (b.src_zone, b.dst_zone)},
            {str(p) for b in blocked for p in b.policies},
            f"a placement the scheduler may choose leaves the group's traffic denied: {shown}{more}")  # fmt: skip
    denied = {frozenset({(b.src_role, b.src_zone), (b.dst_role, b.dst_zone)}) for b in blocked}
    split = [
        s
        for s in (cross_zone_pairs(ctx, members) if placeable else [])
        if frozenset({(s[0], s[2]), (s[1], s[3])}) not in denied
    ]
    if split:
        first = split[0]
        add(FindingKind.CROSS_ZONE, {r for s in split for r in s[:2]},
            {z for s in split for z in s[2:]}, set(),
            f"the scheduler may split the group ({first[0]} in {first[2]}, {first[1]} in "
            f"{first[3]}); traffic is allowed but {CROSS_ZONE_COST}")  # fmt: skip
    domains = [
        check_domain(members, name, zones, ctx)
        for name, zones in candidate_domains(ctx.topology, ctx.colocate, ctx.domain_label)
    ]
    if members and not any(d.ok for d in domains):
        detail = (
            "; ".join(
                f"{d.name} ({_fmt(d.gpus_free)} GPUs): {d.problems[0] if d.problems else 'does not fit'}"
                for d in domains[:4]
            )
            or "the cluster has no zones"
        )
        add(FindingKind.UNSCHEDULABLE, {m.role for m in members},
            {z for d in domains for z in d.zones}, {p for d in domains for p in d.policies},
            f"no single allowed domain can hold the whole group (needs "
            f"{_fmt(domains[0].gpus_needed) if domains else '0'} GPUs): {detail}")  # fmt: skip
    if not any(f.kind.is_problem for f in findings):
        zones = {z for m in members for z in m.placement.zones}
        add(FindingKind.OK, {m.role for m in members}, zones, set(),
            f"every placement the scheduler may choose keeps the group in one zone with its "
            f"traffic allowed ({', '.join(sorted(zones)) or 'no zone'})")  # fmt: skip
    return Analysis(tuple(members), tuple(findings), tuple(domains), tuple(blocked))


def denied_zone_pairs(
    jobs: Sequence[JobAnalysis], ctx: AnalysisContext
) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    zones = [z for z in ctx.topology.zones if not z.startswith(NO_ZONE_PREFIX)]
    out: dict[tuple[str, str], set[PolicyRef]] = {}
    anywhere = (Toleration("", "Exists"),)
    for job in jobs:
        members = list(job.members)
        pinned = {
            (i, z): pin(m, ctx.topology, [z], anywhere)
            for i, m in enumerate(members)
            for z in zones
        }
        for za in zones:
            for zb in zones:
                if za >= zb:
                    continue
                for i, a in enumerate(members):
                    for j in range(len(members)):
                        if i == j and a.replicas < 2:
                            continue
                        for src, dst in ((za, zb), (zb, za)):
                            pa, pb = pinned[(i, src)], pinned[(j, dst)]
                            if not pa.placement.nodes or not pb.placement.nodes:
                                continue
                            blocked = ctx.check_path(pa, src, pb, dst)
                            if blocked is not None:
                                out.setdefault((za, zb), set()).update(blocked.policies)
    return tuple(
        (za, zb, tuple(sorted(str(p) for p in ps))) for (za, zb), ps in sorted(out.items())
    )
