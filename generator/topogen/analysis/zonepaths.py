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
  evaluated once against the whole other family, grouped, not once per zone pair, and
  only for the first zone of each class of zones the policies name alike (the others'
  rows are its row with two bits swapped: zonesymmetry.py);
- a job masks the matrices with its members' zones and pod-affinity links (bit
  operations per zone, not per zone pair) for counts, zones, policies and the first
  few paths. Full lists of BlockedPath are built only when someone iterates them.

Families, matrices and their Engine are in families.py, pod-affinity links in links.py,
bit rows in bits.py, BlockedPath and the lazy BlockedPaths in paths.py; this module is
the job's part (JobPaths).

Every result equals what AnalysisContext.check_path over possible_zone_pairs gives
(tests/core/test_fast_paths.py checks this against that direct computation).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from topogen.analysis.bits import bits, transpose
from topogen.analysis.families import Engine, Matrix, Side, possible_rows
from topogen.analysis.links import linked_pairs, links
from topogen.analysis.paths import BlockedPath, PathSummary
from topogen.model import PolicyRef

__all__ = ["JobPaths"]


@dataclass
class _Pair:
    i: int
    j: int
    matrix: Matrix
    rows: list[int]  # possible destination zones per source zone
    cols: list[int]  # possible source zones per destination zone
    blocked: list[int]  # rows & matrix.blocked


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
        self._summary: PathSummary | None = None

    @property
    def pairs(self) -> list[_Pair]:
        if self._pairs is None:
            n = self.engine.n
            out = []
            for n_spec, (i, j, linked, anti_keys) in enumerate(self._specs):
                a, b = self.sides[i], self.sides[j]
                kept = self._rows.get(n_spec)
                rows = kept or self._possible(i, j, linked, anti_keys)
                if not (linked or anti_keys):
                    cols = self._uniform_cols(a, b)
                elif kept:
                    cols = self.engine.transposed(kept)
                else:
                    cols = transpose(rows, n)
                m = self.engine.matrix(a.family, b.family)
                blocked = [r & mb for r, mb in zip(rows, m.blocked, strict=True)]
                out.append(_Pair(i, j, m, rows, cols, blocked))
            self._pairs = out
        return self._pairs

    def summary(self) -> PathSummary:
        """Counts, roles, zones, policies, the first blocked paths and the split summary."""
        if self._summary is not None:
            return self._summary
        cache = self.engine.summaries
        hit = cache.get(self.signature)
        if hit is not None:
            self._summary = hit
            return hit
        summary = PathSummary(
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
            rows, cols = p.rows, p.cols
            live_rows = [(ia, r) for ia, r in enumerate(rows) if r]  # most zones: none
            live_cols = [(ib, c) for ib, c in enumerate(cols) if c]
            for policies, prow in p.matrix.row_policies:
                if any(prow[ia] & r for ia, r in live_rows):
                    out.update(policies)
            for policies, pcol in p.matrix.col_policies:
                if any(pcol[ib] & c for ib, c in live_cols):
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
        cache = self.engine.splits
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
