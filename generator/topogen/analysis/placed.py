"""Placement: the nodes a pod template can land on, and why the others are excluded
(what placement.py computes and the run's NodeIndex caches)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from topogen.analysis.filters.base import SCALE_UP
from topogen.model import Node

__all__ = ["Placement", "why_not"]


@dataclass(frozen=True)
class Placement:
    nodes: tuple[Node, ...]
    excluded: Mapping[str, int]  # reason -> number of nodes it excluded

    @cached_property
    def zones(self) -> tuple[str, ...]:
        return tuple(sorted({n.zone for n in self.nodes}))

    @cached_property
    def by_zone(self) -> Mapping[str, tuple[Node, ...]]:
        """The nodes in each zone, in topology order."""
        out: dict[str, list[Node]] = {}
        for n in self.nodes:
            out.setdefault(n.zone, []).append(n)
        return {z: tuple(ns) for z, ns in out.items()}

    def why_not(self, limit: int = 3) -> str:
        return why_not(self.excluded, limit)


def why_not(excluded: Mapping[str, int], limit: int = 3) -> str:
    """Placement.why_not for these exclusion counts; reasons about nodes an autoscaler
    would add come after the others, each of them, without a count (those nodes do not
    exist yet)."""
    ordered = sorted(excluded.items(), key=lambda kv: (-kv[1], kv[0]))
    parts = [
        f"{count} node{'s' if count > 1 else ''}: {reason}"
        for reason, count in ordered
        if not reason.startswith(SCALE_UP)
    ]
    more = f" (+{len(parts) - limit} more)" if len(parts) > limit else ""
    new = [reason for reason, _ in ordered if reason.startswith(SCALE_UP)]
    return "; ".join([*parts[:limit], *new]) + more
