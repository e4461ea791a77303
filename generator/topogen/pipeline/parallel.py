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
own, and the rest as compactly as it can (pipeline/transfer.py). A worker that fails or
dies leaves its groups to the parent, which computes them (and raises whatever they raise).

Render shares out its work after the analysis the same way, in one go (every cluster's
signals and workload patches claimed first, then each group's policy files): what
crosses the pipe is text, not the analysis again. What is shared out, and in what order, is the caller's: pipeline/analyze.py
(analysis and plan of a cluster's groups) and pipeline/render.py.

Off when there is one core, few jobs, no fork (TOPOGEN_JOBS=1 turns it off,
TOPOGEN_JOBS=N sets the number of processes).
"""

from __future__ import annotations

import contextlib
import gc
import mmap
import os
from array import array
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from topogen.pipeline.shared import Shared

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
    # only when the work is shared out (start-up: pickle and the transfer's modules)
    from topogen.pipeline.transfer import Receiver, Sender

    claims = list(order) if order is not None else list(range(count))
    parts = procs if shares else 1
    board = _ClaimBoard(
        [k * count // parts for k in range(parts)], [(k + 1) * count // parts for k in range(parts)]
    )

    def claim(k: int) -> int | None:
        with board:
            fronts, backs = board.fronts, board.backs
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

    try:
        children = []
        for worker in range(1, procs):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # the worker: compute what it claims, hand it over, leave
                os.close(r)
                # an item that raises (or whose result does not pickle) ends the worker's
                # share: the parent computes what is missing, and raises what it raises
                with contextlib.suppress(BaseException):
                    sender = Sender(w, shared)
                    while (i := claim(worker)) is not None:
                        sender.send(i, func(i))
                os._exit(0)
            os.close(w)
            children.append((pid, Receiver(r, shared)))
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
    finally:
        board.close()
    if failed is not None:
        raise failed
    return [results[i] if i in results else func(i) for i in range(count)]


class _ClaimBoard:
    """Per share of the claim order: its front and its back, in memory the forked workers
    share (an anonymous shared mapping), changed only while holding the board (`with`): a
    one-byte token in a pipe, which one process at a time has read and not yet written back.
    (multiprocessing's shared array and lock would do the same, for some 30 ms of imports
    and a named semaphore per run.)"""

    def __init__(self, fronts: list[int], backs: list[int]) -> None:
        parts = len(fronts)
        values = array("i", [*fronts, *backs])
        self._memory = mmap.mmap(-1, len(values) * values.itemsize)  # MAP_SHARED: forks see it
        self._memory.write(values.tobytes())
        ints = memoryview(self._memory).cast("i")
        self.fronts, self.backs = ints[:parts], ints[parts:]
        self._ints = ints
        self._take, self._give = os.pipe()
        os.write(self._give, b"\0")

    def __enter__(self) -> None:
        os.read(self._take, 1)  # waits while another process holds the token

    def __exit__(self, *exc: object) -> None:
        os.write(self._give, b"\0")

    def close(self) -> None:
        for view in (self.fronts, self.backs, self._ints):
            view.release()
        self._memory.close()
        os.close(self._take)
        os.close(self._give)


def in_background(func: Callable[[], T], procs: int) -> Callable[[], T]:
    """func, run in a forked copy of the process while the caller goes on (procs > 1);
    what it returns comes back by pickle when asked for. If the copy fails (func raises,
    its result does not pickle, it dies), func runs again in the caller when asked for,
    which raises whatever it raises: the caller sees what it would have without the copy."""
    if procs < 2:
        return func
    import pickle  # only when a copy is made (start-up)

    from topogen.pipeline.transfer import read_all, write_all

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the copy: compute, hand over, leave (nothing of the parent's is flushed)
        os.close(r)
        try:
            data = pickle.dumps(func(), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException:
            data = b""
        try:
            write_all(w, data)
        finally:
            os._exit(0)
    os.close(w)
    done: list[T] = []

    def result() -> T:
        if not done:
            try:
                data = read_all(r)
            finally:
                os.close(r)
                os.waitpid(pid, 0)
            done.append(pickle.loads(data) if data else func())
        return done[0]

    return result
