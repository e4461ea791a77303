"""Which zone pairs leave a job's traffic denied or split, computed once per identity family.

The per-job question (for every ordered pair of members and every pair of zones the
scheduler may put them in: is the path allowed?) is answered here with shared work:

- a member's network identity in every zone is a *family*: a pod's labels with the
  identity label stamped per zone (or the same labels everywhere), or a hostNetwork
  member's hosts per zone. Families are interned by what the policies can see of them,
  so every job of a namespace with the same shape shares one;
- between two families one *matrix* says which (source zone, destination zone) paths
  are blocked and by which policies, as bit rows over the cluster's zones. Pod families
  use PolicyIndex.side_groups: each sender's egress (and each receiver's ingress) is
  evaluated once against the whole other family, grouped, not once per zone pair;
- a job masks the matrices with its members' zones and pod-affinity links (bit
  operations per zone, not per zone pair) for counts, zones, policies and the first
  few paths. Full lists of BlockedPath are built only when someone iterates them.

Every result equals what AnalysisContext.check_path over possible_zone_pairs gives
(tests/core/test_fast_paths.py checks this against that direct computation).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, overload

from topogen.analysis.placement import Placement
from topogen.analysis.ports import PortSet
from topogen.analysis.reachability import (
    PathVerdict,
    PolicyIndex,
    SideTrace,
    host_endpoint,
    pod_endpoint,
)
from topogen.model import (
    NO_ZONE_PREFIX,
    Endpoint,
    Namespace,
    Node,
    PodAffinityTerm,
    PolicyRef,
    Topology,
)

__all__ = [
    "BlockedPath",
    "BlockedPaths",
    "Engine",
    "Family",
    "JobPaths",
    "Linkable",
    "Side",
    "bits",
    "engine_for",
    "links",
    "transpose",
]


@dataclass(frozen=True)
class BlockedPath:
    """One blocked path: from a member in a zone to a member in a zone, and why."""

    src_role: str
    dst_role: str
    src_zone: str
    dst_zone: str
    reasons: tuple[str, ...]
    policies: tuple[PolicyRef, ...]

    def describe(self) -> str:
        return (
            f"{self.src_role} ({self.src_zone}) -> {self.dst_role} ({self.dst_zone}): "
            + "; ".join(self.reasons)
        )


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


def bits(mask: int) -> Iterator[int]:
    """Positions of the set bits, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def transpose(rows: Sequence[int], n: int) -> list[int]:
    """Columns of a bit matrix (iterating the sparser of the matrix and its complement)."""
    full = (1 << n) - 1
    ones = sum(r.bit_count() for r in rows)
    flip = ones * 2 > n * n
    out = [0] * n
    for i, r in enumerate(rows):
        bit = 1 << i
        for j in bits((full & ~r) if flip else r):
            out[j] |= bit
    if flip:
        out = [full & ~c for c in out]
    return out


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
        self._summaries: dict[tuple[object, ...], _Summary] = {}
        self._described: dict[tuple[object, ...], tuple[str, tuple[str, ...]]] = {}
        self._splits: dict[
            tuple[object, ...],
            tuple[tuple[str, str, str, str] | None, frozenset[str], frozenset[str]],
        ] = {}
        self._possible: dict[tuple[object, ...], list[int]] = {}
        # labels mapping (by identity, kept alive here) -> (namespace, ports, stamped) -> family
        self._by_labels: dict[int, tuple[Mapping[str, str], dict[object, Family]]] = {}
        self._matrices: dict[tuple[int, int], Matrix] = {}
        self._covers: dict[int, bool] = {}
        self._side_policies: dict[int, tuple[PolicyRef, ...]] = {}
        self._groups: dict[tuple[int, str, int], list[tuple[int, int, tuple[PolicyRef, ...]]]] = {}
        self._cells: dict[tuple[int, int], tuple[PolicyRef, ...] | None] = {}
        self._sides: dict[int, tuple[bool, tuple[PolicyRef, ...]]] = {}
        self._zone_ids: dict[tuple[tuple[int, str], ...], int] = {}
        self._whys: dict[int, tuple[tuple[str, ...], tuple[PolicyRef, ...]]] = {}
        self._values: dict[tuple[int, str, str], frozenset[str]] = {}
        self._keep: list[object] = []  # objects whose id() is part of a cache key

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
    ) -> Family:
        """A pod's identities per zone: `labels`, plus identity label = zone when stamped."""
        known = self._by_labels.get(id(labels))
        if known is not None and known[0] is labels:
            hit = known[1].get((namespace, ports, stamped))
            if hit is not None:
                return hit
        base = pod_endpoint(labels, namespace, self.namespaces, ports)
        key = ("pod", stamped, self.index.identity_key(base))
        hit = self._families.get(key)
        if hit is None:
            ident = self.identity_label
            eps: list[tuple[Endpoint, ...]] = []
            for z in self.zones:
                if stamped and ident and not z.startswith(NO_ZONE_PREFIX):
                    stamped_labels = dict(labels)
                    stamped_labels[ident] = z
                    eps.append((pod_endpoint(stamped_labels, namespace, self.namespaces, ports),))
                else:
                    eps.append((base,))
            hit = self._families[key] = self._family(tuple(eps), (1 << self.n) - 1, True)
        self._by_labels.setdefault(id(labels), (labels, {}))[1][(namespace, ports, stamped)] = hit
        return hit

    def _family(self, eps: tuple[tuple[Endpoint, ...], ...], valid: int, pods: bool) -> Family:
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
        return Family(len(self._families), eps, valid, pods, keys, bare, heads)

    def host_family(self, placement: Placement, ports: tuple[tuple[str, int, str], ...]) -> Family:
        """A hostNetwork member's identities: per zone, one host per group of similar nodes."""
        key = ("host", id(placement), ports)
        hit = self._families.get(key)
        if hit is None:
            self._keep.append(placement)
            eps: list[tuple[Endpoint, ...]] = [()] * self.n
            valid = 0
            for z, nodes in placement.by_zone.items():
                i = self.zone_index[z]
                eps[i] = self._hosts(nodes, ports)
                valid |= 1 << i
            hit = self._families[key] = self._shared(self._family(tuple(eps), valid, False))
        return hit

    def _shared(self, family: Family) -> Family:
        """One family for every placement giving the same hosts in every zone."""
        return self._by_keys.setdefault(family.keys, family)

    def host_family_in_zones(
        self,
        placements: Sequence[Placement],
        zones: Sequence[str],
        ports: tuple[tuple[str, int, str], ...],
    ) -> Family:
        """Like host_family, with a different placement per zone (pinned to each zone)."""
        key = ("hosts", id(placements), ports)
        hit = self._families.get(key)
        if hit is None:
            self._keep.append(placements)
            eps: list[tuple[Endpoint, ...]] = [()] * self.n
            valid = 0
            for placement, z in zip(placements, zones, strict=True):
                i = self.zone_index[z]
                eps[i] = self._hosts(placement.by_zone.get(z, ()), ports)
                if eps[i]:
                    valid |= 1 << i
            hit = self._families[key] = self._shared(self._family(tuple(eps), valid, False))
        return hit

    def _hosts(
        self, nodes: Sequence[Node], ports: tuple[tuple[str, int, str], ...]
    ) -> tuple[Endpoint, ...]:
        """One host endpoint per group of nodes host-facing selectors cannot tell apart."""
        seen: dict[tuple[str | None, ...], Endpoint] = {}
        keys = self._node_keys
        for node in nodes:
            labels = node.labels
            proj = tuple([labels.get(k) for k in keys])
            if proj not in seen:
                seen[proj] = host_endpoint(node.name, labels, ports)
        return tuple(seen.values())

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
        for z in range(n):
            for mask, ok, policies in self._side_groups(fam.eps[z][0], direction, others):
                if not ok:
                    fails[z] |= mask
                    by_policies.setdefault(policies, [0] * n)[z] |= mask
        return fails, by_policies

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
        blocked = [0] * n
        blocked_t = [0] * n
        row_pol: dict[tuple[PolicyRef, ...], list[int]] = {}
        for ia in bits(fa.valid):
            for ib in bits(fb.valid):
                cell = self._generic_cell(fa, ia, fb, ib)
                if cell is not None:
                    blocked[ia] |= 1 << ib
                    blocked_t[ib] |= 1 << ia
                    row_pol.setdefault(cell, [0] * n)[ia] |= 1 << ib
        return Matrix(blocked, blocked_t, sorted(row_pol.items()), [])

    # --- pod affinity ------------------------------------------------------------------

    def possible_rows(
        self, a: Side, b: Side, linked: tuple[str, ...], anti_keys: tuple[str, ...]
    ) -> list[int]:
        """Zone pairs the scheduler may pick for two linked members (shared by placements)."""
        key = (id(a.placement), id(b.placement), a.zones, b.zones, linked, anti_keys)
        hit = self._possible.get(key)
        if hit is None:
            self._keep += [a.placement, b.placement]
            hit = self._possible[key] = possible_rows(self, a, b, list(linked), list(anti_keys))
        return hit

    def values(self, side: Side, zone: int, key: str) -> frozenset[str]:
        """Values of node label `key` on the nodes of the side's placement in a zone."""
        return self.placement_values(side.placement, zone, key)

    def placement_values(self, placement: Placement, zone: int, key: str) -> frozenset[str]:
        ck = (id(placement), self.zones[zone], key)
        hit = self._values.get(ck)
        if hit is None:
            self._keep.append(placement)
            hit = self._values[ck] = frozenset(
                n.labels[key]
                for n in placement.by_zone.get(self.zones[zone], ())
                if key in n.labels
            )
        return hit


