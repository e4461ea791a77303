"""Where the scheduler may put a pod template, and whether a set of pods fits a set of nodes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from topogen.model import Node, PodTemplate, Taint, Toleration, Topology

__all__ = ["Placement", "PodDemand", "pack", "place", "untolerated"]

_BLOCKING = ("NoSchedule", "NoExecute")
_UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


@dataclass(frozen=True)
class Placement:
    nodes: tuple[Node, ...]
    excluded: Mapping[str, int]  # reason -> number of nodes it excluded

    @property
    def zones(self) -> tuple[str, ...]:
        return tuple(sorted({n.zone for n in self.nodes}))

    def why_not(self, limit: int = 3) -> str:
        parts = [
            f"{count} node{'s' if count > 1 else ''}: {reason}"
            for reason, count in sorted(self.excluded.items(), key=lambda kv: (-kv[1], kv[0]))
        ]
        more = f" (+{len(parts) - limit} more)" if len(parts) > limit else ""
        return "; ".join(parts[:limit]) + more


def untolerated(taints: Iterable[Taint], tolerations: Sequence[Toleration]) -> list[Taint]:
    return [
        t
        for t in taints
        if t.effect in _BLOCKING and not any(tol.tolerates(t) for tol in tolerations)
    ]


def _node_labels(node: Node) -> Mapping[str, str]:
    # matchFields supports metadata.name only; expose it as a pseudo label
    return {**node.labels, "metadata.name": node.name}


def exclusion(template: PodTemplate, node: Node, tolerations: Sequence[Toleration]) -> str | None:
    """Why the scheduler would not place this template on this node, or None."""
    if node.unschedulable and not any(t.tolerates(_UNSCHEDULABLE_TAINT) for t in tolerations):
        return "cordoned (unschedulable)"
    for key, value in template.node_selector.items():
        if node.labels.get(key) != value:
            return f"nodeSelector {key}={value} not matched"
    if template.node_affinity is not None:
        labels = _node_labels(node)
        if not any(term.matches(labels) for term in template.node_affinity):
            return "required node affinity not matched"
    bad = untolerated(node.taints, tolerations)
    if bad:
        return f"taint {bad[0]} not tolerated"
    for resource, want in sorted(template.requests.items()):
        if want <= 0:
            continue
        have = node.allocatable.get(resource)
        if (
            have is None
            and resource in ("cpu", "memory", "ephemeral-storage")
            and not node.allocatable
        ):
            continue  # a node listed without allocatable: do not guess
        if (have or Fraction(0)) < want:
            return f"insufficient {resource} (needs {_fmt(want)}, has {_fmt(have or 0)})"
    return None


def place(
    template: PodTemplate,
    topology: Topology,
    extra_tolerations: Sequence[Toleration] = (),
    zones: Iterable[str] | None = None,
) -> Placement:
    """The nodes this template can land on (optionally with extra tolerations, in some zones)."""
    tolerations = (*template.tolerations, *extra_tolerations)
    allowed_zones = set(zones) if zones is not None else None
    ok: list[Node] = []
    excluded: Counter[str] = Counter()
    for node in topology.nodes:
        if allowed_zones is not None and node.zone not in allowed_zones:
            excluded["outside the chosen domain"] += 1
            continue
        reason = exclusion(template, node, tolerations)
        if reason is None:
            ok.append(node)
        else:
            excluded[reason] += 1
    return Placement(tuple(ok), dict(excluded))


@dataclass(frozen=True)
class PodDemand:
    """`count` identical pods that may go on `nodes` (names) and each request `requests`."""

    role: str
    count: int
    requests: Mapping[str, Fraction]
    nodes: frozenset[str]


def pack(
    demands: Sequence[PodDemand], nodes: Sequence[Node], gpu_resources: Sequence[str]
) -> tuple[bool, str]:
    """First-fit decreasing of every pod onto nodes; (fits, what is missing)."""
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
                (
                    name
                    for name in sorted(d.nodes)
                    if name in free and _fits(d.requests, free[name])
                ),
                None,
            )
            if target is None:
                return False, _shortfall(d, d.count - placed, free, gpu_resources)
            for res, want in d.requests.items():
                if res in free[target]:
                    free[target][res] -= want
            if "pods" in free[target]:
                free[target]["pods"] -= 1
    return True, ""


def _fits(requests: Mapping[str, Fraction], free: Mapping[str, Fraction]) -> bool:
    if "pods" in free and free["pods"] < 1:
        return False
    for res, want in requests.items():
        if want <= 0:
            continue
        have = free.get(res)
        if have is None:
            if res in ("cpu", "memory", "ephemeral-storage"):
                continue
            return False
        if have < want:
            return False
    return True


def _shortfall(
    d: PodDemand,
    left: int,
    free: Mapping[str, Mapping[str, Fraction]],
    gpu_resources: Sequence[str],
) -> str:
    for g in gpu_resources:
        want = d.requests.get(g, 0)
        if want > 0:
            have = sum(free[n].get(g, 0) for n in d.nodes if n in free)
            return (
                f"{left} more {d.role} pod(s) need {_fmt(want * left)} {g}, "
                f"only {_fmt(have)} free on the nodes they may use"
            )
    return f"{left} more {d.role} pod(s) do not fit on the nodes they may use"


def _fmt(q: Fraction | int) -> str:
    q = Fraction(q)
    return str(q.numerator) if q.denominator == 1 else f"{float(q):g}"
