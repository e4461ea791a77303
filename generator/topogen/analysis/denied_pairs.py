"""The zone pairs across which a group's internal traffic would be denied: what the
validation policies carry, so a mis-placed pod is refused with the policies that deny it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from topogen.analysis.bits import bits as _bits
from topogen.analysis.bits import transpose
from topogen.analysis.context import AnalysisContext
from topogen.analysis.families import Family
from topogen.analysis.findings import JobAnalysis
from topogen.analysis.placement import place_in_domains
from topogen.model import PolicyRef

__all__ = ["denied_zone_pairs"]


def denied_zone_pairs(
    jobs: Sequence[JobAnalysis], ctx: AnalysisContext
) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """Zone pairs across which some job's internal traffic would be denied.

    Each member is pinned to each zone, tolerating every taint (traffic, not taints, is
    the question here), and every pair of its job's members is checked both ways.
    Jobs whose members have the same identities and zones add the same pairs: each
    such combination is looked at once.
    """
    eng = ctx.engine
    single = ctx.cluster.one_zone
    combos: dict[tuple[int, int, int, int], tuple[Family, Family]] = {}
    masks: dict[int, int] = {}  # domains (one per zone) as bits -> their zones as bits
    for job in jobs:
        members = list(job.members)
        placed = [
            place_in_domains(m.template, ctx.cluster.nodes, single.zones, single.anywhere)
            for m in members
        ]
        fams = [
            eng.host_family_in_zones(pl, single.names, m.template.ports)
            if m.template.host_network
            else ctx.family(m)
            for m, pl in zip(members, placed, strict=True)
        ]
        nonempty = [
            _zone_mask(pl.nonempty_mask(), single.names, eng.zone_index, masks) for pl in placed
        ]
        for i, a in enumerate(members):
            for j in range(len(members)):
                if i == j and a.replicas < 2:
                    continue
                key = (fams[i].fid, fams[j].fid, nonempty[i], nonempty[j])
                combos.setdefault(key, (fams[i], fams[j]))
    n = eng.n
    rows: dict[tuple[PolicyRef, ...], list[int]] = {}
    cols: dict[tuple[PolicyRef, ...], list[int]] = {}
    for (_, _, ni, nj), (fa, fb) in combos.items():
        m = eng.matrix(fa, fb)
        for policies, prow in m.row_policies:
            acc = rows.setdefault(policies, [0] * n)
            for za in _bits(ni):
                acc[za] |= prow[za] & nj
        for policies, pcol in m.col_policies:
            acc = cols.setdefault(policies, [0] * n)
            for zb in _bits(nj):
                acc[zb] |= pcol[zb] & ni
    for policies, acc in cols.items():
        by_row = rows.setdefault(policies, [0] * n)
        for za, row in enumerate(transpose(acc, n)):
            by_row[za] |= row
    # per zone pair (in order): which of the policy tuples deny it, either way round; each
    # distinct combination of tuples named once
    tuples = list(rows)
    if not tuples:
        return ()
    both = [[r | c for r, c in zip(rows[p], transpose(rows[p], n), strict=True)] for p in tuples]
    named: dict[int, tuple[str, ...]] = {}
    zones = eng.zones
    out = []
    for za in range(n):
        after = za + 1
        after_za = [sym[za] >> after for sym in both]
        denied = 0  # the zones after za denied from za (bits from after)
        for r in after_za:
            denied |= r
        if not denied:
            continue
        # per zone zb after za: the policy tuples (bits over `tuples`) denying (za, zb)
        by_zb = _columns(after_za, n - after) if len(after_za) > 1 else None
        for j in _bits(denied):
            mask = by_zb[j] if by_zb is not None else 1
            text = named.get(mask)
            if text is None:
                refs = {p for k in _bits(mask) for p in tuples[k]}
                text = named[mask] = tuple(sorted(str(p) for p in refs))
            out.append((zones[za], zones[after + j], text))
    return tuple(out)


def _zone_mask(
    domains: int, names: Sequence[str], zone_index: Mapping[str, int], known: dict[int, int]
) -> int:
    """One-zone domains (bits over their positions in `names`) as bits over the zones."""
    hit = known.get(domains)
    if hit is None:
        hit = known[domains] = sum(1 << zone_index[names[d]] for d in _bits(domains))
    return hit


def _columns(rows: Sequence[int], width: int) -> list[int]:
    """The columns of a bit matrix of len(rows) rows and `width` columns, as bits over the
    rows (iterating the sparser of the matrix and its complement)."""
    full = (1 << width) - 1
    flip = sum(r.bit_count() for r in rows) * 2 > len(rows) * width
    out = [0] * width
    for k, r in enumerate(rows):
        bit = 1 << k
        for j in _bits((full & ~r) if flip else r):
            out[j] |= bit
    if flip:
        every = (1 << len(rows)) - 1
        out = [every & ~c for c in out]
    return out
