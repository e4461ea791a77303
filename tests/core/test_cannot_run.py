"""CannotRun: a domain's cannot-run problems, made when first read, equal to the tuple."""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path

import pytest

from topogen.analysis.cannotrun import CannotRun, _Repinned
from topogen.analysis.findings import JobAnalysis
from topogen.config import load_config
from topogen.pipeline.analyze import ClusterRun, analyze
from topogen.plan.group_plan import GroupPlan

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import fleet


class _Pinned:
    def __init__(self) -> None:
        self.asked: list[int] = []

    def why_not(self, d: int) -> str:
        self.asked.append(d)
        return f"no node in domain {d}"


class _Provisioning:
    def __init__(self, gap: str) -> None:
        self.gap = gap

    def gaps(self, zones: tuple[str, ...]) -> str:
        return self.gap


def _problems(gap: str = "") -> tuple[CannotRun, _Pinned]:
    pinned = _Pinned()
    failing = [("coordinator", "job-a", pinned), ("worker", "job-a-w", pinned)]
    return CannotRun((3, "zone-b", ("zone-b",)), failing, _Provisioning(gap)), pinned  # type: ignore[arg-type]


def test_texts_are_made_when_first_read() -> None:
    problems, pinned = _problems()
    assert len(problems) == 2 and problems
    assert pinned.asked == []
    assert problems[0] == "coordinator job-a cannot run in zone-b: no node in domain 3"
    assert pinned.asked == [3, 3]


def test_equal_hashed_and_pickled_as_the_tuple() -> None:
    problems, _ = _problems("no NodePool can add a node in zone-b")
    expected = tuple(
        f"{role} {name} cannot run in zone-b: no node in domain 3; "
        "no NodePool can add a node in zone-b"
        for role, name in (("coordinator", "job-a"), ("worker", "job-a-w"))
    )
    assert problems == expected and expected == problems
    assert hash(problems) == hash(expected)
    assert list(problems) == list(expected)
    loaded = pickle.loads(pickle.dumps(problems))
    assert type(loaded) is tuple and loaded == expected
    assert problems != _problems()[0]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="workers are forked")
def test_a_workers_texts_are_made_in_the_parent_when_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker sends a domain's cannot-run problems without their texts; read in the
    parent, they are the texts one process makes.

    Which process computes which group depends on the load (the parent takes what a
    worker has not yet claimed), so the test arranges it: the groups with cannot-run
    problems come first in the worker's share of the order, and the parent starts its
    own groups only once the worker has computed its first."""
    fleet.write_fleet(fleet.FleetSpec("cr", 200, 12, 60, 30, seed=3), tmp_path)
    config = tmp_path / "snapshot" / "topogen.yaml"
    one, order = ClusterRun._one, ClusterRun._order
    cannot_run: set[int] = set()

    def recorded(self: ClusterRun, g: int) -> tuple[list[JobAnalysis], GroupPlan]:
        jobs, plan = one(self, g)
        if any(isinstance(d.problems, CannotRun) for j in jobs for d in j.domains):
            cannot_run.add(g)
        return jobs, plan

    monkeypatch.setenv("TOPOGEN_JOBS", "1")
    monkeypatch.setattr(ClusterRun, "_one", recorded)
    report = analyze(load_config(config))
    serial = [tuple(d.problems) for c in report.clusters for j in c.jobs for d in j.domains]
    assert cannot_run, "the fleet has no group with cannot-run problems"

    parent = os.getpid()
    done, told = os.pipe()  # a byte once the worker has computed a group
    open_ends = {told}

    def arranged(self: ClusterRun) -> list[int]:
        rest = [g for g in order(self) if g not in cannot_run]
        half = len(self.groups) // 2  # map_groups' shares: the worker's starts here
        return rest[:half] + sorted(cannot_run) + rest[half:]

    def in_turn(self: ClusterRun, g: int) -> tuple[list[JobAnalysis], GroupPlan]:
        if os.getpid() != parent:
            result = one(self, g)
            os.write(told, b"\0")
            return result
        if told in open_ends:  # the parent's first group (the workers are forked by now)
            open_ends.remove(told)
            os.close(told)
            os.read(done, 1)  # the worker's byte, or the end if it died
        return one(self, g)

    monkeypatch.setenv("TOPOGEN_JOBS", "2")
    monkeypatch.setattr(ClusterRun, "_order", arranged)
    monkeypatch.setattr(ClusterRun, "_one", in_turn)
    try:
        report = analyze(load_config(config))
    finally:
        for end in (done, *open_ends):
            os.close(end)
    shared = [d.problems for c in report.clusters for j in c.jobs for d in j.domains]
    sent = [
        p
        for p in shared
        if isinstance(p, CannotRun) and any(type(f[2]) is _Repinned for f in p._failing)
    ]
    assert sent, "no cannot-run problems crossed from the worker"
    assert all(p._texts is None for p in sent)  # not made by the worker, nor yet here
    assert [tuple(p) for p in shared] == serial
    assert all(p._texts is not None for p in sent)  # made when read, once


def test_domain_checks_equal_hashed_and_pickled_by_their_fields() -> None:
    """DomainCheck is a plain dataclass (made by the tens of thousands): equal and hashed
    by its fields, as a frozen one is, and pickled as them."""
    from fractions import Fraction

    from topogen.analysis.domains import DomainCheck

    def check(fits: bool) -> DomainCheck:
        return DomainCheck(
            "zone-b", ("zone-b",), (), None, True, fits, ("short of GPUs",), (),
            Fraction(8), Fraction(4), 1,
        )  # fmt: skip

    a, b = check(True), check(True)
    assert a is not b and a == b and hash(a) == hash(b)
    assert a != check(False)
    assert len({a, b, check(False)}) == 2
    loaded = pickle.loads(pickle.dumps(a))
    assert loaded == a and type(loaded) is DomainCheck and loaded.gpus_now == Fraction(0)