@dataclass
class _Pair:
    i: int
    j: int
    matrix: Matrix
    rows: list[int]  # possible destination zones per source zone
    cols: list[int]  # possible source zones per destination zone
    blocked: list[int]  # rows & matrix.blocked


@dataclass(frozen=True)
class _Summary:
    count: int
    roles: frozenset[str]
    zones: frozenset[str]
    policies: frozenset[PolicyRef]
    first: tuple[BlockedPath, ...]  # the first three


class JobPaths:
    """The zone pairs of one job (its members as Sides) that are blocked, or allowed but split.

    Jobs whose members have the same roles, identities and zones (and no pod affinity
    between them) share one summary; the pairs themselves are built only when needed.
    """

    def __init__(self, engine: Engine, sides: Sequence[Side]) -> None:
        self.engine = engine
        self.sides = list(sides)
        self._specs = linked_pairs([s.replicas for s in self.sides], links(self.sides))
        # linked pairs: their possible zone pairs, shared by jobs placed on the same nodes
        self._rows: dict[int, list[int]] = {}
        for n, (i, j, linked, anti_keys) in enumerate(self._specs):
            if linked or anti_keys:
                self._rows[n] = engine.possible_rows(
                    self.sides[i], self.sides[j], tuple(linked), tuple(anti_keys)
                )
        self.signature: tuple[object, ...] = tuple(
            (
                i,
                j,
                self.sides[i].role,
                self.sides[j].role,
                self.sides[i].family.fid,
                self.sides[j].family.fid,
                self.sides[i].zones,
                self.sides[j].zones,
                id(self._rows[n]) if n in self._rows else None,
            )
            for n, (i, j, _, _) in enumerate(self._specs)
        )
        self._pairs: list[_Pair] | None = None
        self._summary: _Summary | None = None

    @property
    def pairs(self) -> list[_Pair]:
        if self._pairs is None:
            n = self.engine.n
            out = []
            for n_spec, (i, j, linked, anti_keys) in enumerate(self._specs):
                a, b = self.sides[i], self.sides[j]
                rows = self._rows.get(n_spec) or self._possible(i, j, linked, anti_keys)
                cols = transpose(rows, n) if (linked or anti_keys) else self._uniform_cols(a, b)
                m = self.engine.matrix(a.family, b.family)
                blocked = [r & mb for r, mb in zip(rows, m.blocked, strict=True)]
                out.append(_Pair(i, j, m, rows, cols, blocked))
            self._pairs = out
        return self._pairs

    def summary(self) -> _Summary:
        """Counts, roles, zones, policies, the first blocked paths and the split summary."""
        if self._summary is not None:
            return self._summary
        cache = self.engine._summaries
        hit = cache.get(self.signature)
        if hit is not None:
            self._summary = hit
            return hit
        summary = _Summary(
            sum(r.bit_count() for p in self.pairs for r in p.blocked),
            frozenset(self._blocked_roles()),
            frozenset(self._blocked_zones()),
            frozenset(self._blocked_policies()),
            tuple(self._blocked(limit=3)),
        )
        cache[self.signature] = summary
        self._summary = summary
        return summary

    def _uniform_cols(self, a: Side, b: Side) -> list[int]:
        return [a.zones if b.zones >> ib & 1 else 0 for ib in range(self.engine.n)]

    def _possible(self, i: int, j: int, linked: list[str], anti_keys: list[str]) -> list[int]:
        return possible_rows(self.engine, self.sides[i], self.sides[j], linked, anti_keys)

    # --- blocked -----------------------------------------------------------------------

    @property
    def blocked_count(self) -> int:
        return self.summary().count

    def blocked(self, limit: int | None = None) -> Iterator[BlockedPath]:
        """BlockedPath paths in (member pair, source zone, destination zone) order."""
        if limit is not None and limit <= 3:
            yield from self.summary().first[:limit]
            return
        yield from self._blocked(limit)

    def blocked_roles(self) -> set[str]:
        return set(self.summary().roles)

    def blocked_zones(self) -> set[str]:
        return set(self.summary().zones)

    def blocked_policies(self) -> set[PolicyRef]:
        return set(self.summary().policies)

    def _blocked(self, limit: int | None = None) -> Iterator[BlockedPath]:
        count = 0
        for p in self.pairs:
            a, b = self.sides[p.i], self.sides[p.j]
            for ia, row in enumerate(p.blocked):
                for ib in bits(row):
                    if limit is not None and count >= limit:
                        return
                    cell = self.engine.cell(a, ia, b, ib)
                    assert cell is not None, "a blocked cell has a blocking endpoint pair"
                    count += 1
                    yield cell

    def _blocked_roles(self) -> set[str]:
        out: set[str] = set()
        for p in self.pairs:
            if any(p.blocked):
                out.update((self.sides[p.i].role, self.sides[p.j].role))
        return out

    def _blocked_zones(self) -> set[str]:
        mask = 0
        for p in self.pairs:
            for ia, row in enumerate(p.blocked):
                if row:
                    mask |= row | 1 << ia
        return {self.engine.zones[i] for i in bits(mask)}

    def _blocked_policies(self) -> set[PolicyRef]:
        out: set[PolicyRef] = set()
        for p in self.pairs:
            if not any(p.blocked):
                continue
            for policies, prow in p.matrix.row_policies:
                if any(x & r for x, r in zip(prow, p.rows, strict=True)):
                    out.update(policies)
            for policies, pcol in p.matrix.col_policies:
                if any(x & c for x, c in zip(pcol, p.cols, strict=True)):
                    out.update(policies)
        return out

    # --- allowed but split -------------------------------------------------------------

    def _split_rows(self) -> list[tuple[_Pair, list[int]]]:
        """Per pair: allowed cross-zone pairs not denied in either direction (by role)."""
        n = self.engine.n
        same: dict[tuple[str, str], list[int]] = {}
        rev: dict[tuple[str, str], list[int]] = {}
        for p in self.pairs:
            roles = (self.sides[p.i].role, self.sides[p.j].role)
            acc = same.setdefault(roles, [0] * n)
            for ia, row in enumerate(p.blocked):
                acc[ia] |= row
            acc_t = rev.setdefault(roles, [0] * n)
            for ib, col in enumerate(p.matrix.blocked_t):
                acc_t[ib] |= col & p.cols[ib]
        out = []
        for p in self.pairs:
            ra, rb = self.sides[p.i].role, self.sides[p.j].role
            d1 = same.get((ra, rb), [0] * n)
            d2 = rev.get((rb, ra), [0] * n)
            rows = [
                row & ~p.matrix.blocked[ia] & ~(1 << ia) & ~d1[ia] & ~d2[ia]
                for ia, row in enumerate(p.rows)
            ]
            out.append((p, rows))
        return out

    def split(self) -> list[tuple[str, str, str, str]]:
        """(src role, dst role, src zone, dst zone), in member pair and zone order."""
        zones = self.engine.zones
        return [
            (self.sides[p.i].role, self.sides[p.j].role, zones[ia], zones[ib])
            for p, rows in self._split_rows()
            for ia, row in enumerate(rows)
            for ib in bits(row)
        ]

    def split_summary(self) -> tuple[tuple[str, str, str, str] | None, set[str], set[str]]:
        """(first split, roles, zones) without listing every split pair."""
        cache = self.engine._splits
        hit = cache.get(self.signature)
        if hit is None:
            first, roles, zones = self._split_summary()
            hit = cache[self.signature] = (first, frozenset(roles), frozenset(zones))
        return hit[0], set(hit[1]), set(hit[2])

    def _split_summary(self) -> tuple[tuple[str, str, str, str] | None, set[str], set[str]]:
        first = None
        roles: set[str] = set()
        mask = 0
        zones = self.engine.zones
        for p, rows in self._split_rows():
            for ia, row in enumerate(rows):
                if not row:
                    continue
                if first is None:
                    ib = (row & -row).bit_length() - 1
                    first = (self.sides[p.i].role, self.sides[p.j].role, zones[ia], zones[ib])
                roles.update((self.sides[p.i].role, self.sides[p.j].role))
                mask |= row | 1 << ia
        return first, roles, {zones[i] for i in bits(mask)}


