"""A blocked path between two members of a job, and a job's list of them built lazily."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

from topogen.model import PolicyRef

__all__ = ["BlockedPath", "BlockedPaths", "PathSummary", "SplitSummary"]


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
class PathSummary:
    """A job's blocked paths in short: how many, the roles, zones and policies involved."""

    count: int
    roles: frozenset[str]
    zones: frozenset[str]
    policies: frozenset[PolicyRef]
    first: tuple[BlockedPath, ...]  # the first three


# a job's allowed but split zone pairs in short: (the first, its roles, its zones)
SplitSummary = tuple[tuple[str, str, str, str] | None, frozenset[str], frozenset[str]]


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
        self.members = members  # the job's members they are listed from (see pipeline/transfer.py)

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
