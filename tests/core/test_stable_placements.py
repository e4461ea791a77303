"""Stable placements (issue 33): a job keeps the domain the last render gave it; new jobs
use what is left; a job moves only when its domain no longer allows or holds it, and then
analyze names the re-pin and why."""

from __future__ import annotations

import json
import shutil
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner

from diff.prs import QUARANTINE, pytorchjob
from topogen.cli import main
from topogen.plan.assignment import JobNeed, assign

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pytorch-three-zone"


def _cli(*args: str) -> tuple[int, str]:
    """Exit code and everything printed (stdout and stderr)."""
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def _json(*args: str) -> object:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def _placements(root: Path) -> dict[str, dict[str, object]]:
    doc = _json("analyze", "-c", str(root / "topogen.yaml"), "-o", "json")
    assert isinstance(doc, dict)
    (plan,) = doc["plans"]
    return {p["job"]: p for p in plan["jobPlacements"]}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "gitops"
    shutil.copytree(EXAMPLE, root)
    code, out = _cli("render", "-c", str(root / "topogen.yaml"))
    assert code == 0, out
    return root


def test_adding_a_job_leaves_resnet_where_it_is(repo: Path) -> None:
    assert _placements(repo)["research/resnet"]["domain"] == "us-east-1a"
    (repo / "workloads" / "bert-large.yaml").write_text(pytorchjob("bert-large", 4, 2))
    placed = _placements(repo)
    assert placed["research/resnet"]["domain"] == "us-east-1a"
    assert placed["research/resnet"]["change"] == "kept"
    assert placed["research/bert-large"] | {"reason": ""} == placed["research/bert-large"] | {
        "domain": "us-east-1b",
        "change": "new",
        "previousDomain": None,
        "repin": None,
        "reason": "",
    }


def test_without_the_last_render_the_packing_starts_afresh(repo: Path) -> None:
    """The largest job first: bert-large takes us-east-1a, resnet goes to us-east-1b."""
    (repo / "workloads" / "bert-large.yaml").write_text(pytorchjob("bert-large", 4, 2))
    (repo / "policies" / "prod-east" / "placements.yaml").unlink()
    placed = _placements(repo)
    assert placed["research/resnet"]["domain"] == "us-east-1b"
    assert {p["change"] for p in placed.values()} == {"new"}


def test_a_denied_domain_repins_with_the_reason(repo: Path) -> None:
    (repo / "workloads" / "bert-large.yaml").write_text(pytorchjob("bert-large", 4, 2))
    assert _cli("render", "-c", str(repo / "topogen.yaml"))[0] == 0
    (repo / "cilium" / "quarantine.yaml").write_text(QUARANTINE)
    placed = _placements(repo)
    bert, resnet = placed["research/bert-large"], placed["research/resnet"]
    assert resnet["change"] == "kept" and resnet["domain"] == "us-east-1a"
    assert bert["change"] == "moved" and bert["previousDomain"] == "us-east-1b"
    assert bert["domain"] == "us-east-1a" and bert["excludes"] == ["research/resnet"]
    assert "us-east-1b no longer allows its traffic" in str(bert["repin"])
    assert "quarantine-us-east-1b" in str(bert["repin"])
    code, out = _cli("render", "-c", str(repo / "topogen.yaml"))
    assert code == 0
    assert "job research/bert-large of group pytorch re-pinned from us-east-1b to us-east-1a" in out
    # rendered again: nothing moves, the queued job stays queued behind the kept one
    again = _placements(repo)
    assert {j: (p["domain"], p["change"]) for j, p in again.items()} == {
        "research/bert-large": ("us-east-1a", "kept"),
        "research/resnet": ("us-east-1a", "kept"),
    }
    assert again["research/bert-large"]["excludes"] == ["research/resnet"]


def test_a_broken_placements_file_is_an_input_error(repo: Path) -> None:
    path = repo / "policies" / "prod-east" / "placements.yaml"
    path.write_text("<<<<<<< HEAD\nkind: Placements\n", encoding="utf-8")
    code, out = _cli("analyze", "-c", str(repo / "topogen.yaml"))
    assert code == 2
    assert "placements.yaml" in out and "Traceback" not in out


def test_assign_keeps_jobs_and_packs_the_rest_around_them() -> None:
    cap = {"a": Fraction(8), "b": Fraction(8)}
    jobs = [JobNeed("big", Fraction(8), ("a", "b")), JobNeed("small", Fraction(6), ("a", "b"))]
    assert assign(jobs, cap).domain == {"big": "a", "small": "b"}  # afresh: largest first
    kept = assign(jobs, cap, keep={"small": "a"})
    assert kept.domain == {"big": "b", "small": "a"} and kept.runs_at_once == {"big", "small"}
    # a kept job is never moved to make room (the repair pass leaves it), the other queues
    crowded = assign(jobs, {"a": Fraction(8), "b": Fraction(0)}, keep={"small": "a"})
    assert crowded.domain["small"] == "a" and crowded.runs_at_once == {"small"}
    # one queued there stays queued there, behind the packed one, rendered again
    again = assign(jobs, cap | {"b": Fraction(0)}, keep={"small": "a", "big": "a"},
                   was_queued=frozenset({"big"}))  # fmt: skip
    assert again.runs_at_once == {"small"} and again.excludes == {"big": ("small",)}
