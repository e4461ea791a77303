"""Each operator case through the whole chain, with the real Kyverno CLI.

analyze the example-shaped manifest (its group can be split across zones whose traffic
the policies deny), render, let the real Kyverno CLI mutate the pods the operator's
controller really creates, analyze those pods (clean), and let the generated validating
policy judge them (no violation).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from topogen.config import load_config
from topogen.model import FindingKind
from topogen.pipeline.analyze import analyze

from .kit import (
    NAMES,
    ZONE,
    kyverno,
    load_case,
    mutated_case_pods,
    mutated_pods_config,
    write_config,
)

pytestmark = pytest.mark.tools

BAD = {
    FindingKind.HARD_BLOCK,
    FindingKind.UNSCHEDULABLE,
    FindingKind.IDENTITY_MISMATCH,
    FindingKind.CROSS_ZONE,
}
POD_REQ = ("affinity", "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
NODE_REQ = ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")


def _get(spec: dict[str, Any], path: tuple[str, ...]) -> Any:
    for part in path:
        spec = (spec or {}).get(part) or {}
    return spec


def _zones(pod: dict[str, Any]) -> set[str]:
    terms = _get(pod["spec"], NODE_REQ).get("nodeSelectorTerms") or []
    return {
        v
        for t in terms
        for e in t.get("matchExpressions") or []
        if e["key"] == ZONE and e["operator"] == "In"
        for v in e["values"]
    }


@pytest.mark.parametrize("name", NAMES)
def test_example_through_render_kyverno_and_analyze(name: str, tmp_path: Path) -> None:
    case = load_case(name)
    config = write_config(tmp_path, case.profile, [case.folder / "manifest.yaml"])
    before = analyze(load_config(config))
    assert FindingKind.HARD_BLOCK in {f.kind for f in before.findings}, [
        f.message for f in before.findings
    ]
    jobs = {case.job(p) for p in case.members()}
    assert {j.job.job for c in before.clusters for j in c.jobs} == jobs

    mutated, policies = mutated_case_pods(case, tmp_path)
    zones: set[str] = set()
    for pod, after in zip(case.pods, mutated, strict=True):
        name_ = pod["metadata"]["name"]
        role = case.role(name_)
        if role == "none":
            assert after == pod, f"{name_} is not a member: topogen must leave it alone"
            continue
        zones |= _zones(after)
        assert _zones(after), f"{name_} ({role}) is not pinned to the domain"
        terms = _get(after["spec"], POD_REQ) or []
        if role == "worker":
            job_terms = [t for t in terms if t["topologyKey"] == ZONE]
            assert job_terms, f"{name_}: a worker without its co-location term"
        else:
            assert terms == (_get(pod["spec"], POD_REQ) or []), f"{name_}: {role} got pod affinity"
    assert len(zones) == 1, zones

    after_cfg = mutated_pods_config(tmp_path, case.profile, mutated)
    report = analyze(load_config(after_cfg))
    assert not [f.message for f in report.findings if f.kind in BAD]
    assert {j.job.job for c in report.clusters for j in c.jobs} == jobs
    for c in report.clusters:
        for j in c.jobs:
            roles = {m.workload.name: m.role for m in j.members}
            want = {p: case.role(p) for p in case.members() if case.job(p) == j.job.job}
            assert roles == want

    # the generated CLI tests (their expectations: the reference model) pass too
    result = kyverno(["test", policies / "tests"])
    assert result.returncode == 0 and "0 tests failed" in result.stdout, result.stdout[-3000:]

    validate = sorted(policies.glob("topogen-training-*validate.yaml"))
    res = tmp_path / "validate-pods.yaml"
    res.write_text(yaml.safe_dump_all(mutated, sort_keys=True))
    result = kyverno(["apply", *validate, "-r", res])
    text = result.stdout + result.stderr
    assert "fail: 0" in text and "error: 0" in text, text[-3000:]