def possible_rows(
    eng: Engine, a: Side, b: Side, linked: list[str], anti_keys: list[str]
) -> list[int]:
    """Per source zone, the destination zones the scheduler may pick for a and b
    (members.possible_zone_pairs over bits)."""
    rows = [0] * eng.n
    if not linked and not anti_keys:
        for ia in bits(a.zones):
            rows[ia] = b.zones
        return rows
    index: dict[str, dict[str, int]] = {}
    single: dict[str, dict[str, int]] = {}
    nonempty: dict[str, int] = {}
    for k in {*linked, *anti_keys}:
        by_value: dict[str, int] = {}
        one: dict[str, int] = {}
        some = 0
        for ib in bits(b.zones):
            vb = eng.values(b, ib, k)
            for v in vb:
                by_value[v] = by_value.get(v, 0) | 1 << ib
            if len(vb) == 1:
                (v,) = vb
                one[v] = one.get(v, 0) | 1 << ib
            if vb:
                some |= 1 << ib
        index[k], single[k], nonempty[k] = by_value, one, some
    for ia in bits(a.zones):
        row = b.zones
        for k in linked:
            reach = 0
            for v in eng.values(a, ia, k):
                reach |= index[k].get(v, 0)
            row &= reach
        for k in anti_keys:
            va = eng.values(a, ia, k)
            if not va:
                row = 0
                continue
            row &= nonempty[k]
            if len(va) == 1:
                (v,) = va
                row &= ~single[k].get(v, 0)
        rows[ia] = row
    return rows


