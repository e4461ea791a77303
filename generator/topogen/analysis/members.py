"""The pods of one job as the analysis sees them: placement, identity, affinity links."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from topogen.analysis.links import LinkView, linked_pairs, links
from topogen.analysis.nodeindex import NodeIndex
from topogen.analysis.placed import Placement
from topogen.analysis.placement import place
from topogen.analysis.reachability import PolicyIndex, host_endpoint, pod_endpoint
from topogen.model import (
    NO_ZONE_PREFIX,
    Endpoint,
    LabelSelector,
    Namespace,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodAffinityTerm,
    PodTemplate,
    Toleration,
    Topology,
    TrainingGroup,
    Workload,
)

__all__ = ["Member", "members_of", "pin", "possible_zone_pairs"]


@dataclass(frozen=True)
class Member:
    role: str  # coordinator | worker
    workload: Workload
    template: PodTemplate
    placement: Placement

    @property
    def replicas(self) -> int:
        return self.workload.replicas

    @property
    def name(self) -> str:
        return self.workload.ref

    def identity(self, identity_label: str | None) -> tuple[str, str | None]:
        """('static', value) | ('stamped', None) | ('none', None)."""
        if not identity_label:
            return "none", None
        if identity_label in self.template.labels:
            return "static", self.template.labels[identity_label]
        return "stamped", None

    def endpoints(
        self,
        zone: str,
        identity_label: str | None,
        index: PolicyIndex,
        namespaces: Mapping[str, Namespace],
        node_keys: set[str],
    ) -> list[Endpoint]:
        """The network identities this member's pods have when placed in `zone`."""
        if self.template.host_network:
            seen: dict[tuple[tuple[str, str], ...], Node] = {}
            for node in self.placement.nodes:
                if node.zone != zone:
                    continue
                proj = tuple(sorted((k, v) for k, v in node.labels.items() if k in node_keys))
                seen.setdefault(proj, node)
            return [host_endpoint(n.name, n.labels, self.template.ports) for n in seen.values()]
        labels = dict(self.template.labels)
        kind, _ = self.identity(identity_label)
        if kind == "stamped" and identity_label and not zone.startswith(NO_ZONE_PREFIX):
            labels[identity_label] = zone  # a node without the zone label stamps nothing
        t = self.template
        return [
            pod_endpoint(labels, self.workload.namespace, namespaces, t.ports, t.service_account)
        ]


def members_of(job: TrainingGroup, nodes: NodeIndex) -> list[Member]:
    out = []
    for role in job.roles:
        for w in role.workloads:
            if w.replicas > 0:
                out.append(Member(role.name, w, w.template, place(w.template, nodes)))
    return out


def pin(
    member: Member,
    nodes: NodeIndex,
    zones: Sequence[str],
    tolerations: Sequence[Toleration] = (),
    identity: tuple[str, str] | None = None,
    affinity: PodAffinityTerm | None = None,
) -> Member:
    """The member as topogen's mutation leaves it: pinned to `zones`, maybe more tolerant."""
    t = member.template
    labels = dict(t.labels)
    if identity is not None:
        labels[identity[0]] = identity[1]
    zone_term = NodeSelectorRequirement(nodes.zone_label, "In", tuple(sorted(zones)))
    terms = t.node_affinity or (NodeSelectorTerm(()),)
    pinned_terms = tuple(NodeSelectorTerm((*term.match_expressions, zone_term)) for term in terms)
    merged_tols = tuple(dict.fromkeys((*t.tolerations, *tolerations)))
    pod_aff = (
        t.pod_affinity if affinity is None else tuple(dict.fromkeys((*t.pod_affinity, affinity)))
    )
    new_t = replace(
        t, labels=labels, node_affinity=pinned_terms, tolerations=merged_tols, pod_affinity=pod_aff
    )
    return replace(member, template=new_t, placement=place(new_t, nodes))


# --- which zone pairs the scheduler may choose -------------------------------------------


def possible_zone_pairs(
    members: Sequence[Member], topology: Topology
) -> dict[tuple[int, int], list[tuple[str, str]]]:
    """For each ordered pair of members (i, j) that talk, the zone pairs the scheduler may pick.

    i == j stands for two replicas of the same member.
    """
    views = [
        LinkView(m.workload.namespace, m.template.labels, m.template.pod_affinity) for m in members
    ]
    pairs_of = linked_pairs([m.replicas for m in members], links(views))
    kvals: dict[tuple[int, str, str], set[str]] = {}

    def values(i: int, zone: str, key: str) -> set[str]:
        hit = kvals.get((i, zone, key))
        if hit is None:
            hit = {
                n.labels[key]
                for n in members[i].placement.nodes
                if n.zone == zone and key in n.labels
            }
            kvals[(i, zone, key)] = hit
        return hit

    out: dict[tuple[int, int], list[tuple[str, str]]] = {}
    for i, j, linked, anti_keys in pairs_of:
        pairs = []
        for za in members[i].placement.zones:
            for zb in members[j].placement.zones:
                if any(not (values(i, za, k) & values(j, zb, k)) for k in linked):
                    continue
                if any(_must_differ_fails(values(i, za, k), values(j, zb, k)) for k in anti_keys):
                    continue
                pairs.append((za, zb))
        out[(i, j)] = pairs
    return out


def _must_differ_fails(va: set[str], vb: set[str]) -> bool:
    return not any(x != y for x in va for y in vb)


def selector_for(labels: Mapping[str, str], keys: Sequence[str]) -> LabelSelector:
    return LabelSelector(tuple(sorted((k, labels[k]) for k in keys if k in labels)))
