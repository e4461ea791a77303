"""One network endpoint per workload, named NS/NAME, and the lookup of those names.

A workload's pods share one identity: the labels of its pod template (plus any
`--label` overrides) and its namespace. Names are `namespace/name`, with
`[replica]` for kinds that have several templates (PyTorchJob Master/Worker, JobSet
replicated jobs, ...); when two kinds share a name, `namespace/Kind/name` tells them apart.
hostNetwork templates are left out: their traffic carries the node's identity,
which needs the cluster's nodes (out of scope here).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from topogen.analysis.reachability import pod_endpoint
from topogen.errors import InputError
from topogen.model import Endpoint, Namespace, Workload

__all__ = [
    "LabelOverride",
    "WorkloadEndpoint",
    "build_endpoints",
    "parse_label_override",
    "resolve",
]


@dataclass(frozen=True, order=True)
class LabelOverride:
    """`--label NS/NAME=KEY=VALUE`: a pod label the template does not set (or set otherwise)."""

    workload: str
    key: str
    value: str


@dataclass(frozen=True)
class WorkloadEndpoint:
    id: str
    workload: Workload
    endpoint: Endpoint
    labels: tuple[tuple[str, str], ...]  # pod labels used (template + overrides), sorted
    overridden: tuple[str, ...] = ()  # label keys set by --label

    @property
    def self_pair(self) -> bool:
        """Whether two pods of this workload can talk to each other (more than one pod)."""
        return self.workload.replicas > 1 or self.workload.kind == "DaemonSet"


def parse_label_override(text: str) -> LabelOverride:
    workload, sep, label = text.partition("=")
    key, sep2, value = label.partition("=")
    if not sep or not sep2 or not workload or not key:
        raise InputError(
            f"--label {text!r} is not NS/NAME=KEY=VALUE",
            hint="e.g. --label ml-demo/trainer-workers=zone=zone-a",
        )
    return LabelOverride(workload, key, value)


def _base_id(w: Workload) -> str:
    suffix = f"[{w.replica_name}]" if w.replica_name else ""
    return f"{w.namespace}/{w.name}{suffix}"


def _kind_id(w: Workload) -> str:
    suffix = f"[{w.replica_name}]" if w.replica_name else ""
    return f"{w.namespace}/{w.kind}/{w.name}{suffix}"


def _order(w: Workload) -> tuple[str, str, str, str]:
    return (w.namespace, w.name, w.replica_name, w.kind)


def _aliases(ep: WorkloadEndpoint) -> set[str]:
    w = ep.workload
    names = {ep.id, _base_id(w), _kind_id(w), f"{w.namespace}/{w.name}"}
    return {n.lower() for n in names}


def build_endpoints(
    workloads: Iterable[Workload],
    namespaces: Mapping[str, Namespace],
    overrides: Sequence[LabelOverride] = (),
) -> tuple[tuple[WorkloadEndpoint, ...], tuple[WorkloadEndpoint, ...]]:
    """(endpoints, excluded hostNetwork workloads), both in stable name order."""
    ordered = sorted(workloads, key=_order)
    counts: dict[str, int] = {}
    for w in ordered:
        counts[_base_id(w)] = counts.get(_base_id(w), 0) + 1
    plain: list[WorkloadEndpoint] = []
    for w in ordered:
        wid = _base_id(w) if counts[_base_id(w)] == 1 else _kind_id(w)
        labels = tuple(sorted(w.template.labels.items()))
        net = pod_endpoint(
            dict(labels), w.namespace, namespaces, w.template.ports, w.template.service_account
        )
        plain.append(WorkloadEndpoint(wid, w, net, labels))
    by_id: dict[str, dict[str, str]] = {}
    for o in overrides:
        target = resolve(o.workload, plain, what="--label")
        by_id.setdefault(target.id, {})[o.key] = o.value
    endpoints: list[WorkloadEndpoint] = []
    excluded: list[WorkloadEndpoint] = []
    for ep in plain:
        extra = by_id.get(ep.id)
        if extra:
            labels = tuple(sorted({**dict(ep.labels), **extra}.items()))
            w = ep.workload
            ep = WorkloadEndpoint(
                ep.id,
                w,
                pod_endpoint(
                    dict(labels),
                    w.namespace,
                    namespaces,
                    w.template.ports,
                    w.template.service_account,
                ),
                labels,
                tuple(sorted(extra)),
            )
        (excluded if ep.workload.template.host_network else endpoints).append(ep)
    return tuple(endpoints), tuple(excluded)


def resolve(ref: str, endpoints: Sequence[WorkloadEndpoint], *, what: str) -> WorkloadEndpoint:
    """The endpoint `ref` names (case-insensitive); InputError listing close matches."""
    want = ref.strip().lower()
    hits = [ep for ep in endpoints if want in _aliases(ep)]
    exact = [ep for ep in hits if ep.id.lower() == want]
    if len(exact) == 1:
        return exact[0]
    if len(hits) == 1:
        return hits[0]
    if hits:
        names = ", ".join(ep.id for ep in hits)
        raise InputError(f"{what} {ref} is ambiguous: it names {names}", hint="use one of these")
    ids = [ep.id for ep in endpoints]
    import difflib  # only for the error's hint

    close = difflib.get_close_matches(ref, ids, n=3, cutoff=0.5)
    hint = f"did you mean {' or '.join(close)}?" if close else "names are NAMESPACE/NAME"
    raise InputError(f"{what}: no workload {ref}", hint=hint)
