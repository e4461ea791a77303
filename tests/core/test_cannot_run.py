"""CannotRun: a domain's cannot-run problems, made when first read, equal to the tuple."""

from __future__ import annotations

import pickle

from topogen.analysis.domains import CannotRun


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
