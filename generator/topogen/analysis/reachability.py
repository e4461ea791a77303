"""Who may talk to whom: the union of Cilium and Kubernetes policies, both ends checked.

For a path src -> dst the sender's egress and the receiver's ingress are each
evaluated: an endpoint not isolated in a direction allows everything; an
isolated one allows the union of its matching allow rules; deny rules
subtract from that, whatever allowed it. The path allows the intersection.

Everything is matched against identities as Cilium builds them
(topogen.cilium.identity): a pod's labels through the agent's label filter, with
its service account and cluster; a node as its own agent (reserved:host) or as
another node's (reserved:remote-node) sees it. The agent options of the policies'
cluster (PolicySet.cilium) apply: policy enforcement never / always, and host
policies only with the host firewall on.
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
from topogen.analysis.zonesymmetry import classes_of, zone_signatures
from topogen.cilium.entities import entities_select
from topogen.cilium.identity import (
    NAMESPACE_KEY,
    NODE_SOURCE_PREFIX,
    host_identity,
    pod_identity,
    pod_labels,
)
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
    "may_match_namespace",
    "pod_endpoint",
]


def pod_endpoint(
    labels: Mapping[str, str],
    namespace: str,
    namespaces: Mapping[str, Namespace],
    ports: tuple[tuple[str, int, str], ...] = (),
    service_account: str = "",
) -> Endpoint:
    """A pod: every label the agent derives for it (own labels, namespace and its labels,
    service account), before the label filter, which the index applies."""
    ns_labels = namespaces[namespace].labels if namespace in namespaces else {}
    identity = pod_labels(labels, namespace, ns_labels, service_account)
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
    always: bool = False  # default deny by the agent's policy-enforcement=always
    notes: tuple[str, ...] = ()  # what Cilium enforces here beyond L3/L4

    @property
    def isolated(self) -> bool:
        return bool(self.isolated_by) or self.always

    def isolators(self) -> str:
        who = [str(p) for p in self.isolated_by]
        if self.always:
            who.append("the agent's policy-enforcement=always")
        return ", ".join(who)


@dataclass(frozen=True)
class PathVerdict:
    egress: SideTrace
    ingress: SideTrace
    allowed: PortSet = field(default_factory=PortSet)

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(sorted({*self.egress.notes, *self.ingress.notes}))

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
            isolators = side.isolators()
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


def _open_side(direction: str) -> SideTrace:
    return SideTrace(direction, (), (), (), PortSet.everything(), (), False, (_LOOPBACK_NOTE,))


_LOOPBACK_NOTE = "both ends on one node: loopback traffic, which no policy filters"
_LOOPBACK = PathVerdict(_open_side("egress"), _open_side("ingress"), PortSet.everything())


class PolicyIndex:
    """Policies indexed for repeated path queries; results cached per endpoint pair."""

    def __init__(self, policies: PolicySet, namespaces: Mapping[str, Namespace]) -> None:
        self.policies = policies
        self.namespaces = namespaces
        self.cilium = policies.cilium
        self._by_direction: dict[str, list[PolicyRule]] = {"ingress": [], "egress": []}
        for rule in policies.rules:
            self._by_direction[rule.direction].append(rule)
        self._isolations: dict[str, list[Isolation]] = {"ingress": [], "egress": []}
        for iso in policies.isolations:
            self._isolations[iso.direction].append(iso)
        self._cache: dict[tuple[int, int, bool], PathVerdict] = {}
        self._subject_cache: dict[
            tuple[int, str], tuple[tuple[Isolation, ...], list[PolicyRule], tuple[str, ...]]
        ] = {}
        # endpoint identities interned to small ints; the Endpoint is kept so its id() is stable
        self._key_ids: dict[object, int] = {}
        self._ep_ids: dict[int, tuple[Endpoint, int]] = {}
        # identity endpoints per endpoint (hosts: as their own node's agent sees them, and
        # as another node's does)
        self._idents: dict[tuple[int, bool], tuple[Endpoint, Endpoint]] = {}
        # one trace per (subject, direction, matched rule peers, destination ports): the port
        # arithmetic runs once per distinct signature, not once per endpoint pair
        self._sides: dict[tuple[object, ...], SideTrace] = {}
        self._portsets: dict[PortSet, PortSet] = {}  # equal sides share one allowed PortSet
        self._meets: dict[tuple[int, int], PortSet] = {}  # (id(egress), id(ingress) allowed)
        self._peer_hits: dict[tuple[int, int, bool], bool] = {}  # (id(peer), key, local host)
        # per (subject, direction, namespace of the other end): the rules and peers that can
        # match there (peers pinned to other namespaces dropped), so a pair checks only those
        self._candidates: dict[tuple[int, str, str], list[tuple[PolicyRule, list[Peer]]]] = {}
        # endpoints are interned by what the selectors can see of them: the label keys any
        # selector reads, values it never names folded into one (so a per-job `app` value
        # or a node's hostname does not make a new identity); hosts without their node name
        # (verdicts between hosts carry a same-node flag instead)
        endpoint_peers = [
            p.selector for r in policies.rules for p in r.peers if p.kind != "entities"
        ]
        self._pod_view = label_view(
            [r.subject for r in policies.rules if not r.subject_host]
            + [i.subject for i in policies.isolations if not i.subject_host]
            + endpoint_peers
        )
        self._host_view = _raw_node_view(
            label_view(
                [r.subject for r in policies.rules if r.subject_host]
                + [i.subject for i in policies.isolations if i.subject_host]
                + endpoint_peers
            )
        )
        # rules and isolations by the endpoints they can select: (host, namespace) buckets,
        # within a bucket by one matchLabels pair of the subject selector
        self._rule_index = {d: SubjectIndex(self._by_direction[d]) for d in ("ingress", "egress")}
        self._iso_index = {d: SubjectIndex(self._isolations[d]) for d in ("ingress", "egress")}
        self._families: dict[tuple[int, ...], EndpointFamily] = {}
        self._family_of: dict[int, tuple[Sequence[Endpoint], EndpointFamily]] = {}
        self._peer_masks: dict[tuple[int, int], int] = {}
        self._zone_classes: dict[tuple[object, ...], tuple[int, ...]] = {}
        self._zone_signatures: dict[tuple[str, tuple[str, ...]], tuple[int, ...]] = {}

    def zone_classes(
        self, identity_label: str, zones: tuple[str, ...], fixed: frozenset[str]
    ) -> tuple[int, ...]:
        """zonesymmetry.classes_of these policies' zone signatures, each computed once."""
        key = (identity_label, zones, fixed)
        hit = self._zone_classes.get(key)
        if hit is None:
            # the signatures as the first zone of each (ints: comparing two signatures
            # compares every rule's form)
            signatures = self._zone_signatures.get((identity_label, zones))
            if signatures is None:
                signatures = self._zone_signatures[identity_label, zones] = classes_of(
                    zone_signatures(self.policies, identity_label, zones), zones, frozenset()
                )
            hit = self._zone_classes[key] = classes_of(signatures, zones, fixed)
        return hit

    def node_label_keys(self) -> set[str]:
        """Node label keys any host-facing selector reads (for grouping similar nodes)."""
        keys: set[str] = set()
        for rule in self.policies.rules:
            if rule.subject_host:
                keys |= rule.subject.keys()
            for peer in rule.peers:
                if peer.kind != "entities":
                    keys |= peer.selector.keys()
        return {k.removeprefix(NODE_SOURCE_PREFIX) for k in keys}

    def identity(self, ep: Endpoint, *, local: bool = True) -> Endpoint:
        """`ep` as Cilium's identity: a pod's labels filtered (plus cluster); a host as its
        own node's agent sees it (local) or another node's does."""
        local = local or not ep.host
        known = self._idents.get((id(ep), local))
        if known is not None and known[0] is ep:
            return known[1]
        if ep.host:
            labels = host_identity(ep.labels, self.cilium, local=local)
        else:
            labels = pod_identity(ep.labels, self.cilium)
        ident = Endpoint(ep.host, labels, ep.namespace, ep.ports, ep.node)
        self._idents[(id(ep), local)] = (ep, ident)
        return ident

    def verdict(self, src: Endpoint, dst: Endpoint) -> PathVerdict:
        src_key, dst_key = self._key(src), self._key(dst)
        same_node = src.host and dst.host and src.node == dst.node
        hit = self._cache.get((src_key, dst_key, same_node))
        if hit is None and same_node:
            # two hostNetwork processes of one node talk over loopback, which no Cilium
            # program sees: no policy applies (the host firewall is on the node's devices)
            hit = self._cache[(src_key, dst_key, True)] = _LOOPBACK
        if hit is None:
            egress = self._side(src, src_key, dst, dst_key, "egress", dst, same_node)
            ingress = self._side(dst, dst_key, src, src_key, "ingress", dst, same_node)
            both = (id(egress.allowed), id(ingress.allowed))  # interned in _trace
            allowed = self._meets.get(both)
            if allowed is None:
                allowed = self._meets[both] = egress.allowed.intersect(ingress.allowed)
            hit = self._cache[(src_key, dst_key, same_node)] = PathVerdict(egress, ingress, allowed)
        return hit

    def subject_rules(
        self, subject: Endpoint, direction: str
    ) -> tuple[tuple[Isolation, ...], list[PolicyRule]]:
        """What isolates the pod `subject` in `direction` and the rules selecting it there,
        under the agent's options (what verdict() reads for that side)."""
        isolations, rules, _ = self._selection(subject, self._key(subject), direction)
        return isolations, rules

    def side_open(self, subject: Endpoint, direction: str) -> bool:
        """Whether the pod `subject`'s side allows everything to every peer, with no note:
        nothing isolates or selects it there and the agent does not enforce always."""
        isolations, rules, notes = self._selection(subject, self._key(subject), direction)
        return not (isolations or rules or notes or self._always(subject))

    def peer_matches(self, peer: Peer, other: Endpoint) -> bool:
        """Whether `peer` matches the pod `other` (as verdict() matches it)."""
        hit_key = (id(peer), self._key(other), False)
        hit = self._peer_hits.get(hit_key)
        if hit is None:
            hit = self._peer_hits[hit_key] = self._peer_matches(peer, self.identity(other))
        return hit

    def side_trace(
        self,
        subject: Endpoint,
        direction: str,
        matched: Sequence[tuple[PolicyRule, Peer]],
        dst: Endpoint,
    ) -> SideTrace:
        """The pod `subject`'s side of a path to or from the pod `dst` on which exactly
        `matched` (each rule with its first matching peer, in rule order) match: the trace
        verdict() gives that side."""
        subject_key = self._key(subject)
        isolations, _, open_notes = self._selection(subject, subject_key, direction)
        signature = tuple(x for r, p in matched for x in (id(r), id(p)))
        key = (subject_key, direction, signature, dst.ports if matched else ())
        hit = self._sides.get(key)
        if hit is None:
            hit = self._sides[key] = self._trace(
                direction, isolations, list(matched), dst, self._always(subject), open_notes
            )
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
        """The isolations and rules whose subject selects `subject` (an identity)."""
        isolations = sorted(
            set(self._iso_index[direction].selecting(subject)),
            key=lambda i: (i.policy, i.index),
        )
        return tuple(isolations), self._rule_index[direction].selecting(subject)

    def _selection(
        self, subject: Endpoint, subject_key: int, direction: str
    ) -> tuple[tuple[Isolation, ...], list[PolicyRule], tuple[str, ...]]:
        """_subject_rules under the agent's options, and the notes of rules that select
        the subject on peers topogen cannot resolve."""
        key = (subject_key, direction)
        hit = self._subject_cache.get(key)
        if hit is None:
            enforced = self.cilium.policy_enforcement != "never" and (
                not subject.host or self.cilium.host_firewall
            )
            if enforced:
                isolations, rules = self._subject_rules(
                    self.identity(subject), subject_key, direction
                )
            else:
                isolations, rules = (), []
            open_notes = tuple(
                sorted(
                    {n for r in rules if any(p.kind == "cidr" for p in r.peers) for n in r.notes}
                )
            )
            hit = self._subject_cache[key] = (isolations, rules, open_notes)
        return hit

    def _always(self, subject: Endpoint) -> bool:
        return self.cilium.policy_enforcement == "always" and (
            not subject.host or self.cilium.host_firewall
        )

    def _candidates_for(
        self, subject_key: int, direction: str, namespace: str, rules: list[PolicyRule]
    ) -> list[tuple[PolicyRule, list[Peer]]]:
        cand_key = (subject_key, direction, namespace)
        candidates = self._candidates.get(cand_key)
        if candidates is None:
            candidates = self._candidates[cand_key] = [
                (r, ps)
                for r in rules
                if (ps := [p for p in r.peers if may_match_namespace(p, namespace)])
            ]
        return candidates

    def _side(
        self,
        subject: Endpoint,
        subject_key: int,
        peer: Endpoint,
        peer_key: int,
        direction: str,
        dst: Endpoint,
        same_node: bool,
    ) -> SideTrace:
        isolations, rules, open_notes = self._selection(subject, subject_key, direction)
        candidates = self._candidates_for(subject_key, direction, peer.namespace, rules)
        matched: list[tuple[PolicyRule, Peer]] = []
        signature: list[int] = []
        for rule, peers in candidates:
            for p in peers:
                hit_key = (id(p), peer_key, same_node and peer.host)
                hit_p = self._peer_hits.get(hit_key)
                if hit_p is None:
                    hit_p = self._peer_hits[hit_key] = self._peer_matches(
                        p, self.identity(peer, local=same_node)
                    )
                if hit_p:
                    matched.append((rule, p))
                    signature += (id(rule), id(p))
                    break
        key = (subject_key, direction, tuple(signature), dst.ports if matched else ())
        hit = self._sides.get(key)
        if hit is None:
            hit = self._sides[key] = self._trace(
                direction, isolations, matched, dst, self._always(subject), open_notes
            )
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
        known = self._family_of.get(id(others))
        if known is not None and known[0] is others:
            family = known[1]  # checked when first seen
        else:
            if any(
                o.host or o.namespace != first.namespace or o.ports != first.ports for o in others
            ):
                raise ValueError("side_groups needs pods of one namespace and one set of ports")
            family = self._family(others)
        subject_key = self._key(subject)
        isolations, rules, open_notes = self._selection(subject, subject_key, direction)
        candidates = self._candidates_for(subject_key, direction, first.namespace, rules)
        groups: list[tuple[int, tuple[int, ...], tuple[tuple[PolicyRule, Peer], ...]]] = [
            ((1 << len(others)) - 1, (), ())
        ]
        for rule, peers in candidates:
            split = []
            for mask, signature, matched in groups:
                rest = mask
                for p in peers:
                    hits = self._peer_mask(p, family) & rest
                    if hits:
                        split.append((hits, (*signature, id(rule), id(p)), (*matched, (rule, p))))
                        rest &= ~hits
                        if not rest:
                            break
                if rest:
                    split.append((rest, signature, matched))
            groups = split
        ports_of = first if direction == "egress" else subject
        always = self._always(subject)
        out = []
        for mask, signature, matched in groups:
            key = (subject_key, direction, signature, ports_of.ports if matched else ())
            trace = self._sides.get(key)
            if trace is None:
                trace = self._sides[key] = self._trace(
                    direction, isolations, list(matched), ports_of, always, open_notes
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

    def _peer_mask(self, p: Peer, family: EndpointFamily) -> int:
        """Positions of the family (pods) `p` matches."""
        key = (id(p), family.fid)
        hit = self._peer_masks.get(key)
        if hit is None:
            hit = 0
            for rep, mask in family.classes(p.selector):
                hit_key = (id(p), self._key(rep), False)
                m = self._peer_hits.get(hit_key)
                if m is None:
                    m = self._peer_hits[hit_key] = self._peer_matches(p, self.identity(rep))
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
        always: bool,
        open_notes: tuple[str, ...],
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
        if isolated_by or always:
            allowed = PortSet()
            for a in allows:
                allowed = allowed.union(a.ports)
        for d in denies:
            allowed = allowed.minus(d.ports)
        allowed = self._portsets.setdefault(allowed, allowed)
        notes = {n for a in allows if not a.ports.empty for n in a.rule.notes}
        return SideTrace(
            direction,
            isolated_by,
            tuple(allows),
            tuple(denies),
            allowed,
            isolations,
            always,
            tuple(sorted(notes | set(open_notes))),
        )

    def _peer_matches(self, peer: Peer, other: Endpoint) -> bool:
        """Whether a rule's peer selects `other` (an identity, as the subject's agent sees it)."""
        if peer.kind == "cidr":
            return False  # CIDR rules never match Cilium-managed endpoints
        if peer.kind == "entities":
            return entities_select(peer.entities, other.labels, self.cilium.cluster_name)
        return peer.selector.matches(other.labels)


def _raw_node_view(view: dict[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    """A label view over a node's own labels (a remote node's are read as `node:<key>`)."""
    out: dict[str, frozenset[str]] = {}
    for k, values in view.items():
        raw = k.removeprefix(NODE_SOURCE_PREFIX)
        out[raw] = out.get(raw, frozenset()) | values
    return out


def may_match_namespace(peer: Peer, namespace: str) -> bool:
    """False when the peer can only match pods of other namespaces (hosts have namespace "")."""
    if peer.kind != "endpoints":
        return True
    for key, value in peer.selector.match_labels:
        if key == NAMESPACE_KEY and value != namespace:
            return False
    return True
