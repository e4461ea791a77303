"""The pipeline's performance machinery, in one place: the work is shared out among forked
workers, results come back by pickle, and the garbage collector pauses meanwhile.

Why: topogen runs in Argo CD's repo-server on every refresh and in CI on every pull
request, so a fleet (thousands of nodes, a thousand jobs) must take seconds; the analysis
of one group is pure Python, so only processes use more than one core.

Groups are independent (pure functions of the cluster's inputs), so a fleet's groups
are shared out among forked copies of the process: each claims the next group of its own
share of the order (groups alike side by side, so what they share is mostly computed in
one process), then from the end of the fullest share, until none is left, and sends each
result as soon as it has it (pickled while the others still work, not all at the end).
The parent runs its share too, unpickling what has arrived between its own groups, and
puts the results in group order, so the report is the same object for object, whichever
process computed what.
Reading a large input starts the same way: the workloads in a forked copy
(in_background), what comes back is their pickle (pipeline/inputs.py).

Objects the parent already holds (workloads, their templates, the jobs found in them,
the group configs, the topology's nodes) cross the pipe as references to the parent's
own; placements as node positions; a job's lazy list of blocked paths as what is
needed to list them again in the parent. A worker that fails or dies leaves its groups
to the parent, which computes them (and raises whatever they raise).

Render shares out its work after the analysis the same way, in one go (every cluster's
signals and workload patches claimed first, then each group's policy files): what
crosses the pipe is text, not the analysis again. What is shared out, and in what order, is the caller's: pipeline/analyze.py
(analysis and plan of a cluster's groups) and pipeline/render.py.

Off when there is one core, few jobs, no fork (TOPOGEN_JOBS=1 turns it off,
TOPOGEN_JOBS=N sets the number of processes).
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import io
import os
import pickle
import struct
from array import array
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import fields
from itertools import starmap
from operator import attrgetter
from typing import Any, TypeVar

from topogen.analysis.cannotrun import CannotRun
from topogen.analysis.domains import DomainCheck
from topogen.analysis.findings import JobAnalysis
from topogen.analysis.paths import BlockedPaths
from topogen.analysis.placed import Placement
from topogen.model import Node

__all__ = [
    "Shared",
    "in_background",
    "map_groups",
    "no_cycle_collection",
    "workers",
]

T = TypeVar("T")
MIN_JOBS = 200  # below this many jobs a second process costs more than it saves
MIN_PLANS = 40  # below this many groups the work after the analysis stays in one process

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
_domain_values = attrgetter(*(f.name for f in fields(DomainCheck)))


def workers(jobs: int, minimum: int = MIN_JOBS) -> int:
    """How many processes to handle `jobs` items with (one below `minimum` items)."""
    env = os.environ.get("TOPOGEN_JOBS", "")
    if env.isdigit() and int(env) > 0:
        return int(env) if hasattr(os, "fork") else 1
    if not hasattr(os, "fork") or jobs < minimum:
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Pause Python's cyclic garbage collector.

    Reading a fleet and analyzing it allocates millions of small, acyclic objects; the
    collector, triggered by allocation counts, would walk them again and again (about a
    quarter of the run at 5,000 nodes) and find nothing. Reference counting still frees
    everything as usual; cycles made meanwhile are collected once it is back on.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


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


class _Pickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, shared: Shared) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.shared = shared

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is DomainCheck:  # the most numerous, never shared: first
            return obj.__reduce__()
        if type(obj) is JobAnalysis:  # its domain checks as rows (none is held elsewhere)
            values = list(_analysis_values(obj))
            values[_DOMAINS_AT] = list(map(_domain_values, obj.domains))
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


class _Sender:
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
        view = memoryview(_LENGTH.pack(len(frame)) + frame)
        frame.release()
        while view:
            view = view[os.write(self.fd, view) :]


class _Receiver:
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


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def map_groups(
    func: Callable[[int], T],
    count: int,
    procs: int,
    shared: Shared,
    order: Sequence[int] | None = None,
    shares: bool = False,
    meanwhile: Callable[[], object] | None = None,
) -> list[T]:
    """[func(i) for i in range(count)], shared out among `procs` processes, which claim
    the items in `order` (the largest first balances them best). `shares`: each process
    claims from its own contiguous share of `order` first, then from the end of the share
    with the most left (items that fill the same caches, kept together in `order`, are
    then mostly computed by one process: each process fills its caches itself). An item
    that raises, in any process, is computed again once the others are in, in item order:
    the error raised is the one the serial run raises. `meanwhile`: the parent's own work
    that needs none of the items, done before them (the workers already at theirs: the
    parent then claims fewer); what it raises is raised before any item's error."""
    if procs < 2 or count < 2:
        if meanwhile is not None:
            meanwhile()
        return [func(i) for i in range(count)]
    import multiprocessing  # only when the work is shared out (start-up: tens of modules)

    claims = list(order) if order is not None else list(range(count))
    ctx = multiprocessing.get_context("fork")
    parts = procs if shares else 1
    # share k: claims[fronts[k]:backs[k]], what is left of it
    fronts = ctx.RawArray("i", [k * count // parts for k in range(parts)])
    backs = ctx.RawArray("i", [(k + 1) * count // parts for k in range(parts)])
    lock = ctx.Lock()

    def claim(k: int) -> int | None:
        with lock:
            k = k if shares else 0
            front: int = fronts[k]
            if front < backs[k]:
                fronts[k] = front + 1
                return claims[front]
            most = max(range(parts), key=lambda j: backs[j] - fronts[j])
            back: int = backs[most]
            if fronts[most] >= back:
                return None
            backs[most] = back - 1
            return claims[back - 1]

    children = []
    for worker in range(1, procs):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker: compute what it claims, hand it over, leave
            os.close(r)
            # an item that raises (or whose result does not pickle) ends the worker's
            # share: the parent computes what is missing, and raises what it raises
            with contextlib.suppress(BaseException):
                sender = _Sender(w, shared)
                while (i := claim(worker)) is not None:
                    sender.send(i, func(i))
            os._exit(0)
        os.close(w)
        children.append((pid, _Receiver(r, shared)))
    results: dict[int, Any] = {}
    failed: BaseException | None = None
    if meanwhile is not None:
        try:
            meanwhile()
        except Exception as exc:  # raised once the workers are in (none left behind)
            failed = exc
    while failed is None and (i := claim(0)) is not None:
        # an item that raises is computed again below, in item order: the serial run's error
        with contextlib.suppress(Exception):
            results[i] = func(i)
        for _, receiver in children:
            receiver.poll()
    for pid, receiver in children:
        try:
            results.update(receiver.finish())
        finally:
            os.close(receiver.fd)
            os.waitpid(pid, 0)
    if failed is not None:
        raise failed
    return [results[i] if i in results else func(i) for i in range(count)]


def in_background(func: Callable[[], T], procs: int) -> Callable[[], T]:
    """func, run in a forked copy of the process while the caller goes on (procs > 1);
    what it returns comes back by pickle when asked for. If the copy fails (func raises,
    its result does not pickle, it dies), func runs again in the caller when asked for,
    which raises whatever it raises: the caller sees what it would have without the copy."""
    if procs < 2:
        return func
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the copy: compute, hand over, leave (nothing of the parent's is flushed)
        os.close(r)
        try:
            data = pickle.dumps(func(), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException:
            data = b""
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(w, view) :]
        finally:
            os._exit(0)
    os.close(w)
    done: list[T] = []

    def result() -> T:
        if not done:
            try:
                data = _read_all(r)
            finally:
                os.close(r)
                os.waitpid(pid, 0)
            done.append(pickle.loads(data) if data else func())
        return done[0]

    return result
