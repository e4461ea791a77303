"""bench/gatekeeper_cost.py's pure parts: the sample it checks against gator expand, and
its report line's arithmetic (over no policy, and the ratio to the reference)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests" / "live")]
import gatekeeper_cost as gc  # noqa: E402


def _pod(name: str, role: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"role": role}}, "spec": {"containers": []}}


def test_the_sample_takes_each_distinct_pod_first() -> None:
    pods = [_pod(f"a{i}", "a") for i in range(gc.SAMPLE + 5)] + [_pod("b0", "b")]
    names = [p["metadata"]["name"] for p in gc._sample(pods)]
    assert len(names) == gc.SAMPLE
    assert names[:2] == ["a0", "b0"]  # the one pod of its kind is in, though it comes last


def test_the_report_counts_over_no_policy() -> None:
    cost = {
        "pods": 10,
        "rounds": 3,
        "mutators": 12,
        "checked": 4,
        "micros": {"none": 20.0, "reference": 120.0, "generated": 320.0, "trial.yaml": 220.0},
        "changed": {"none": 0, "reference": 10, "generated": 9, "trial.yaml": 10},
    }
    (line,) = gc.report_lines(cost)
    assert "the generated 12 mutators (changing 9 of the pods) **300 µs**" in line
    assert "**300 µs** of CPU per pod over no policy (20 µs)" in line
    assert "the reference's ModifySet 100 µs (3.00x)" in line
    assert "2 rounds counted" in line and "on 4 of them" in line
    assert line.endswith("; trial.yaml 200 µs.")
