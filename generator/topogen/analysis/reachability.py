"""Who may talk to whom: the union of Cilium and Kubernetes policies, both ends checked.

For a path src -> dst the sender's egress and the receiver's ingress are each
evaluated: an endpoint not isolated in a direction allows everything; an
isolated one allows the union of its matching allow rules; deny rules
subtract from that, whatever allowed it. The path allows the intersection.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from topogen.analysis.ports import PortSet
from topogen.analysis.selection import (
    OTHER_VALUE,
    EndpointFamily,
    SubjectIndex,
    label_view,
)
from topogen.cilium.entities import entities_select
from topogen.cilium.identity import NAMESPACE_KEY, pod_identity_labels
from topogen.cilium.selectors import selects_host
from topogen.model import (
    Endpoint,
    Isolation,
    Namespace,
    Peer,
    PolicyRef,
    PolicyRule,
    PolicySet,
)

__all__ = [
    "PathVerdict",
    "PolicyIndex",
    "RuleMatch",
    "SideTrace",
    "host_endpoint",
    "pod_endpoint",
]


def pod_endpoint(
    labels: Mapping[str, str],
    namespace: str,
    namespaces: Mapping[str, Namespace],
    ports: tuple[tuple[str, int, str], ...] = (),
) -> Endpoint:
    """A pod's identity: its labels, its namespace and its namespace's labels (Cilium keys)."""
    ns_labels = (
        namespaces[namespace].labels
        if namespace in namespaces
        else {"kubernetes.io/metadata.name": namespace}
    )
    identity = pod_identity_labels(labels, namespace, ns_labels)
    return Endpoint(host=False, labels=identity, namespace=namespace, ports=ports)


def host_endpoint(
    node_name: str, node_labels: Mapping[str, str], ports: tuple[tuple[str, int, str], ...] = ()
) -> Endpoint:
    """A node (and the hostNetwork pods on it)."""
    return Endpoint(host=True, labels=dict(node_labels), node=node_name, ports=ports)


@dataclass(frozen=True)
class RuleMatch:
    rule: PolicyRule
    peer: Peer
    ports: PortSet

    def describe(self) -> str:
        r = self.rule
        return f"{r.policy} rule {r.index} {r.section}[{r.item}] ({self.peer}) ports {self.ports}"


@dataclass(frozen=True)
class SideTrace:
    """One end of a path: the sender's egress or the receiver's ingress."""

    direction: str
    isolated_by: tuple[PolicyRef, ...]
    allows: tuple[RuleMatch, ...]
    denies: tuple[RuleMatch, ...]
    allowed: PortSet
    isolations: tuple[Isolation, ...] = ()  # the rules behind isolated_by (with rule index)

    @property
    def isolated(self) -> bool:
        return bool(self.isolated_by)


@dataclass(frozen=True)
class PathVerdict:
    egress: SideTrace
    ingress: SideTrace
    allowed: PortSet = field(default_factory=PortSet)

    def permits(self, required: PortSet) -> bool:
        return self.allowed.covers(required)

    def blockers(self, required: PortSet) -> list[str]:
        """Why `required` is not allowed: the deny rules, or the isolating policies."""
        reasons: list[str] = []
        for side, who in ((self.egress, "sender egress"), (self.ingress, "receiver ingress")):
            if side.allowed.covers(required):
                continue
            denying = [d for d in side.denies if not d.ports.intersect(required).empty]
            if denying:
                reasons.extend(f"{who} denied by {d.describe()}" for d in denying)
                continue
            isolators = ", ".join(str(p) for p in side.isolated_by)
            if side.allows:
                got = side.allows[0].ports
                for a in side.allows[1:]:
                    got = got.union(a.ports)
                reasons.append(f"{who}: only {got} allowed (isolated by {isolators})")
            else:
                reasons.append(f"{who}: default deny, no rule allows it (isolated by {isolators})")
        return reasons

    def blocking_policies(self, required: PortSet) -> list[PolicyRef]:
        out: list[PolicyRef] = []
        for side in (self.egress, self.ingress):
            if side.allowed.covers(required):
                continue
            denying = [d.rule.policy for d in side.denies if not d.ports.intersect(required).empty]
            out.extend(denying or side.isolated_by)
        return sorted(set(out))


class PolicyIndex:
    """Policies indexed for repeated path queries; results cached per endpoint pair."""

    def __init__(self, policies: PolicySet, namespaces: Mapping[str, Namespace]) -> None:
        self.policies = policies
        self.namespaces = namespaces
        self._by_direction: dict[str, list[PolicyRule]] = {"ingress": [], "egress": []}
        for rule in policies.rules:
            self._by_direction[rule.direction].append(rule)
        self._isolations: dict[str, list[Isolation]] = {"ingress": [], "egress": []}
        for iso in policies.isolations:
            self._isolations[iso.direction].append(iso)
        self._cache: dict[tuple[int, int, bool], PathVerdict] = {}
        self._subject_cache: dict[
            tuple[int, str], tuple[tuple[Isolation, ...], list[PolicyRule]]
        ] = {}
        # endpoint identities interned to small ints; the Endpoint is kept so its id() is stable
        self._key_ids: dict[object, int] = {}
        self._ep_ids: dict[int, tuple[Endpoint, int]] = {}
        # one trace per (subject, direction, matched rule peers, destination ports): the port
        # arithmetic runs once per distinct signature, not once per endpoint pair
        self._sides: dict[tuple[object, ...], SideTrace] = {}
        self._portsets: dict[PortSet, PortSet] = {}  # equal sides share one allowed PortSet
        self._meets: dict[tuple[int, int], PortSet] = {}  # (id(egress), id(ingress) allowed)
        self._peer_hits: dict[tuple[int, int], bool] = {}  # (id(peer), endpoint key)
        # per (subject, direction, namespace of the other end): the rules and peers that can
        # match there (peers pinned to other namespaces dropped), so a pair checks only those
        self._candidates: dict[tuple[int, str, str], list[tuple[PolicyRule, list[Peer]]]] = {}
        # endpoints are interned by what the selectors can see of them: the label keys any
        # selector reads, values it never names folded into one (so a per-job `app` value
        # or a node's hostname does not make a new identity); hosts without their node name
        # (verdicts between hosts carry a same-node flag instead)
        self._pod_view = label_view(
            [r.subject for r in policies.rules if not r.subject_host]
            + [i.subject for i in policies.isolations if not i.subject_host]
            + [p.selector for r in policies.rules for p in r.peers if p.kind == "endpoints"]
        )
        self._host_view = label_view(
            [r.subject for r in policies.rules if r.subject_host]
            + [i.subject for i in policies.isolations if i.subject_host]
            + [p.selector for r in policies.rules for p in r.peers if p.kind == "nodes"]
        )
        # rules and isolations by the endpoints they can select: (host, namespace) buckets,
        # within a bucket by one matchLabels pair of the subject selector
        self._rule_index = {d: SubjectIndex(self._by_direction[d]) for d in ("ingress", "egress")}
        self._iso_index = {d: SubjectIndex(self._isolations[d]) for d in ("ingress", "egress")}
        self._families: dict[tuple[int, ...], EndpointFamily] = {}
        self._family_of: dict[int, tuple[Sequence[Endpoint], EndpointFamily]] = {}
        self._peer_masks: dict[tuple[int, int], int] = {}

    def node_label_keys(self) -> set[str]:
        """Node label keys any host-facing selector reads (for grouping similar nodes)."""
        keys: set[str] = set()
        for rule in self.policies.rules:
            if rule.subject_host:
                keys |= rule.subject.keys()
            for peer in rule.peers:
                if peer.kind == "nodes":
                    keys |= peer.selector.keys()
        return keys

    def verdict(self, src: Endpoint, dst: Endpoint) -> PathVerdict:
        src_key, dst_key = self._key(src), self._key(dst)
        same_node = src.host and dst.host and src.node == dst.node
        hit = self._cache.get((src_key, dst_key, same_node))
        if hit is None:
            egress = self._side(src, src_key, dst, dst_key, "egress", dst)
            ingress = self._side(dst, dst_key, src, src_key, "ingress", dst)
            both = (id(egress.allowed), id(ingress.allowed))  # interned in _trace
            allowed = self._meets.get(both)
            if allowed is None:
                allowed = self._meets[both] = egress.allowed.intersect(ingress.allowed)
            hit = self._cache[(src_key, dst_key, same_node)] = PathVerdict(egress, ingress, allowed)
        return hit

    def identity_key(self, ep: Endpoint) -> int:
        """A small int naming what the policies can see of an endpoint: equal keys, equal
        verdicts (for hosts, together with whether both ends are the same node)."""
        return self._key(ep)

    def _key(self, ep: Endpoint) -> int:
        known = self._ep_ids.get(id(ep))
        if known is not None and known[0] is ep:
            return known[1]
        n = self._key_ids.setdefault(self._ep_key(ep), len(self._key_ids))
        self._ep_ids[id(ep)] = (ep, n)
        return n

    def _subject_rules(
        self, subject: Endpoint, subject_key: int, direction: str
    ) -> tuple[tuple[Isolation, ...], list[PolicyRule]]:
        key = (subject_key, direction)
        hit = self._subject_cache.get(key)
        if hit is None:
            isolations = sorted(
                set(self._iso_index[direction].selecting(subject)),
                key=lambda i: (i.policy, i.index),
            )
            rules = self._rule_index[direction].selecting(subject)
            hit = (tuple(isolations), rules)
            self._subject_cache[key] = hit
        return hit

    def _side(
        self,
        subject: Endpoint,
        subject_key: int,
        peer: Endpoint,
        peer_key: int,
        direction: str,
        dst: Endpoint,
    ) -> SideTrace:
        isolations, rules = self._subject_rules(subject, subject_key, direction)
        cand_key = (subject_key, direction, peer.namespace)
        candidates = self._candidates.get(cand_key)
        if candidates is None:
            candidates = self._candidates[cand_key] = [
                (r, ps)
                for r in rules
                if (ps := [p for p in r.peers if _may_match_namespace(p, peer.namespace)])
            ]
        matched: list[tuple[PolicyRule, Peer]] = []
        signature: list[int] = []
        hit_p: bool | None
        for rule, peers in candidates:
            for p in peers:
                if p.kind == "entities" and peer.host:  # depends on the subject's node
                    hit_p = self._peer_matches(p, peer, subject)
                else:
                    hit_p = self._peer_hits.get((id(p), peer_key))
                    if hit_p is None:
                        hit_p = self._peer_hits[(id(p), peer_key)] = self._peer_matches(
                            p, peer, subject
                        )
                if hit_p:
                    matched.append((rule, p))
                    signature += (id(rule), id(p))
                    break
        key = (subject_key, direction, tuple(signature), dst.ports if matched else ())
        hit = self._sides.get(key)
        if hit is None:
            hit = self._sides[key] = self._trace(direction, isolations, matched, dst)
        return hit

    def side_groups(
        self, subject: Endpoint, direction: str, others: Sequence[Endpoint]
    ) -> list[tuple[int, SideTrace]]:
        """`subject`'s side of a path with each of `others`, many at once.

        egress: subject -> others[i]; ingress: others[i] -> subject. `others` are pods of
        one namespace exposing the same ports (typically one pod identity in every zone).
        Returns (bitmask of positions in `others`, trace): disjoint masks covering every
        position, each trace the one verdict() puts on that side of those paths.
        """
        if not others:
            return []
        first = others[0]
        if any(o.host or o.namespace != first.namespace or o.ports != first.ports for o in others):
            raise ValueError("side_groups needs pods of one namespace and one set of ports")
        subject_key = self._key(subject)
        isolations, rules = self._subject_rules(subject, subject_key, direction)
        cand_key = (subject_key, direction, first.namespace)
        candidates = self._candidates.get(cand_key)
        if candidates is None:
            candidates = self._candidates[cand_key] = [
                (r, ps)
                for r in rules
                if (ps := [p for p in r.peers if _may_match_namespace(p, first.namespace)])
            ]
        family = self._family(others)
        groups: list[tuple[int, tuple[int, ...], tuple[tuple[PolicyRule, Peer], ...]]] = [
            ((1 << len(others)) - 1, (), ())
        ]
        for rule, peers in candidates:
            split = []
            for mask, signature, matched in groups:
                rest = mask
                for p in peers:
                    hits = self._peer_mask(p, family, subject) & rest
                    if hits:
                        split.append((hits, (*signature, id(rule), id(p)), (*matched, (rule, p))))
                        rest &= ~hits
                        if not rest:
                            break
                if rest:
                    split.append((rest, signature, matched))
            groups = split
        ports_of = first if direction == "egress" else subject
        out = []
        for mask, signature, matched in groups:
            key = (subject_key, direction, signature, ports_of.ports if matched else ())
            trace = self._sides.get(key)
            if trace is None:
                trace = self._sides[key] = self._trace(
                    direction, isolations, list(matched), ports_of
                )
            out.append((mask, trace))
        return out

    def _family(self, others: Sequence[Endpoint]) -> EndpointFamily:
        known = self._family_of.get(id(others))
        if known is not None and known[0] is others:
            return known[1]
        ids = tuple(self._key(o) for o in others)
        hit = self._families.get(ids)
        if hit is None:
            hit = self._families[ids] = EndpointFamily.of(len(self._families), others)
        self._family_of[id(others)] = (others, hit)
        return hit

    def _peer_mask(self, p: Peer, family: EndpointFamily, subject: Endpoint) -> int:
        """Positions of the family `p` matches (pods: never dependent on the subject)."""
        key = (id(p), family.fid)
        hit = self._peer_masks.get(key)
        if hit is None:
            hit = 0
            for rep, mask in family.classes(p.selector):
                rep_key = self._key(rep)
                m = self._peer_hits.get((id(p), rep_key))
                if m is None:
                    m = self._peer_hits[(id(p), rep_key)] = self._peer_matches(p, rep, subject)
                if m:
                    hit |= mask
            self._peer_masks[key] = hit
        return hit

    def _ep_key(self, ep: Endpoint) -> object:
        view = self._host_view if ep.host else self._pod_view
        labels = tuple(
            sorted(
                (k, v if v in named else OTHER_VALUE)
                for k, v in ep.labels.items()
                if (named := view.get(k)) is not None
            )
        )
        return (ep.host, ep.namespace, labels, ep.ports)

    def _trace(
        self,
        direction: str,
        isolations: tuple[Isolation, ...],
        matched: list[tuple[PolicyRule, Peer]],
        dst: Endpoint,
    ) -> SideTrace:
        isolated_by = tuple(sorted({i.policy for i in isolations}))
        named = {(name, proto): port for name, port, proto in dst.ports if name}
        allows: list[RuleMatch] = []
        denies: list[RuleMatch] = []
        for rule, p in matched:
            ports = (
                PortSet.everything()
                if rule.ports is None
                else PortSet.from_ranges(rule.ports, named)
            )
            (denies if rule.deny else allows).append(RuleMatch(rule, p, ports))
        allowed = PortSet.everything()
        if isolated_by:
            allowed = PortSet()
            for a in allows:
                allowed = allowed.union(a.ports)
        for d in denies:
            allowed = allowed.minus(d.ports)
        allowed = self._portsets.setdefault(allowed, allowed)
        return SideTrace(direction, isolated_by, tuple(allows), tuple(denies), allowed, isolations)

    def _peer_matches(self, peer: Peer, other: Endpoint, subject: Endpoint) -> bool:
        if peer.kind == "cidr":
            return False  # CIDR rules never match Cilium-managed endpoints
        if peer.kind == "entities":
            same_node = other.host and subject.host and subject.node == other.node
            return entities_select(peer.entities, host=other.host, same_node=same_node)
        if peer.kind == "nodes":
            return other.host and peer.selector.matches(other.labels)
        # endpoints
        if other.host:
            # only reserved identity labels can select a host from an endpoint selector
            if peer.namespace_selector is not None or peer.namespace is not None:
                return False
            return selects_host(peer.selector)
        if peer.namespace_selector is not None:
            ns = self.namespaces.get(other.namespace)
            ns_labels = ns.labels if ns else {"kubernetes.io/metadata.name": other.namespace}
            return peer.namespace_selector.matches(ns_labels) and peer.selector.matches(
                other.labels
            )
        if peer.namespace is not None and other.namespace != peer.namespace:
            return False
        return peer.selector.matches(other.labels)


def _may_match_namespace(peer: Peer, namespace: str) -> bool:
    """False when the peer can only match pods of other namespaces (hosts have namespace "")."""
    if peer.kind != "endpoints" or peer.namespace_selector is not None:
        return True
    if peer.namespace is not None:
        return peer.namespace == namespace
    for key, value in peer.selector.match_labels:
        if key == NAMESPACE_KEY:
            return value == namespace
    return True
