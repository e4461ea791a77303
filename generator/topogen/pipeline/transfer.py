"""How results cross the pipe from a forked worker to the parent (parallel.py): each
pickled as soon as it is made, behind its length, and unpickled by the parent between its
own items. Objects the parent already holds (Shared) cross as references to its own;
placements as node positions; a job's lazy list of blocked paths as what is needed to
list it again in the parent; a domain's cannot-run texts as what they are made from; a
job's domain checks as rows of their fields. Imported only when work is shared out (a
small input never forks: start-up)."""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import pickle
import struct
from array import array
from dataclasses import fields
from itertools import starmap
from operator import attrgetter
from typing import Any

from topogen.analysis.cannotrun import CannotRun
from topogen.analysis.domains import DomainCheck, domain_check_values
from topogen.analysis.findings import JobAnalysis
from topogen.analysis.paths import BlockedPaths
from topogen.analysis.placed import Placement
from topogen.pipeline.shared import Shared

__all__ = ["Receiver", "Sender", "read_all", "write_all"]

_LENGTH = struct.Struct("<Q")  # a result's pickle follows its length
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_PIPE_SIZE = 1 << 20  # Linux's default limit for a pipe's buffer (fs.pipe-max-size)

# set while the parent unpickles a worker's results
_current: Shared | None = None

# a job's analysis crosses the pipe with its domain checks (a fleet's most numerous
# objects, tens of thousands) as rows of their fields: made and pickled in C, where a
# reduce of each cost about twice as much on both ends
_ANALYSIS_FIELDS = tuple(f.name for f in fields(JobAnalysis))
_DOMAINS_AT = _ANALYSIS_FIELDS.index("domains")
_analysis_values = attrgetter(*_ANALYSIS_FIELDS)


class _Pickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, shared: Shared) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.shared = shared

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is DomainCheck:  # the most numerous, never shared: first
            return obj.__reduce__()
        if type(obj) is JobAnalysis:  # its domain checks as rows (none is held elsewhere)
            values = list(_analysis_values(obj))
            values[_DOMAINS_AT] = list(map(domain_check_values, obj.domains))
            return _analysis, tuple(values)
        s = self.shared
        i = s.ids.get(id(obj))
        if i is not None:
            return _shared, (i,)
        if type(obj) is Placement:
            positions = array("I", (s.node_ids[id(n)] for n in obj.nodes)).tobytes()
            return _placement, (positions, dict(obj.excluded))
        if type(obj) is CannotRun:
            # its texts made in the parent if read, from the parent's own index
            recipe = obj.recipe(lambda o: id(o) in s.ids)
            return NotImplemented if recipe is None else recipe
        if type(obj) is BlockedPaths:
            if obj.members is None or s.blocked is None:
                return _materialized, (tuple(obj),)
            return _lazy_blocked, (len(obj), s.group, obj.members)
        return NotImplemented


def _analysis(*values: Any) -> JobAnalysis:
    rebuilt = list(values)
    rebuilt[_DOMAINS_AT] = tuple(starmap(DomainCheck, values[_DOMAINS_AT]))
    return JobAnalysis(*rebuilt)


def _shared(i: int) -> object:
    assert _current is not None
    return _current.objects[i]


def _placement(positions: bytes, excluded: dict[str, int]) -> Placement:
    assert _current is not None
    nodes = _current.nodes
    return Placement(tuple(nodes[i] for i in array("I", positions)), excluded)


def _lazy_blocked(count: int, group: int, members: tuple[Any, ...]) -> BlockedPaths:
    assert _current is not None and _current.blocked is not None
    return BlockedPaths(count, _current.blocked(group, members), members)


def _materialized(items: tuple[Any, ...]) -> BlockedPaths:
    return BlockedPaths(len(items), lambda: iter(items))


class Sender:
    """A worker's results, each pickled as soon as it is computed (so the pickling is
    shared out with the work, not left for the end) and sent behind its length. One
    pickler for them all: its memo spans the results, as the parent's unpickler's does."""

    def __init__(self, fd: int, shared: Shared) -> None:
        self.fd = fd
        self.shared = shared
        self.buf = io.BytesIO()
        self.pickler = _Pickler(self.buf, shared)
        with contextlib.suppress(OSError):  # fewer stops while the parent computes
            fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_SIZE)

    def send(self, i: int, result: Any) -> None:
        self.buf.seek(0)
        self.buf.truncate()
        self.shared.group = i
        self.pickler.dump((i, result))
        frame = self.buf.getbuffer()
        data = _LENGTH.pack(len(frame)) + frame
        frame.release()
        write_all(self.fd, data)


class Receiver:
    """The parent's end of a worker's pipe: what has arrived is read between the
    parent's own items (the worker never waits on a full pipe for long) and each
    complete result is unpickled then, so little is left once the parent's share is done."""

    def __init__(self, fd: int, shared: Shared) -> None:
        self.fd = fd
        self.shared = shared
        self.pending = bytearray()
        self.feed = _Feed()
        self.unpickler = pickle.Unpickler(self.feed)
        self.results: dict[int, Any] = {}
        os.set_blocking(fd, False)

    def poll(self) -> None:
        """Read what the pipe holds now, and unpickle the results complete."""
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self.fd, 1 << 20):
                self.pending += chunk
        self._unpickle()

    def finish(self) -> dict[int, Any]:
        """Read to the end (the worker is done or dead) and unpickle every complete
        result; a result cut short (a worker that died writing it) is left out."""
        os.set_blocking(self.fd, True)
        while chunk := os.read(self.fd, 1 << 20):
            self.pending += chunk
        self._unpickle()
        return self.results

    def _unpickle(self) -> None:
        global _current
        at = 0
        pending = self.pending
        while len(pending) - at >= _LENGTH.size:
            (size,) = _LENGTH.unpack_from(pending, at)
            end = at + _LENGTH.size + size
            if end > len(pending):
                break
            self.feed.data = memoryview(pending)[at + _LENGTH.size : end]
            self.feed.at = 0
            _current = self.shared
            try:
                i, r = self.unpickler.load()
            finally:
                _current = None
                self.feed.data.release()
            self.results[i] = r
            at = end
        del pending[:at]


class _Feed:
    """The unpickler's file: the one result being unpickled."""

    def __init__(self) -> None:
        self.data = memoryview(b"")
        self.at = 0

    def read(self, n: int = -1) -> bytes:
        start = self.at
        self.at = len(self.data) if n < 0 else min(len(self.data), start + n)
        return bytes(self.data[start : self.at])

    def readinto(self, b: Any) -> int:
        n = min(len(b), len(self.data) - self.at)
        b[:n] = self.data[self.at : self.at + n]
        self.at += n
        return n

    def readline(self) -> bytes:
        start = self.at
        end = bytes(self.data[start:]).find(b"\n")
        self.at = len(self.data) if end < 0 else start + end + 1
        return bytes(self.data[start : self.at])


def read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def write_all(fd: int, data: bytes) -> None:
    """os.write until every byte is written (a pipe takes what its buffer holds)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
