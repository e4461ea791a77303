"""The parent's objects a forked worker refers to instead of copying them
(pipeline/parallel.py shares the work out, pipeline/transfer.py sends the results)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from topogen.model import Node

__all__ = ["Blocked", "Shared"]

Blocked = Callable[[int, tuple[Any, ...]], Callable[[], Iterator[Any]]]


class Shared:
    """The parent's objects a worker refers to instead of copying (none by default)."""

    def __init__(
        self,
        objects: Sequence[object] = (),
        nodes: Sequence[Node] = (),
        blocked: Blocked | None = None,
    ) -> None:
        self.objects = list(objects)
        self.ids = {id(o): i for i, o in enumerate(self.objects)}
        self.nodes = tuple(nodes)
        self.node_ids = {id(n): i for i, n in enumerate(self.nodes)}
        # (group, members) -> producer of that job's blocked paths, for lazy lists; without
        # it they cross the pipe listed
        self.blocked = blocked
        self.group = -1  # the group whose results are being pickled