class Linkable(Protocol):
    """What pod-affinity links read of a member."""

    @property
    def namespace(self) -> str: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def pod_affinity(self) -> tuple[PodAffinityTerm, ...]: ...


Links = tuple[dict[str, dict[int, int]], dict[str, set[int]], dict[str, set[int]]]


def links(sides: Sequence[Linkable]) -> Links:
    """Union-find per topology key over members linked by required pod affinity
    (analysis.members._links): (roots per key, anchored per key, anti per key)."""
    parent: dict[str, dict[int, int]] = {}
    anchored: dict[str, set[int]] = {}
    anti: dict[str, set[int]] = {}

    def find(key: str, i: int) -> int:
        p = parent.setdefault(key, {})
        while p.get(i, i) != i:
            i = p[i]
        return i

    for i, m in enumerate(sides):
        for term in m.pod_affinity:
            namespaces = term.namespaces or (m.namespace,)
            targets = [
                j
                for j, o in enumerate(sides)
                if o.namespace in namespaces and term.selector.matches(o.labels)
            ]
            if term.anti:
                if i in targets:
                    anti.setdefault(term.topology_key, set()).add(i)
                continue
            if not targets:
                continue
            anchored.setdefault(term.topology_key, set()).add(i)
            for j in targets:
                a, b = find(term.topology_key, i), find(term.topology_key, j)
                if a != b:
                    parent[term.topology_key][a] = b
    resolved = {key: {i: find(key, i) for i in range(len(sides))} for key in parent}
    return resolved, anchored, anti


