"""The plan: which domain a group is confined to, and when it refuses."""

from __future__ import annotations

from pathlib import Path

import yaml

from helpers import GPU_TAINT, GPU_TOLERATION, config_doc, deployment, node_doc, write_tree
from topogen.config import load_config
from topogen.pipeline.analyze import analyze


def _case(
    tmp_path: Path, nodes: list[dict], workloads: list[dict], group: dict | None = None
) -> Path:
    write_tree(
        tmp_path,
        {
            "topogen.yaml": config_doc(group),
            "nodes.yaml": yaml.safe_dump_all(nodes),
            "policies/none.yaml": "",
            "workloads/w.yaml": yaml.safe_dump_all(workloads),
        },
    )
    return tmp_path / "topogen.yaml"


def _job(name: str, gpus_each: int, workers: int) -> list[dict]:
    return [
        deployment(f"{name}-coord", {"app": name, "role": "coordinator"}),
        deployment(
            f"{name}-workers",
            {"app": name, "role": "worker"},
            replicas=workers,
            gpus=gpus_each,
            spec={"tolerations": [GPU_TOLERATION]},
        ),
    ]


def test_plan_prefers_the_zone_that_holds_the_group(tmp_path: Path) -> None:
    nodes = [
        node_doc("a1", "zone-a", gpus=2, taints=[GPU_TAINT]),
        node_doc("b1", "zone-b", gpus=4, taints=[GPU_TAINT]),
        node_doc("b2", "zone-b", gpus=4, taints=[GPU_TAINT]),
    ]
    report = analyze(load_config(_case(tmp_path, nodes, _job("j", 2, 3))))
    plan = report.plans[0]
    assert plan.domain == "zone-b"
    assert plan.zones == ("zone-b",)
    assert [str(t.key) for t in plan.tolerations] == ["nvidia.com/gpu"]


def test_prefer_zones_breaks_ties(tmp_path: Path) -> None:
    nodes = [node_doc("a1", "zone-a", gpus=4), node_doc("b1", "zone-b", gpus=4)]
    cfg = _case(tmp_path, nodes, _job("j", 1, 2), {"preferZones": ["zone-b"]})
    assert analyze(load_config(cfg)).plans[0].domain == "zone-b"
    cfg = _case(tmp_path, nodes, _job("j", 1, 2), {"preferZones": []})
    assert analyze(load_config(cfg)).plans[0].domain == "zone-a"


def test_refusal_names_the_group_and_the_missing_capacity(tmp_path: Path) -> None:
    nodes = [node_doc("a1", "zone-a", gpus=4), node_doc("b1", "zone-b", gpus=4)]
    plan = analyze(load_config(_case(tmp_path, nodes, _job("j", 3, 3)))).plans[0]
    assert plan.domain is None and plan.refused
    assert "group ml-training" in plan.refused
    assert "needs 9 GPUs" in plan.refused


def test_jobs_that_fit_one_at_a_time_but_not_together_are_noted(tmp_path: Path) -> None:
    nodes = [node_doc("a1", "zone-a", gpus=4)]
    report = analyze(load_config(_case(tmp_path, nodes, _job("j1", 1, 4) + _job("j2", 1, 4))))
    plan = report.plans[0]
    assert plan.domain == "zone-a"
    assert "together need 8 GPUs of its 4" in plan.note
    assert any("together need 8 GPUs" in w for w in report.warnings)


def test_kueue_findings_carry_no_fix(tmp_path: Path) -> None:
    nodes = [node_doc("a1", "zone-a", gpus=4)]
    jobs = _job("j", 1, 2)
    for w in jobs:
        w["spec"]["template"]["metadata"]["labels"]["kueue.x-k8s.io/tas"] = "true"
    report = analyze(load_config(_case(tmp_path, nodes, jobs)))
    kinds = {f.kind.value: f for f in report.findings}
    assert "KUEUE_MANAGED" in kinds
    assert kinds["KUEUE_MANAGED"].fix == ""
    assert report.plans[0].kueue_jobs
