"""The problem's states with the real kube-scheduler (examples/zone-split).

(1) unconstrained, the scheduler splits coordinator and workers across zones;
(2) `topogen analyze` over the live snapshot calls that a HARD_BLOCK;
(3) bound and Running, `topogen audit` reports the group broken;
(4) mutated by the generated Kyverno policies, the group lands in one allowed zone and
    audit reports it healthy, network policies unchanged;
(5) a constraint too strict for the capacity stays Pending; topogen's plan refused it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from live_harness import ControlPlane
from live_kit import (
    EXAMPLE,
    NS,
    cli,
    docs,
    example_snapshot,
    fake_prometheus,
    kyverno_apply,
    pods_of,
    write_config,
)

from tooling import require_tool
from topogen.config import load_config
from topogen.pipeline.analyze import analyze

ZONE = {"gpu-a1": "zone-a", "gpu-a2": "zone-a", "cpu-b1": "zone-b", "cpu-b2": "zone-b"}
BEFORE = EXAMPLE / "workloads" / "before"
AFTER = EXAMPLE / "workloads" / "after"


def _schedule(cluster: ControlPlane, pods: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Create the coordinator first (workers may need it placed), then the rest."""
    placed: dict[str, str] = {}
    coordinator = [p for p in pods if p["metadata"]["labels"].get("role") == "coordinator"]
    workers = [p for p in pods if p not in coordinator]
    for batch in (coordinator, workers):
        for p in batch:
            cluster.create_pod(_admissible(p))
        placed |= cluster.wait_scheduled(NS, [p["metadata"]["name"] for p in batch])
    return placed


def _admissible(pod: dict[str, Any]) -> dict[str, Any]:
    meta = pod["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": meta["name"],
            "namespace": meta.get("namespace", NS),
            "labels": meta.get("labels", {}),
        },
        "spec": pod["spec"],
    }


def _zones(placed: dict[str, str], prefix: str) -> set[str]:
    return {ZONE[n] for p, n in placed.items() if p.startswith(prefix)}


def _before_bound(cluster: ControlPlane) -> dict[str, str]:
    placed = _schedule(cluster, pods_of(docs(BEFORE)))
    assert all(placed.values()), placed  # all bound
    return placed


def test_state1_scheduler_splits_the_group(cluster: ControlPlane, tmp_path: Path) -> None:
    example_snapshot(cluster, tmp_path)
    placed = _before_bound(cluster)
    assert _zones(placed, "trainer-coordinator") == {"zone-b"}
    assert _zones(placed, "trainer-workers") == {"zone-a"}


def test_state2_analyze_over_the_live_snapshot_flags_hard_block(
    cluster: ControlPlane, tmp_path: Path
) -> None:
    snap = example_snapshot(cluster, tmp_path)
    placed = _before_bound(cluster)
    config = write_config(tmp_path, nodes=[snap], workloads=[BEFORE])
    result = cli("analyze", "-c", config, "-o", "json")
    assert result.exit_code == 1, result.output
    kinds = {f["kind"] for f in json.loads(result.stdout)["findings"]}
    assert "HARD_BLOCK" in kinds
    # the zone pair the real scheduler chose is one of the blocked paths
    report = analyze(load_config(config))
    (job,) = report.clusters[0].jobs
    blocked = {(b.src_role, b.src_zone, b.dst_role, b.dst_zone) for b in job.blocked}
    coord = _zones(placed, "trainer-coordinator").pop()
    worker = _zones(placed, "trainer-workers").pop()
    assert ("coordinator", coord, "worker", worker) in blocked
    assert ("worker", worker, "coordinator", coord) in blocked


def test_state3_audit_reports_the_running_group_broken(
    cluster: ControlPlane, admin_kubeconfig: Path, tmp_path: Path
) -> None:
    snap = example_snapshot(cluster, tmp_path)
    placed = _before_bound(cluster)
    cluster.set_running(NS, placed)
    config = write_config(tmp_path, nodes=[snap], workloads=[BEFORE])
    result = cli("audit", "--kubeconfig", admin_kubeconfig, "-c", config, "-o", "json")
    assert result.exit_code == 1, result.output
    (group,) = json.loads(result.stdout)["groups"]
    assert group["status"] == "broken"
    assert {p["phase"] for p in group["pods"]} == {"Running"} and len(group["pods"]) == 5
    assert {f["kind"] for f in group["flags"]} == {"SPLIT_ZONES", "PATH_DENIED"}
    rows = {p["pod"]: p for p in group["pods"]}
    assert rows["trainer-coordinator-0"]["zone"] == "zone-b"
    assert rows["trainer-coordinator-0"]["deniedPeers"] == [
        f"trainer-workers-{i}" for i in range(4)
    ]
    assert rows["trainer-workers-0"]["identity"] == "zone-a"  # stamped from its node
    denied = next(f for f in group["flags"] if f["kind"] == "PATH_DENIED")["message"]
    assert "cnp ml-demo/allow-intra-zone-b" in denied

    table = cli("audit", "--kubeconfig", admin_kubeconfig, "-c", config)
    assert table.exit_code == 1
    assert "BROKEN  ml-training job ml-demo/ml-training: 5 pods, 5 Running" in table.stdout
    assert "trainer-coordinator-0" in table.stdout and "denied (4/4 peers)" in table.stdout