@dataclass(frozen=True)
class LinkView:
    """A Linkable made of the parts links() reads."""

    namespace: str
    labels: Mapping[str, str]
    pod_affinity: tuple[PodAffinityTerm, ...]


def linked_pairs(
    replicas: Sequence[int], found: Links
) -> list[tuple[int, int, list[str], list[str]]]:
    """Every ordered pair of members that talk (i == j: two replicas of one member), with
    the topology keys that link them and, for two replicas, the anti-affinity keys."""
    roots, anchored, anti = found
    out = []
    for i, count in enumerate(replicas):
        for j in range(len(replicas)):
            if i == j and count < 2:
                continue
            if i == j:
                linked = [k for k, s in anchored.items() if i in s]
                anti_keys = [k for k, s in anti.items() if i in s]
            else:
                linked = [k for k, r in roots.items() if r[i] == r[j]]
                anti_keys = []
            out.append((i, j, linked, anti_keys))
    return out


class BlockedPaths(Sequence[Any]):
    """A job's blocked paths, listed only when iterated (a count and the first few are cheap)."""

    def __init__(
        self,
        count: int,
        produce: Callable[[], Iterator[Any]],
        members: tuple[Any, ...] | None = None,
    ) -> None:
        self._count = count
        self._produce = produce
        self._items: list[Any] | None = None
        self.members = members  # the job's members they are listed from (see parallel.py)

    def _all(self) -> list[Any]:
        if self._items is None:
            self._items = list(self._produce())
        return self._items

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def __iter__(self) -> Iterator[Any]:
        return iter(self._all())

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        return self._all()[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"BlockedPaths({self._all()!r})"


def engine_for(
    topology: Topology,
    index: PolicyIndex,
    namespaces: Mapping[str, Namespace],
    identity_label: str | None,
    required: PortSet,
    node_keys: set[str],
) -> Engine:
    """One engine per (policy index, topology, identity label, ports): shared by groups."""
    holder = index.__dict__.setdefault("_topogen_engines", {})
    key = (id(topology), identity_label, required, frozenset(node_keys), id(namespaces))
    hit = holder.get(key)
    if hit is None or hit.topology is not topology or hit.namespaces is not namespaces:
        hit = holder[key] = Engine(topology, index, namespaces, identity_label, required, node_keys)
    assert isinstance(hit, Engine)
    return hit
