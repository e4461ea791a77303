"""Golden reports for the changes reviewers most need to see, built from the zone-split example."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diff.kit import GOLDEN, check_golden, markdown_problems, scenario_report
from diff.scenarios import SCENARIOS
from topogen.diff import DiffReport, to_json, to_markdown, to_text


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, DiffReport]:
    return {
        name: scenario_report(name, tmp_path_factory.mktemp(name)) for name in sorted(SCENARIOS)
    }


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_markdown_golden(name: str, reports: dict[str, DiffReport]) -> None:
    text = to_markdown(reports[name])
    assert not markdown_problems(text)
    check_golden(GOLDEN / f"{name}.md", text)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_json_golden(name: str, reports: dict[str, DiffReport]) -> None:
    text = to_json(reports[name])
    json.loads(text)
    check_golden(GOLDEN / f"{name}.json", text)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_goldens_hold_no_machine_specifics(name: str, reports: dict[str, DiffReport]) -> None:
    for text in (to_markdown(reports[name]), to_json(reports[name]), to_text(reports[name])):
        assert "/tmp" not in text and str(Path.home()) not in text
        assert "pytest-of" not in text


def _notes(report: DiffReport, subject: str) -> list[str]:
    return [n for o in report.objects if o.subject == subject for n in o.notes]


def test_zone_added(reports: dict[str, DiffReport]) -> None:
    r = reports["zone-added"]
    for role in ("mutation", "validation"):
        notes = _notes(r, f"{role} of ml-training")
        assert "node affinity zones [zone-a] -> [zone-a, zone-c]" in notes
        assert "identity label zone=zone-a no longer set" in notes
    assert r.analysis is not None
    headlines = [f.headline for f in r.analysis.findings if f.status == "appears"]
    # HARD_BLOCK before (and still): CROSS_ZONE is no worse, a known problem (issue 33)
    assert headlines == [
        "group ml-training is now CROSS_ZONE, no worse than HARD_BLOCK before: the rendered "
        "fix covers it"
    ]
    assert not any(f.new_problem for f in r.analysis.findings)
    (plan,) = r.analysis.plans
    assert (
        plan.headline
        == "domain east of group ml-training now spans [zone-a, zone-c] (was [zone-a])"
    )


def test_gpu_taint_changed(reports: dict[str, DiffReport]) -> None:
    r = reports["gpu-taint-changed"]
    assert _notes(r, "mutation of ml-training") == [
        "toleration nvidia.com/gpu=dedicated:NoSchedule added",
        "toleration nvidia.com/gpu=present:NoSchedule removed",
    ]
    assert r.analysis is not None and not r.analysis.findings  # same verdicts, other fix
    assert "toleration nvidia.com/gpu=dedicated:NoSchedule added" in to_text(r)


def test_network_tightened(reports: dict[str, DiffReport]) -> None:
    r = reports["network-tightened"]
    assert r.analysis is not None
    got = {(f.status, f.kind) for f in r.analysis.findings}
    assert got == {("appears", "HARD_BLOCK"), ("disappears", "CROSS_ZONE")}
    first = r.analysis.findings[0]
    assert first.headline == "this change makes group ml-training HARD_BLOCK"
    assert "allow-intra-zone-a" in first.message
    # the validation policy gains the check that the group never spans the denied zones
    (validate,) = [o for o in r.objects if o.subject == "validation of ml-training"]
    assert any(f.op == "added" and f.path.startswith("spec.validations") for f in validate.fields)
    md = to_markdown(r)
    assert "| **new problem** | `HARD_BLOCK` |" in md


def test_gpu_capacity_dropped(reports: dict[str, DiffReport]) -> None:
    r = reports["gpu-capacity-dropped"]
    assert r.analysis is not None
    (new,) = [f for f in r.analysis.findings if f.status == "appears"]
    assert new.kind == "UNSCHEDULABLE"
    assert new.headline == "this change makes group ml-training UNSCHEDULABLE"
    assert "needs 4 GPUs" in new.message and "zone-a (2 GPUs)" in new.message
    (plan,) = r.analysis.plans
    assert "can no longer be enforced" in plan.headline
    removed = {o.subject for o in r.objects if o.status == "removed"}
    assert {"mutation of ml-training", "validation of ml-training"} <= removed
    assert r.count("added") == 0


def test_validation_enforce(reports: dict[str, DiffReport]) -> None:
    r = reports["validation-enforce"]
    (only,) = r.objects
    assert only.subject == "validation of ml-training"
    assert only.notes == ("validation Audit -> Deny (Audit reports, Deny refuses)",)
    assert r.analysis is not None and r.analysis.empty
    md = to_markdown(r)
    assert "validation of ml-training: validation Audit -> Deny (Audit reports, Deny refuses)" in md
