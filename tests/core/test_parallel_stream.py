"""parallel.map_groups streams each worker's results as they are computed: what arrives
is the serial run's, whatever the pipe holds at a time, and a worker that dies or
cannot pickle a result leaves the rest to the parent."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from topogen.pipeline.parallel import Shared, map_groups

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="workers are forked")


def _wait_for(path: Path) -> None:
    """Until the worker has started on its share (so it computes some of the items)."""
    deadline = time.monotonic() + 120
    while not path.exists():
        assert time.monotonic() < deadline, "the worker never started"
        time.sleep(0.01)


def test_results_larger_than_the_pipe_arrive_whole(tmp_path: Path) -> None:
    started = tmp_path / "started"
    parent = os.getpid()

    def item(i: int) -> tuple[int, str]:
        if os.getpid() != parent:
            started.touch()
        else:
            _wait_for(started)
        return i, f"{i}:" + "x" * 400_000  # 24 items: about 10 MB through the pipe

    got = map_groups(item, 24, 2, Shared(), shares=True)
    assert got == [(i, f"{i}:" + "x" * 400_000) for i in range(24)]


def test_a_worker_that_dies_leaves_only_what_it_did_not_send(tmp_path: Path) -> None:
    """The results the worker sent before it died are kept; the parent computes the rest
    (each item computed once: none of the sent ones again)."""
    started = tmp_path / "started"
    log = tmp_path / "computed"
    parent = os.getpid()
    sent: list[int] = []  # the worker's own copy

    def item(i: int) -> int:
        if os.getpid() != parent:
            started.touch()
            if len(sent) == 2:
                os._exit(1)  # dies on its third item
            sent.append(i)
        else:
            _wait_for(started)
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()} {i}\n")
        return i * 3

    got = map_groups(item, 12, 2, Shared(), shares=True)
    assert got == [i * 3 for i in range(12)]
    lines = [line.split() for line in log.read_text(encoding="utf-8").splitlines()]
    items = sorted(int(i) for _, i in lines)
    assert items == list(range(12))  # every item once: the worker's two came through
    assert sum(1 for pid, _ in lines if int(pid) != parent) == 2


def test_a_result_that_does_not_pickle_is_computed_by_the_parent(tmp_path: Path) -> None:
    started = tmp_path / "started"
    parent = os.getpid()

    def item(i: int) -> object:
        if os.getpid() != parent:
            started.touch()
            if i % 2:
                return lambda: i  # no pickle for a lambda: the worker stops here
        else:
            _wait_for(started)
        return i

    got = map_groups(item, 10, 2, Shared(), shares=True)
    assert [r() if callable(r) else r for r in got] == list(range(10))


@pytest.mark.parametrize("shares", [True, False])
def test_every_item_is_claimed_once_among_four_processes(tmp_path: Path, shares: bool) -> None:
    """The claim board the forked processes share hands each item to exactly one of
    them (a copy per process would have each worker compute items the others did too)."""
    log = tmp_path / "claimed"

    def item(i: int) -> int:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()} {i}\n")
        return i * i

    order = list(range(199, -1, -1))
    fds = sorted(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    got = map_groups(item, 200, 4, Shared(), order, shares=shares)
    assert got == [i * i for i in range(200)]
    lines = [tuple(map(int, line.split())) for line in log.read_text("utf-8").splitlines()]
    assert sorted(i for _, i in lines) == list(range(200))  # each item once
    if fds is not None:  # the board's pipe and mapping are closed again
        assert sorted(os.listdir("/proc/self/fd")) == fds


def test_sharing_out_imports_no_multiprocessing() -> None:
    """The claim board is a shared mapping and a pipe (multiprocessing's imports cost
    a fleet's run some 30 ms)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from topogen.pipeline.parallel import Shared, map_groups\n"
        "assert map_groups(lambda i: i + 1, 6, 2, Shared()) == [1, 2, 3, 4, 5, 6]\n"
        "print('multiprocessing' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
