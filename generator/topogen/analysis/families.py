"""Identity families and their blocked-path matrices: the shared work of the path analysis.

A member's network identity in every zone is a Family (interned by what the policies can
see of it); between two families a Matrix says which (source zone, destination zone)
paths are blocked, and by which policies, as bit rows. The Engine holds both for one
cluster, identity label and set of ports (zonepaths.py has the overview).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from topogen.analysis.affinityrows import linked_rows
from topogen.analysis.bits import bits, transpose
from topogen.analysis.paths import BlockedPath, PathSummary, SplitSummary
from topogen.analysis.placed import Placement
from topogen.analysis.ports import PortSet
from topogen.analysis.reachability import (
    PathVerdict,
    PolicyIndex,
    SideTrace,
    host_endpoint,
    pod_endpoint,
)
from topogen.analysis.zonesymmetry import identity_values, swapped
from topogen.model import (
    NO_ZONE_PREFIX,
    Endpoint,
    Namespace,
    Node,
    PodAffinityTerm,
    PolicyRef,
    Topology,
)

if TYPE_CHECKING:
    from topogen.analysis.placement import PinnedPlacements

__all__ = ["Engine", "Family", "Matrix", "Side", "possible_rows"]


@dataclass(frozen=True)
class Family:
    """The network identities of one member in every zone of the cluster."""

    fid: int
    eps: tuple[tuple[Endpoint, ...], ...]  # per zone index; () where it has none
    valid: int  # zone indices with endpoints
    pods: bool  # one pod endpoint per zone, all of one namespace and ports
    keys: tuple[int, ...]  # per zone: names its endpoints' (identity key, node) pairs
    ids: tuple[int, ...]  # per zone: names its endpoints' identity keys (nodes aside)
    heads: tuple[Endpoint, ...]  # pods: the endpoint in each zone
    # one pod's labels with the identity label set to each zone (zonesymmetry.py)
    stamped: bool = False


@dataclass
class Matrix:
    """BlockedPath paths from family A to family B, as bit rows over zone indices."""

    blocked: list[int]  # [source zone] -> destination zones
    blocked_t: list[int]  # [destination zone] -> source zones
    row_policies: list[tuple[tuple[PolicyRef, ...], list[int]]]  # cells by rows
    col_policies: list[tuple[tuple[PolicyRef, ...], list[int]]]  # cells by columns
    diagonal: int | None = None  # zones z with (z, z) blocked, once asked for


@dataclass(frozen=True)
class Side:
    """A member as the path analysis sees it."""

    role: str
    replicas: int
    zones: int  # zone indices of its placement
    family: Family
    placement: Placement
    namespace: str
    labels: Mapping[str, str]
    pod_affinity: tuple[PodAffinityTerm, ...]


class Engine:
    """Families, matrices and caches for one cluster, identity label and set of ports."""

    def __init__(
        self,
        topology: Topology,
        index: PolicyIndex,
        namespaces: Mapping[str, Namespace],
        identity_label: str | None,
        required: PortSet,
        node_keys: set[str],
    ) -> None:
        self.topology = topology
        self.index = index
        self.namespaces = namespaces
        self.identity_label = identity_label
        self.required = required
        self.node_keys = node_keys
        self._node_keys = sorted(node_keys)
        self.zones = topology.zones
        self.zone_index = {z: i for i, z in enumerate(self.zones)}
        self.n = len(self.zones)
        self._families: dict[object, Family] = {}
        self._by_keys: dict[tuple[int, ...], Family] = {}
        # JobPaths' summaries by job signature: jobs of the same shape share them
        self.summaries: dict[tuple[object, ...], PathSummary] = {}
        self.splits: dict[tuple[object, ...], SplitSummary] = {}
        # a pinned job's blocked paths in a domain, by what decides them (domains._shape)
        self.domain_blocked: dict[
            tuple[object, ...], tuple[tuple[str, ...], frozenset[str]] | None
        ] = {}
        self._described: dict[tuple[object, ...], tuple[str, tuple[str, ...]]] = {}
        self._possible: dict[tuple[object, ...], list[int]] = {}
        # possible_rows' results by content: one list for equal rows, so what is keyed by
        # the rows' identity (JobPaths.signature, transposed) is shared by equal rows
        self._rows_alike: dict[tuple[int, ...], list[int]] = {}
        # labels mapping (by identity, kept alive here) -> (namespace, ports, stamped) -> family
        self._by_labels: dict[int, tuple[Mapping[str, str], dict[object, Family]]] = {}
        self._matrices: dict[tuple[int, int], Matrix] = {}
        # _generic_matrix's cells across zones, by the families' identities
        self._across: dict[
            tuple[object, ...], tuple[list[int], dict[tuple[PolicyRef, ...], list[int]]]
        ] = {}
        self._covers: dict[int, bool] = {}
        self._side_policies: dict[int, tuple[PolicyRef, ...]] = {}
        self._groups: dict[tuple[int, str, int], list[tuple[int, int, tuple[PolicyRef, ...]]]] = {}
        self._cells: dict[tuple[int, int], tuple[PolicyRef, ...] | None] = {}
        self._sides: dict[int, tuple[bool, tuple[PolicyRef, ...]]] = {}
        self._zone_ids: dict[tuple[tuple[int, str], ...], int] = {}
        self._whys: dict[int, tuple[tuple[str, ...], tuple[PolicyRef, ...]]] = {}
        self._values: dict[tuple[int, str, str], frozenset[str]] = {}
        self._uniform: dict[str, list[frozenset[str] | None]] = {}
        self._pinned_values: dict[tuple[int, int, str, str], frozenset[str]] = {}
        self._keep: list[object] = []  # objects whose id() is part of a cache key
        # id(node) -> (node, its values of the node label keys host selectors read)
        self._projections: dict[int, tuple[Node, tuple[str | None, ...]]] = {}
        self._host_sets: dict[tuple[object, ...], tuple[Endpoint, ...]] = {}  # _hosts
        self._transposed: dict[int, tuple[list[int], list[int]]] = {}
        # rows of zones the policies cannot tell apart computed once (zonesymmetry.py); off
        # only to check that shortcut against the rows computed zone by zone
        self.symmetric = True

    # --- families ----------------------------------------------------------------------

    def zones_mask(self, zones: Sequence[str]) -> int:
        m = 0
        for z in zones:
            m |= 1 << self.zone_index[z]
        return m

    def pod_family(
        self,
        labels: Mapping[str, str],
        namespace: str,
        ports: tuple[tuple[str, int, str], ...],
        stamped: bool,
        service_account: str = "",
    ) -> Family:
        """A pod's identities per zone: `labels`, plus identity label = zone when stamped."""
        known = self._by_labels.get(id(labels))
        if known is not None and known[0] is labels:
            hit = known[1].get((namespace, ports, stamped, service_account))
            if hit is not None:
                return hit
        base = pod_endpoint(labels, namespace, self.namespaces, ports, service_account)
        key = ("pod", stamped, self.index.identity_key(base))
        hit = self._families.get(key)
        if hit is None:
            ident = self.identity_label
            eps: list[tuple[Endpoint, ...]] = []
            for z in self.zones:
                if stamped and ident and not z.startswith(NO_ZONE_PREFIX):
                    stamped_labels = dict(labels)
                    stamped_labels[ident] = z
                    eps.append(
                        (
                            pod_endpoint(
                                stamped_labels, namespace, self.namespaces, ports, service_account
                            ),
                        )
                    )
                else:
                    eps.append((base,))
            hit = self._families[key] = self._family(
                tuple(eps), (1 << self.n) - 1, True, stamped=bool(stamped and ident)
            )
        self._by_labels.setdefault(id(labels), (labels, {}))[1][
            (namespace, ports, stamped, service_account)
        ] = hit
        return hit

    def _family(
        self,
        eps: tuple[tuple[Endpoint, ...], ...],
        valid: int,
        pods: bool,
        stamped: bool = False,
    ) -> Family:
        key = self.index.identity_key
        ids = self._zone_ids
        keys = tuple(
            ids.setdefault(tuple((key(e), e.node) for e in zone_eps), len(ids)) if zone_eps else -1
            for zone_eps in eps
        )
        bare = tuple(
            ids.setdefault(tuple((key(e), "") for e in zone_eps), len(ids)) if zone_eps else -1
            for zone_eps in eps
        )
        heads = tuple(e[0] for e in eps) if pods else ()
        return Family(len(self._families), eps, valid, pods, keys, bare, heads, stamped)

    def host_family(self, placement: Placement, ports: tuple[tuple[str, int, str], ...]) -> Family:
        """A hostNetwork member's identities: per zone, one host per group of similar nodes."""
        key = ("host", id(placement), ports)
        hit = self._families.get(key)
        if hit is None:
            self._keep.append(placement)
            hit = self._families[key] = self._hosts_by_zone(placement.by_zone, ports)
        return hit

    def pinned_host_family(
        self, pinned: PinnedPlacements, d: int, ports: tuple[tuple[str, int, str], ...]
    ) -> Family:
        """host_family(pinned[d], ports), without building pinned[d]."""
        key = ("pinned hosts", id(pinned), d, ports)
        hit = self._families.get(key)
        if hit is None:
            self._keep.append(pinned)
            by_zone: dict[str, list[Node]] = {}
            for n in pinned.nodes(d):
                by_zone.setdefault(n.zone, []).append(n)
            hit = self._families[key] = self._hosts_by_zone(by_zone, ports)
        return hit

    def _hosts_by_zone(
        self, by_zone: Mapping[str, Sequence[Node]], ports: tuple[tuple[str, int, str], ...]
    ) -> Family:
        """The host family of these nodes (grouped by zone, in topology order)."""
        eps: list[tuple[Endpoint, ...]] = [()] * self.n
        valid = 0
        for z, nodes in by_zone.items():
            i = self.zone_index[z]
            eps[i] = self._hosts(nodes, ports)
            valid |= 1 << i
        return self._shared(self._family(tuple(eps), valid, False))

    def _shared(self, family: Family) -> Family:
        """One family for every placement giving the same hosts in every zone."""
        return self._by_keys.setdefault(family.keys, family)

    def host_family_in_zones(
        self,
        pinned: PinnedPlacements,
        zones: Sequence[str],
        ports: tuple[tuple[str, int, str], ...],
    ) -> Family:
        """Like host_family, with the template pinned to each zone (`pinned`: over the
        one-zone domains of `zones`, their placements' nodes read without building them)."""
        key = ("hosts", id(pinned), ports)
        hit = self._families.get(key)
        if hit is None:
            self._keep.append(pinned)
            eps: list[tuple[Endpoint, ...]] = [()] * self.n
            valid = 0
            for d, z in enumerate(zones):
                i = self.zone_index[z]
                eps[i] = self._hosts(pinned.nodes(d), ports)
                if eps[i]:
                    valid |= 1 << i
            hit = self._families[key] = self._shared(self._family(tuple(eps), valid, False))
        return hit

    def _hosts(
        self, nodes: Sequence[Node], ports: tuple[tuple[str, int, str], ...]
    ) -> tuple[Endpoint, ...]:
        """One host endpoint per group of nodes host-facing selectors cannot tell apart;
        the same nodes (the topology's, alive for the run: by identity) give the same."""
        key = (ports, *map(id, nodes))
        done = self._host_sets.get(key)
        if done is not None:
            return done
        seen: dict[tuple[str | None, ...], Endpoint] = {}
        keys = self._node_keys
        known = self._projections
        for node in nodes:
            hit = known.get(id(node))
            if hit is None or hit[0] is not node:
                labels = node.labels
                hit = known[id(node)] = (node, tuple([labels.get(k) for k in keys]))
            proj = hit[1]
            if proj not in seen:
                seen[proj] = host_endpoint(node.name, node.labels, ports)
        done = self._host_sets[key] = tuple(seen.values())
        return done

    def transposed(self, rows: list[int]) -> list[int]:
        """transpose(rows) of rows this engine keeps (possible_rows), computed once."""
        hit = self._transposed.get(id(rows))
        if hit is None or hit[0] is not rows:
            hit = self._transposed[id(rows)] = (rows, transpose(rows, self.n))
        return hit[1]

    # --- one path ----------------------------------------------------------------------

    def _permits(self, verdict: PathVerdict) -> bool:
        key = id(verdict.allowed)
        hit = self._covers.get(key)
        if hit is None:
            self._keep.append(verdict.allowed)
            hit = self._covers[key] = verdict.allowed.covers(self.required)
        return hit

    def cell(self, a: Side, za: int, b: Side, zb: int) -> BlockedPath | None:
        """The first blocked endpoint pair of this zone pair (AnalysisContext.check_path)."""
        return self.cell_of(a.role, a.family, za, b.role, b.family, zb)

    def cell_of(
        self, role_a: str, fa: Family, za: int, role_b: str, fb: Family, zb: int
    ) -> BlockedPath | None:
        for src in fa.eps[za]:
            for dst in fb.eps[zb]:
                verdict = self.index.verdict(src, dst)
                if not self._permits(verdict):
                    reasons, policies = self._why(verdict)
                    return BlockedPath(
                        role_a, role_b, self.zones[za], self.zones[zb], reasons, policies
                    )
        return None

    def described_cell(
        self, role_a: str, fa: Family, za: int, role_b: str, fb: Family, zb: int
    ) -> tuple[str, tuple[str, ...]]:
        """A blocked cell as BlockedPath.describe() puts it, and its policies as text."""
        key = (role_a, fa.fid, za, role_b, fb.fid, zb)
        hit = self._described.get(key)
        if hit is None:
            cell = self.cell_of(role_a, fa, za, role_b, fb, zb)
            assert cell is not None, "a blocked cell has a blocking endpoint pair"
            text = (
                f"{cell.src_role} ({cell.src_zone}) -> {cell.dst_role} ({cell.dst_zone}): "
                + "; ".join(cell.reasons)
            )
            hit = self._described[key] = (text, tuple(str(p) for p in cell.policies))
        return hit

    def _why(self, verdict: PathVerdict) -> tuple[tuple[str, ...], tuple[PolicyRef, ...]]:
        hit = self._whys.get(id(verdict))
        if hit is None:
            self._keep.append(verdict)
            hit = self._whys[id(verdict)] = (
                tuple(verdict.blockers(self.required)),
                tuple(verdict.blocking_policies(self.required)),
            )
        return hit

    def _generic_cell(
        self, fa: Family, za: int, fb: Family, zb: int
    ) -> tuple[PolicyRef, ...] | None:
        """The blocking policies of the first blocked endpoint pair, or None."""
        # ends in different zones are never the same node: the identities decide
        key = (fa.ids[za], fb.ids[zb]) if za != zb else (fa.keys[za], fb.keys[zb])
        if key in self._cells:
            return self._cells[key]
        out = None
        for src in fa.eps[za]:
            for dst in fb.eps[zb]:
                ok, policies = self._blocking(self.index.verdict(src, dst))
                if not ok:
                    out = policies
                    break
            if out is not None:
                break
        self._cells[key] = out
        return out

    def _side_block(self, trace: SideTrace) -> tuple[bool, tuple[PolicyRef, ...]]:
        """(does this side allow the required ports, the policies blocking them if not)."""
        tid = id(trace)
        hit = self._sides.get(tid)
        if hit is None:
            self._keep.append(trace)
            ok = trace.allowed.covers(self.required)
            policies: tuple[PolicyRef, ...] = ()
            if not ok:
                denying = [
                    d.rule.policy
                    for d in trace.denies
                    if not d.ports.intersect(self.required).empty
                ]
                policies = tuple(sorted(set(denying or trace.isolated_by)))
            hit = self._sides[tid] = (ok, policies)
        return hit

    def _blocking(self, verdict: PathVerdict) -> tuple[bool, tuple[PolicyRef, ...]]:
        """(permits, PathVerdict.blocking_policies) from the two sides' cached answers."""
        ok_e, pe = self._side_block(verdict.egress)
        ok_i, pi = self._side_block(verdict.ingress)
        if ok_e and ok_i:
            return True, ()
        return False, tuple(sorted({*pe, *pi}))

    # --- matrices ----------------------------------------------------------------------

    def matrix(self, fa: Family, fb: Family) -> Matrix:
        key = (fa.fid, fb.fid)
        hit = self._matrices.get(key)
        if hit is None:
            hit = self._matrices[key] = (
                self._pod_matrix(fa, fb) if fa.pods and fb.pods else self._generic_matrix(fa, fb)
            )
        return hit

    def diagonal(self, fa: Family, fb: Family) -> int:
        """Zones z where the path from fa in z to fb in z is blocked."""
        m = self.matrix(fa, fb)
        if m.diagonal is None:
            m.diagonal = sum(1 << z for z, row in enumerate(m.blocked) if row >> z & 1)
        return m.diagonal

    def _side_groups(
        self, subject: Endpoint, direction: str, others: Family
    ) -> list[tuple[int, int, tuple[PolicyRef, ...]]]:
        """(positions, ok, blocking policies) of one side against a whole family."""
        key = (self.index.identity_key(subject), direction, others.fid)
        hit = self._groups.get(key)
        if hit is None:
            hit = []
            members = others.heads
            for mask, trace in self.index.side_groups(subject, direction, members):
                ok, policies = self._side_block(trace)
                hit.append((mask, int(ok), policies))
            self._groups[key] = hit
        return hit

    def _side_fails(
        self, fam: Family, direction: str, others: Family
    ) -> tuple[list[int], dict[tuple[PolicyRef, ...], list[int]]]:
        """Per zone of `fam`: the zones of `others` its side denies, in all and by policies."""
        n = self.n
        fails = [0] * n
        by_policies: dict[tuple[PolicyRef, ...], list[int]] = {}
        first = self._zone_classes(fam, others)
        for z in range(n):
            r = first[z]
            if r != z:  # zone r's side, zones r and z swapped (zonesymmetry.py)
                fails[z] = swapped(fails[r], r, z)
                for rows in by_policies.values():
                    if rows[r]:
                        rows[z] = swapped(rows[r], r, z)
                continue
            for mask, ok, policies in self._side_groups(fam.eps[z][0], direction, others):
                if not ok:
                    fails[z] |= mask
                    by_policies.setdefault(policies, [0] * n)[z] |= mask
        return fails, by_policies

    def _zone_classes(self, fam: Family, others: Family) -> Sequence[int]:
        """Per zone, the first zone of its class where the paths from `fam` to `others`
        cannot tell zones apart (`fam` stamped, `others` pods: zonesymmetry.py), else the
        zone itself."""
        ident = self.identity_label
        if not (self.symmetric and fam.stamped and ident and others.pods):
            return range(self.n)
        fixed: frozenset[str] = frozenset()
        if not others.stamped:  # the same pod in every zone: its own value stays put
            fixed = frozenset().union(*(identity_values(e.labels, ident) for e in others.heads))
        return self.index.zone_classes(ident, tuple(self.zones), fixed)

    def _pod_matrix(self, fa: Family, fb: Family) -> Matrix:
        n = self.n
        efail, row_pol = self._side_fails(fa, "egress", fb)
        ifail_c, col_pol = self._side_fails(fb, "ingress", fa)
        ifail_r = transpose(ifail_c, n)
        efail_c = transpose(efail, n)
        return Matrix(
            [e | i for e, i in zip(efail, ifail_r, strict=True)],
            [i | e for i, e in zip(ifail_c, efail_c, strict=True)],
            sorted(row_pol.items()),
            sorted(col_pol.items()),
        )

    def _generic_matrix(self, fa: Family, fb: Family) -> Matrix:
        n = self.n
        # a cell of two zones is decided by their identities (ids, _generic_cell): the
        # families whose hosts differ only in their nodes share all but the diagonal
        shared = (fa.ids, fb.ids, fa.valid, fb.valid)
        across = self._across.get(shared)
        if across is None:
            rows = [0] * n
            by_policies: dict[tuple[PolicyRef, ...], list[int]] = {}
            for ia in bits(fa.valid):
                for ib in bits(fb.valid & ~(1 << ia)):
                    cell = self._generic_cell(fa, ia, fb, ib)
                    if cell is not None:
                        rows[ia] |= 1 << ib
                        by_policies.setdefault(cell, [0] * n)[ia] |= 1 << ib
            across = self._across[shared] = (rows, by_policies)
        blocked = list(across[0])
        row_pol = {p: list(r) for p, r in across[1].items()}
        for z in bits(fa.valid & fb.valid):
            cell = self._generic_cell(fa, z, fb, z)
            if cell is not None:
                blocked[z] |= 1 << z
                row_pol.setdefault(cell, [0] * n)[z] |= 1 << z
        return Matrix(blocked, transpose(blocked, n), sorted(row_pol.items()), [])

    # --- pod affinity ------------------------------------------------------------------

    def possible_rows(
        self, a: Side, b: Side, linked: tuple[str, ...], anti_keys: tuple[str, ...]
    ) -> list[int]:
        """Zone pairs the scheduler may pick for two linked members (shared by placements)."""
        key = (id(a.placement), id(b.placement), a.zones, b.zones, linked, anti_keys)
        hit = self._possible.get(key)
        if hit is None:
            self._keep += [a.placement, b.placement]
            rows = possible_rows(self, a, b, list(linked), list(anti_keys))
            hit = self._possible[key] = self._rows_alike.setdefault(tuple(rows), rows)
        return hit

    def values(self, side: Side, zone: int, key: str) -> frozenset[str]:
        """Values of node label `key` on the nodes of the side's placement in a zone."""
        return self.placement_values(side.placement, zone, key)

    def pinned_values(
        self, pinned: PinnedPlacements, d: int, zone: int, key: str
    ) -> frozenset[str]:
        """placement_values(pinned[d], zone, key), without building pinned[d]."""
        ck = (id(pinned), d, self.zones[zone], key)
        hit = self._pinned_values.get(ck)
        if hit is None:
            self._keep.append(pinned)
            z = self.zones[zone]
            nodes = [n for n in pinned.nodes(d) if n.zone == z]
            hit = self._pinned_values[ck] = self._label_values(nodes, zone, key)
        return hit

    def placement_values(self, placement: Placement, zone: int, key: str) -> frozenset[str]:
        ck = (id(placement), self.zones[zone], key)
        hit = self._values.get(ck)
        if hit is None:
            self._keep.append(placement)
            nodes = placement.by_zone.get(self.zones[zone], ())
            hit = self._values[ck] = self._label_values(nodes, zone, key)
        return hit

    def _label_values(self, nodes: Sequence[Node], zone: int, key: str) -> frozenset[str]:
        """Values of node label `key` on these nodes of one zone."""
        same = self._zone_values(key)[zone]
        if same is not None:  # every node of the zone has this one value
            return same if nodes else frozenset()
        return frozenset(n.labels[key] for n in nodes if key in n.labels)

    def zone_uniform(self, key: str) -> bool:
        """Does every zone's every node have node label `key`, one value per zone? Then a
        placement's values of it in a zone follow from whether it has nodes there."""
        return all(v is not None for v in self._zone_values(key))

    def _zone_values(self, key: str) -> list[frozenset[str] | None]:
        """Per zone: {value} when every node of the zone has node label `key` set to one
        value (the zone label, a region label), else None."""
        hit = self._uniform.get(key)
        if hit is None:
            seen: list[str | None] = [None] * self.n
            mixed = [False] * self.n
            zone_index = self.zone_index
            for node in self.topology.nodes:
                z = zone_index.get(node.zone)
                if z is None or mixed[z]:
                    continue
                v = node.labels.get(key)
                if v is None or (seen[z] is not None and seen[z] != v):
                    mixed[z] = True
                else:
                    seen[z] = v
            hit = self._uniform[key] = [
                None if mixed[z] or v is None else frozenset((v,)) for z, v in enumerate(seen)
            ]
        return hit


def possible_rows(
    eng: Engine, a: Side, b: Side, linked: list[str], anti_keys: list[str]
) -> list[int]:
    """Per source zone, the destination zones the scheduler may pick for a and b
    (members.possible_zone_pairs over bits)."""
    return linked_rows(
        eng.n,
        (a.zones, lambda z, k: eng.values(a, z, k)),
        (b.zones, lambda z, k: eng.values(b, z, k)),
        linked,
        anti_keys,
    )
