"""Spread: where a job that appears after the render goes (plan stage, from the packing).

The known jobs' packing says what each domain has left over once they all run (queue slots
counted). A job the render did not know goes where that leaves room, so it does not take
GPUs the packing gave a known job: of the domains that could hold each known job of its
group alone (all of them if none could), those whose left-over GPUs hold the group's
smallest known job, else the one with the most left over. Static identity (the policy
names the zone): one of them, `preferZones` first, then the most left over. Identity that
follows placement: all of them (the coordinator chooses, its workers follow).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

from topogen.model import quantity
from topogen.nodepools import gpus_text
from topogen.plan.scoring import best_left_over, most_left_over

__all__ = ["Fallback", "choose"]

Fallback = tuple[tuple[str, ...], str]  # the domains, and why
_SHOWN = 6  # domains whose left-over GPUs the reason lists


def choose(
    domains: Sequence[str],
    holds_all: Sequence[str],
    left: Mapping[str, Fraction],
    need: Fraction,
    prefer: Sequence[str],
    static: bool,
) -> Fallback:
    """`domains` in the plan's order (preferZones first, then the most GPUs); `holds_all`:
    those that could hold each known job alone; `left`: GPUs left over per domain; `need`:
    the smallest known job's GPUs."""
    left = {n: left.get(n, Fraction(0)) for n in domains}
    holders = set(holds_all)
    order = [n for n in domains if n in holders] or list(domains)
    room = [n for n in order if left[n] >= need]
    job = f"a job of the group ({quantity(need)} GPU{'' if need == 1 else 's'})"
    if len(order) < len(domains):
        job += f" among the domains that hold each of its known jobs ({', '.join(order)})"
    more = f" and {len(domains) - _SHOWN} more" if len(domains) > _SHOWN else ""
    spare = ", ".join(f"{n} {gpus_text(left[n])}" for n in domains[:_SHOWN])
    facts = f"GPUs left over once the known jobs are packed: {spare}{more}"
    after = "a job that appears after the render"
    if not room:
        most = most_left_over(order, left)
        return (most,), (
            f"{after} is pinned to {most} (no domain keeps room for {job}: the most left "
            f"over; {facts})"
        )
    if static:
        pick = best_left_over(room, order, prefer, left)
        return (pick,), (
            f"{after} is pinned to {pick} (the domain that keeps room for {job} with the most "
            f"GPUs left over, preferZones first; {facts})"
        )
    where = "any of them" if len(room) == len(domains) else ", ".join(room)
    return tuple(room), (
        f"{after} may land in {where}, its workers following its coordinator (the domains "
        f"that keep room for {job}; {facts})"
    )
