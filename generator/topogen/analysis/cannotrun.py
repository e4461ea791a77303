"""A domain's cannot-run problems: one per member that cannot run there, its text (why no
node of the domain takes the member) made when first read; sent from a worker to the
parent as what is needed to make it there (pipeline/transfer.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from topogen.analysis.nodeindex import NodeIndex
from topogen.analysis.placement import PinnedPlacements
from topogen.analysis.provisioning import Provisioning
from topogen.model import PodTemplate, Toleration

__all__ = ["CannotRun"]


class CannotRun(Sequence[str]):
    """The problems of a domain some members cannot run in, one per such member: how many
    is known at once, the texts (why no node of the domain takes the member) are made when
    first read. Most domains' problems are never read; where they are, only the first.
    Equal to, hashed like and pickled as the tuple of its texts."""

    __slots__ = ("_domain", "_failing", "_provisioning", "_texts", "_zones")

    def __init__(
        self,
        domain: tuple[int, str, tuple[str, ...]],
        failing: Sequence[tuple[str, str, PinnedPlacements | _Repinned]],
        provisioning: Provisioning,
    ) -> None:
        self._domain = domain  # (position among the candidates, name, zones)
        self._failing = failing  # (role, name, placements) of each member that cannot run
        self._provisioning = provisioning
        self._texts: tuple[str, ...] | None = None

    def recipe(
        self, shared: Callable[[object], bool]
    ) -> tuple[Callable[..., CannotRun], tuple[object, ...]] | None:
        """How a worker sends it to the parent without making its texts (most are never
        read): per failing member its template and the domain's extra tolerations, with
        the node index and the provisioning, which must be `shared` (the parent's own,
        parallel.Shared); the parent places the member again in this one domain if a text
        is read. None once its texts are made, for one rebuilt so, or when the index is
        not shared (then the texts are sent)."""
        if self._texts is not None or not self._failing:
            return None
        d, name, zones = self._domain
        failing = []
        for role, member, p in self._failing:
            if not isinstance(p, PinnedPlacements):
                return None
            failing.append((role, member, p.template, p.extra[d]))
        idx = self._failing[0][2].idx
        if not (shared(idx) and shared(self._provisioning)):
            return None
        return _rebuilt, (name, zones, tuple(failing), idx, self._provisioning)

    def texts(self) -> tuple[str, ...]:
        if self._texts is None:
            d, name, zones = self._domain
            gap = self._provisioning.gaps(zones)
            tail = f"; {gap}" if gap else ""
            self._texts = tuple(
                f"{role} {member} cannot run in {name}: {pinned.why_not(d)}{tail}"
                for role, member, pinned in self._failing
            )
        return self._texts

    def __len__(self) -> int:
        return len(self._failing)

    def __getitem__(self, k):  # type: ignore[no-untyped-def]
        return self.texts()[k]

    def __iter__(self) -> Iterator[str]:
        return iter(self.texts())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CannotRun):
            other = other.texts()
        return isinstance(other, tuple) and self.texts() == other

    def __hash__(self) -> int:
        return hash(self.texts())

    def __repr__(self) -> str:
        return repr(self.texts())

    def __reduce__(self) -> tuple[type[tuple[str, ...]], tuple[tuple[str, ...]]]:
        return tuple, (self.texts(),)


class _Repinned:
    """A member pinned to one domain, placed again (PinnedPlacements) when asked why not."""

    __slots__ = ("extra", "idx", "template", "zones")

    def __init__(
        self,
        idx: NodeIndex,
        template: PodTemplate,
        zones: tuple[str, ...],
        extra: Sequence[Toleration],
    ) -> None:
        self.idx, self.template, self.zones, self.extra = idx, template, zones, extra

    def why_not(self, d: int) -> str:
        return PinnedPlacements(self.idx, self.template, (self.zones,), (self.extra,)).why_not(0)


def _rebuilt(
    name: str,
    zones: tuple[str, ...],
    failing: tuple[tuple[str, str, PodTemplate, Sequence[Toleration]], ...],
    idx: NodeIndex,
    provisioning: Provisioning,
) -> CannotRun:
    """CannotRun.recipe's object again, in the parent."""
    return CannotRun(
        (0, name, zones),
        [(role, member, _Repinned(idx, t, zones, extra)) for role, member, t, extra in failing],
        provisioning,
    )
