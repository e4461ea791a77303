"""One network endpoint per workload, named NS/NAME, and the lookup of those names.

A workload's pods share one identity: the labels of its pod template (plus any
`--label` overrides) and its namespace. Names are `namespace/name`, with
`[replica]` for kinds that have several templates (PyTorchJob Master/Worker, JobSet
replicated jobs, ...); when two kinds share a name, `namespace/Kind/name` tells them apart.
hostNetwork templates are listed as their node (HOST_NETWORK_RULE): their traffic is
the node's, governed by host policies and entity/node rules, not by pod selectors. Which
node is not known here, so such an endpoint carries no node labels, and two pods of one
hostNetwork workload are taken to be on two nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from topogen.analysis.reachability import host_endpoint, pod_endpoint
from topogen.connectivity.inputs import IdentityHint
from topogen.errors import InputError
from topogen.model import Endpoint, Namespace, Workload

__all__ = [
    "HOST_NETWORK_RULE",
    "LabelOverride",
    "WorkloadEndpoint",
    "build_endpoints",
    "parse_label_override",
    "resolve",
    "unstamped",
]


HOST_NETWORK_RULE = (
    "host-network traffic is the node's: governed by host policies (CCNP nodeSelector, with "
    "the host firewall on) and host/remote-node/node rules, not by pod selectors; the node "
    "is not known here, so node labels count as none (`topogen analyze` places such pods "
    "on their nodes)"
)


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
    def host_network(self) -> bool:
        return self.workload.template.host_network

    def peer_of_itself(self) -> Endpoint:
        """The endpoint another pod of this workload has: a hostNetwork one on another node
        (two on one node would talk over loopback, which no policy sees)."""
        if not self.endpoint.host:
            return self.endpoint
        return host_endpoint(f"another node of {self.id}", {}, self.endpoint.ports)

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
    """(endpoints, excluded workloads), in stable name order. hostNetwork workloads are
    endpoints as their node (HOST_NETWORK_RULE); nothing is excluded any more (the second
    member stays for callers that read it)."""
    ordered = sorted(workloads, key=_order)
    counts: dict[str, int] = {}
    for w in ordered:
        counts[_base_id(w)] = counts.get(_base_id(w), 0) + 1
    plain: list[WorkloadEndpoint] = []
    for w in ordered:
        wid = _base_id(w) if counts[_base_id(w)] == 1 else _kind_id(w)
        labels = tuple(sorted(w.template.labels.items()))
        plain.append(WorkloadEndpoint(wid, w, _network(wid, w, labels, namespaces), labels))
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
            net = _network(ep.id, w, labels, namespaces)
            ep = WorkloadEndpoint(ep.id, w, net, labels, tuple(sorted(extra)))
        endpoints.append(ep)
    return tuple(endpoints), tuple(excluded)


def _network(
    wid: str,
    w: Workload,
    labels: tuple[tuple[str, str], ...],
    namespaces: Mapping[str, Namespace],
) -> Endpoint:
    t = w.template
    if t.host_network:  # the node's identity, whatever the pod's labels
        return host_endpoint(f"node of {wid}", {}, t.ports)
    return pod_endpoint(dict(labels), w.namespace, namespaces, t.ports, t.service_account)


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


def unstamped(
    hints: Sequence[IdentityHint], eps: Iterable[WorkloadEndpoint]
) -> list[tuple[str, str]]:
    """(endpoint id, label) of each endpoint whose template leaves a config group's identity
    label to be stamped from the node at binding: judged here without it."""
    out: list[tuple[str, str]] = []
    for ep in {e.id: e for e in eps}.values():
        have = dict(ep.labels)
        for h in hints:
            if ep.workload.namespace in h.namespaces and h.label not in have:
                out.append((ep.id, h.label))
    return list(dict.fromkeys(out))