def test_state4_mutated_pods_land_in_one_allowed_zone_and_audit_is_healthy(
    cluster: ControlPlane, admin_kubeconfig: Path, tmp_path: Path
) -> None:
    kyverno = require_tool("kyverno")
    snap = example_snapshot(cluster, tmp_path)
    config = write_config(tmp_path, nodes=[snap], workloads=[BEFORE])
    out = tmp_path / "out"
    rendered = cli("render", "-c", config, "--out", out)
    assert rendered.exit_code == 0, rendered.output
    policies = sorted(out.glob("policies/lab/kyverno/topogen-*.yaml"))
    assert len(policies) == 2  # mutate, validate
    mutated = kyverno_apply(kyverno, policies, pods_of(docs(BEFORE)), tmp_path)

    placed = _schedule(cluster, mutated)
    assert all(placed.values()), placed
    (plan,) = analyze(load_config(config)).plans
    assert {ZONE[n] for n in placed.values()} == set(plan.zones) == {"zone-a"}
    cluster.set_running(NS, placed)

    busy = [({"namespace": NS, "pod": p, "gpu": "0"}, 87.0) for p in placed if "workers" in p]
    with fake_prometheus(busy) as prom:
        result = cli(
            "audit",
            "--kubeconfig",
            admin_kubeconfig,
            "-c",
            config,
            "--prometheus",
            prom,
            "-o",
            "json",
        )
    assert result.exit_code == 0, result.output
    (group,) = json.loads(result.stdout)["groups"]
    assert group["status"] == "healthy" and group["flags"] == [] and group["zones"] == ["zone-a"]
    assert {p["verdict"] for p in group["pods"]} == {"allowed (4 peers)"}
    assert {p["gpuUtilisation"] for p in group["pods"] if p["gpus"] == "1"} == {87.0}

    # the same group with idle GPUs: Running, allowed, co-located, and still broken
    idle = [
        ({"exported_namespace": NS, "exported_pod": p, "namespace": "gpu-operator"}, 1.5)
        for p in placed
        if "workers" in p
    ]
    with fake_prometheus(idle) as prom:
        result = cli("audit", "--kubeconfig", admin_kubeconfig, "-c", config, "--prometheus", prom)
    assert result.exit_code == 1, result.output
    assert "IDLE_GPUS: every pod is Running but its GPUs are idle" in result.stdout

    # network policies unchanged: the live snapshot is byte for byte the same
    # (--out FILE here; `-o FILE`, the old spelling, wrote the first one)
    again = tmp_path / "snapshot-after.yaml"
    assert cli("snapshot", "--kubeconfig", admin_kubeconfig, "--out", again).exit_code == 0
    assert again.read_bytes() == snap.read_bytes()
    block = tmp_path / "snapshot-block.yaml"
    result = cli("snapshot", "--kubeconfig", admin_kubeconfig, "-o", "yaml", "--out", block)
    assert result.exit_code == 0, result.output
    body = [ln for ln in block.read_text(encoding="utf-8").splitlines() if ln[:1] != "#"]
    assert body[0].startswith("apiVersion: ")  # block style, not JSON
    assert _data(block) == _data(snap)


def _data(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _scaled_workers(src: Path, dst: Path, parallelism: int) -> Path:
    dst.mkdir(parents=True, exist_ok=True)
    for f in src.glob("*.yaml"):
        doc = yaml.safe_load(f.read_text())
        if doc["kind"] == "Job":
            doc["spec"]["parallelism"] = doc["spec"]["completions"] = parallelism
        (dst / f.name).write_text(yaml.safe_dump(doc))
    return dst


@pytest.mark.parametrize("workers", [6])
def test_state5_too_strict_constraint_stays_pending_and_the_plan_refused_it(
    cluster: ControlPlane, admin_kubeconfig: Path, tmp_path: Path, workers: int
) -> None:
    snap = example_snapshot(cluster, tmp_path)
    before = _scaled_workers(BEFORE, tmp_path / "before", workers)
    config = write_config(tmp_path, nodes=[snap], workloads=[before])
    rendered = cli("render", "-c", config, "--out", tmp_path / "out")
    assert rendered.exit_code == 1
    assert "no domain can hold it" in rendered.stderr and f"needs {workers} GPUs" in rendered.stderr
    (plan,) = analyze(load_config(config)).plans
    assert plan.refused and not plan.enforceable

    # the constraint topogen refused, applied anyway: everything pinned to zone-a
    placed = _schedule(cluster, pods_of(docs(AFTER), count=workers))
    pending = sorted(p for p, n in placed.items() if not n)
    assert len(pending) == workers - 4  # zone-a has 4 GPUs
    for name in pending:
        conds = cluster.pod(NS, name)["status"]["conditions"]
        assert any("Insufficient nvidia.com/gpu" in c.get("message", "") for c in conds)
    cluster.set_running(NS, [p for p, n in placed.items() if n])

    result = cli("audit", "--kubeconfig", admin_kubeconfig, "-c", config, "-o", "json")
    assert result.exit_code == 1, result.output
    (group,) = json.loads(result.stdout)["groups"]
    flags = [f for f in group["flags"] if f["kind"] == "PENDING_UNSCHEDULABLE"]
    assert len(flags) == len(pending)
    assert all("Insufficient nvidia.com/gpu" in f["message"] for f in flags)
    assert {f["kind"] for f in group["flags"]} == {"PENDING_UNSCHEDULABLE"}
