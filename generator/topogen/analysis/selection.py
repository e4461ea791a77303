"""The indexes behind PolicyIndex: rules by the endpoints they can select, the label
values selectors can tell apart, and pod endpoints that differ in one label only."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from topogen.cilium.identity import NAMESPACE_KEY
from topogen.model import Endpoint, Isolation, LabelSelector, PolicyRule

__all__ = ["OTHER_VALUE", "EndpointFamily", "SubjectIndex", "label_view", "selects"]


def selects(host: bool, selector: LabelSelector, namespace: str | None, ep: Endpoint) -> bool:
    if host != ep.host:
        return False
    if not host and namespace is not None and namespace != ep.namespace:
        return False
    return selector.matches(ep.labels)


OTHER_VALUE = "\x00"  # a label value no selector names (label values cannot hold NUL)


def label_view(selectors: Iterable[LabelSelector]) -> dict[str, frozenset[str]]:
    """Label key -> the values selectors name for it (empty: only its presence is read)."""
    view: dict[str, set[str]] = {}
    for sel in selectors:
        for k, v in sel.match_labels:
            view.setdefault(k, set()).add(v)
        for req in sel.match_expressions:
            view.setdefault(req.key, set()).update(req.values)
    return {k: frozenset(vs) for k, vs in view.items()}


_Item = TypeVar("_Item", PolicyRule, Isolation)


class SubjectIndex(Generic[_Item]):
    """Rules (or isolations) by the endpoints their subject selectors can select."""

    def __init__(self, items: Sequence[_Item]) -> None:
        self.items: list[_Item] = list(items)
        # (host, namespace or None) -> (always checked, {label key: {value: positions}})
        self.buckets: dict[
            tuple[bool, str | None], tuple[list[int], dict[str, dict[str, list[int]]]]
        ] = {}
        for pos, item in enumerate(self.items):
            ns = None if item.subject_host else item.subject_namespace
            scan, by_label = self.buckets.setdefault((item.subject_host, ns), ([], {}))
            pairs = item.subject.match_labels
            pair = next((kv for kv in pairs if kv[0] != NAMESPACE_KEY), pairs[0] if pairs else None)
            if pair is None:
                scan.append(pos)
            else:
                by_label.setdefault(pair[0], {}).setdefault(pair[1], []).append(pos)

    def selecting(self, ep: Endpoint) -> list[_Item]:
        positions: list[int] = []
        keys = [(ep.host, None)] if ep.host else [(False, None), (False, ep.namespace)]
        for bucket in keys:
            hit = self.buckets.get(bucket)
            if hit is None:
                continue
            scan, by_label = hit
            positions += scan
            for key, by_value in by_label.items():
                value = ep.labels.get(key)
                if value is not None:
                    positions += by_value.get(value, ())
        positions.sort()
        out = []
        for pos in positions:
            item = self.items[pos]
            if selects(item.subject_host, item.subject, item.subject_namespace, ep):
                out.append(item)
        return out


@dataclass(frozen=True)
class EndpointFamily:
    """Pod endpoints differing in at most one label (one identity in many zones)."""

    fid: int
    members: tuple[Endpoint, ...]
    varying: str | None  # the one label key whose value differs; None: all alike
    per_position: bool  # more than one key differs: evaluate every position
    # the varying label's value (None: absent) -> (first position, positions), made once
    _by_value: dict[str | None, tuple[int, int]] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )

    @classmethod
    def of(cls, fid: int, members: Sequence[Endpoint]) -> EndpointFamily:
        first = members[0].labels
        differing: set[str] = set()
        for m in members[1:]:
            labels = m.labels
            if labels is first:
                continue
            differing.update(
                k for k in labels.keys() | first.keys() if labels.get(k) != first.get(k)
            )
        varying = next(iter(differing)) if len(differing) == 1 else None
        return cls(fid, tuple(members), varying, len(differing) > 1)

    def classes(self, selector: LabelSelector) -> list[tuple[Endpoint, int]]:
        """(representative, positions) classes on which `selector` cannot differ."""
        everyone = (1 << len(self.members)) - 1
        if self.per_position:
            return [(m, 1 << i) for i, m in enumerate(self.members)]
        key = self.varying
        if key is None or key not in set(selector.keys()):
            return [(self.members[0], everyone)]
        named = {v for k, v in selector.match_labels if k == key}
        for req in selector.match_expressions:
            if req.key == key:
                named.update(req.values)
        by_value = self._by_value
        if not by_value:
            for i, m in enumerate(self.members):
                first, mask = by_value.get(m.labels.get(key), (i, 0))
                by_value[m.labels.get(key)] = (first, mask | 1 << i)
        # a class per value the selector names (and for the label's absence), one for the
        # values it does not name: each represented by its first member
        out = []
        rest = everyone
        for value in (None, *named):
            hit = by_value.get(value)
            if hit is not None:
                out.append((self.members[hit[0]], hit[1]))
                rest &= ~hit[1]
        if rest:
            out.append((self.members[(rest & -rest).bit_length() - 1], rest))
        return out
