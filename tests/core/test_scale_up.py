"""Capacity as the autoscaler sees it: nodes a Karpenter NodePool or a Cluster Autoscaler
node group can add count for verdicts, plans, the packing and refusals, judged by the same
node filters as existing nodes, bounded by the pool's limits (one budget for all zones)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from helpers import (
    GPU,
    GPU_TAINT,
    GPU_TOLERATION,
    ZONE,
    config_doc,
    deployment,
    node_doc,
    write_tree,
)
from topogen.cli import main
from topogen.config import load_config
from topogen.pipeline.analyze import analyze
from topogen.plan.assignment import JobNeed, PoolNeed, assign
from topogen.plan.capacity import Room, SharedPool

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
ZONES = ("zone-a", "zone-b", "zone-c")
P4D = {
    "name": "p4d.24xlarge",
    "zones": list(ZONES),
    "resources": {"cpu": "32", "memory": "256Gi", GPU: "8"},
}


def _nodepool(
    name: str = "gpu",
    zones: tuple[str, ...] = ZONES,
    limits: dict[str, Any] | None = None,
    **template: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "template": {
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "x"},
                "requirements": [{"key": ZONE, "operator": "In", "values": list(zones)}],
                "taints": [GPU_TAINT],
                **template,
            }
        }
    }
    if limits:
        spec["limits"] = limits
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": spec}  # fmt: skip


def _job(name: str, workers: int, gpus_each: int) -> list[dict[str, Any]]:
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


def _case(
    tmp_path: Path,
    pools: list[dict[str, Any]],
    jobs: list[dict[str, Any]],
    autoscaling: dict[str, Any] | None = None,
    nodes: list[dict[str, Any]] | None = None,
) -> Path:
    cpu = [node_doc(f"cpu-{z}", z) for z in ZONES] if nodes is None else nodes
    auto = {"instanceTypes": [P4D]} if autoscaling is None else autoscaling
    write_tree(
        tmp_path,
        {
            "topogen.yaml": config_doc(cluster={"nodes": ["cluster/"], "autoscaling": auto}),
            "cluster/nodes.yaml": yaml.safe_dump_all([*cpu, *pools]),
            "policies/none.yaml": "",
            "workloads/w.yaml": yaml.safe_dump_all(jobs),
        },
    )
    return tmp_path / "topogen.yaml"


def _plan(config: Path) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["analyze", "-c", str(config), "-o", "json"])
    assert result.exit_code in (0, 1), result.output
    doc = json.loads(result.stdout)
    (plan,) = doc["plans"]
    return plan  # type: ignore[no-any-return]


def test_the_scaled_to_zero_example_gives_the_fix_of_the_nodes_present() -> None:
    """examples/pytorch-scale-from-zero is pytorch-three-zone with its GPU nodes gone and
    the NodePool that adds them: the same HARD_BLOCK, the same fix (domains, the known
    job's zone, tolerations), and the fix says it needs a scale-up."""
    runner = CliRunner()
    present = runner.invoke(
        main, ["analyze", "-c", str(EXAMPLES / "pytorch-three-zone"), "-o", "json"]
    )
    scaled = runner.invoke(main, ["analyze", "-c", str(EXAMPLES / "pytorch-scale-from-zero"), "-o", "json"])  # fmt: skip
    assert present.exit_code == scaled.exit_code == 1, scaled.output
    a, b = json.loads(present.stdout), json.loads(scaled.stdout)
    assert (
        [(f["kind"], f["policies"]) for f in a["findings"]]
        == [(f["kind"], f["policies"]) for f in b["findings"]]
        == [("HARD_BLOCK", ["ccnp training-zone-isolation"])]
    )
    (pa,), (pb,) = a["plans"], b["plans"]
    assert pa["domains"] == pb["domains"] == ["us-east-1a", "us-east-1b"]
    assert (
        [(j["job"], j["domain"]) for j in pa["jobPlacements"]]
        == [(j["job"], j["domain"]) for j in pb["jobPlacements"]]
        == [("research/resnet", "us-east-1a")]
    )
    shared = "spread over us-east-1a, us-east-1b: coordinator tolerates nvidia.com/gpu=present:NoSchedule; each known job pinned to its assigned domain"  # fmt: skip
    assert pa["fix"].startswith(shared) and pb["fix"].startswith(shared)
    assert pa["scaleUp"] == [] and "scale-up" not in pa["fix"]
    assert pb["scaleUp"] == ["NodePool gpu in us-east-1a, up to 16 GPUs"]
    assert pb["fix"].endswith("; fits after scale-up: NodePool gpu in us-east-1a, up to 16 GPUs")
    assert pb["jobPlacements"][0]["reason"].endswith(
        "fits after scale-up: NodePool gpu in us-east-1a, up to 16 GPUs"
    )


def test_render_writes_the_policies_of_the_scaled_to_zero_example(tmp_path: Path) -> None:
    """The known job's zone and the group's domains are those rendered with the nodes
    present; only the zones a job unknown to the render may use differ (the NodePool keeps
    room in both zones, the nodes left room in us-east-1b only)."""
    runner = CliRunner()
    for name in ("pytorch-three-zone", "pytorch-scale-from-zero"):
        r = runner.invoke(
            main, ["render", "-c", str(EXAMPLES / name), "--out", str(tmp_path / name)]
        )
        assert r.exit_code == 0, r.output
    mutate = "policies/prod-east/kyverno/topogen-pytorch-mutate.yaml"
    present = (tmp_path / "pytorch-three-zone" / mutate).read_text()
    scaled = (tmp_path / "pytorch-scale-from-zero" / mutate).read_text()
    assert '{"research/resnet": dyn(["us-east-1a"])}' in present
    assert '{"research/resnet": dyn(["us-east-1a"])}' in scaled
    assert present.replace(': ["us-east-1b"])', ': ["us-east-1a", "us-east-1b"])') == scaled


def test_a_nodepool_outside_the_allowed_zones_is_the_reason_of_the_refusal(tmp_path: Path) -> None:
    """Traffic is allowed everywhere, but the only NodePool provisions in zone-c and the
    job is required in zone-a or zone-b: the refusal names the NodePool and its zones."""
    job = _job("big", 2, 8)
    for d in job:
        d["spec"]["template"]["spec"]["affinity"] = {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-a", "zone-b"]}]}
            ]}}}  # fmt: skip
    config = _case(tmp_path, [_nodepool("gpu-c", ("zone-c",))], job)
    plan = _plan(config)
    assert plan["refused"].startswith("group ml-training: no domain can hold it: job ml/big")
    for zone in ("zone-a", "zone-b"):
        assert (
            f"no NodePool can add a node in {zone} (NodePool gpu-c: its requirements allow "
            "topology.kubernetes.io/zone In [zone-c])"
        ) in plan["refused"]


def test_a_reached_limit_is_the_reason_of_the_refusal(tmp_path: Path) -> None:
    """17 GPUs of a NodePool of 8-GPU nodes hold two of three 8-GPU workers: Karpenter
    counts whole nodes (as observed in tests/live/test_live_karpenter.py)."""
    plan = _plan(_case(tmp_path, [_nodepool(limits={GPU: 17})], _job("big", 3, 8)))
    assert plan["refused"]
    assert (
        "zone-a: 1 more worker pod(s) need 8 nvidia.com/gpu, only 0 free on the nodes they "
        "may use; the limits of NodePool gpu are reached"
    ) in plan["refused"]


def test_exhausted_limits_name_the_nodepool_and_its_use(tmp_path: Path) -> None:
    """A NodePool whose nodes already use its limits adds nothing; its new nodes are
    excluded with the limits' figures."""
    gpu_node = node_doc("gpu-1", "zone-a", gpus=8, taints=[GPU_TAINT], labels={
        "karpenter.sh/nodepool": "gpu", "node.kubernetes.io/instance-type": "p4d.24xlarge"})  # fmt: skip
    nodes = [*(node_doc(f"cpu-{z}", z) for z in ZONES), gpu_node]
    plan = _plan(_case(tmp_path, [_nodepool(limits={GPU: 8})], _job("big", 2, 8), nodes=nodes))
    assert (
        "new nodes of NodePool gpu: its limits are reached (nvidia.com/gpu 8 of 8 in use, a "
        "p4d.24xlarge counts 8)"
    ) in plan["refused"]


def test_the_limit_is_one_budget_for_every_zone(tmp_path: Path) -> None:
    """Two jobs of 16 GPUs and a NodePool of 24 in all: each fits any zone alone, together
    they do not (they would in two zones with 24 each): the second queues."""
    jobs = [*_job("one", 2, 8), *_job("two", 2, 8)]
    plan = _plan(_case(tmp_path, [_nodepool(limits={GPU: 24})], jobs))
    reasons = {j["job"]: j["reason"] for j in plan["jobPlacements"]}
    assert sum(r.startswith("packed") for r in reasons.values()) == 1
    assert sum(r.startswith("queued") for r in reasons.values()) == 1
    assert plan["scaleUp"] == ["NodePool gpu in zone-a, up to 24 GPUs"]
    result = CliRunner().invoke(main, ["analyze", "-c", str(tmp_path / "topogen.yaml")])
    assert "together need 32 GPUs of its 24" in result.output  # not 24 per zone


def test_a_nodepool_without_limits_adds_what_is_asked(tmp_path: Path) -> None:
    plan = _plan(_case(tmp_path, [_nodepool()], [*_job("one", 2, 8), *_job("two", 2, 8)]))
    assert all(j["reason"].startswith("packed") for j in plan["jobPlacements"])
    assert all(s.endswith(", no GPU limit") for s in plan["scaleUp"])
    assert "GPUs left over once the known jobs are packed: zone-a unlimited" in plan["fallback"]


def test_nodepool_taints_keep_pods_off_and_startup_taints_do_not(tmp_path: Path) -> None:
    """A NodePool's taints hold off a pod that does not tolerate them (the coordinator gets
    the toleration from the plan); startup taints go once the node is ready."""
    untolerated = [deployment("w", {"app": "j", "role": "worker"}, gpus=8),
                   deployment("c", {"app": "j", "role": "coordinator"})]  # fmt: skip
    cfg = load_config(_case(tmp_path / "a", [_nodepool()], untolerated))
    (job,) = analyze(cfg).clusters[0].jobs
    assert job.findings[0].kind == "UNSCHEDULABLE"
    assert "new nodes of NodePool gpu: taint nvidia.com/gpu=present:NoSchedule not tolerated" in (
        job.findings[0].message
    )
    startup = _nodepool(taints=[], startupTaints=[GPU_TAINT])
    cfg = load_config(_case(tmp_path / "b", [startup], untolerated))
    (job,) = analyze(cfg).clusters[0].jobs
    assert [f.kind for f in job.findings] == ["CROSS_ZONE"]


def test_requirements_shape_the_new_nodes(tmp_path: Path) -> None:
    """Karpenter's well-known labels come from the offering; a requirement with one value
    on a custom label labels the node; the capacity type must be offered."""
    pool = _nodepool(requirements=[
        {"key": ZONE, "operator": "In", "values": ["zone-b"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
        {"key": "team", "operator": "In", "values": ["vision"]},
    ])  # fmt: skip
    spot = {**P4D, "capacityTypes": ["spot"]}
    workers = deployment("w", {"app": "j", "role": "worker"}, gpus=8, spec={
        "tolerations": [GPU_TOLERATION],
        "nodeSelector": {"team": "vision", "karpenter.sh/capacity-type": "spot",
                         "node.kubernetes.io/instance-type": "p4d.24xlarge"}})  # fmt: skip
    jobs = [deployment("c", {"app": "j", "role": "coordinator"}), workers]
    cfg = load_config(_case(tmp_path / "spot", [pool], jobs, {"instanceTypes": [spot]}))
    (job,) = analyze(cfg).clusters[0].jobs
    worker = next(m for m in job.members if m.role == "worker")
    assert worker.placement.zones == ("zone-b",)
    labels = worker.placement.nodes[0].labels
    assert labels["team"] == "vision" and labels["karpenter.sh/nodepool"] == "gpu"
    cfg = load_config(_case(tmp_path / "od", [pool], jobs))  # on-demand only: no offering
    (job,) = analyze(cfg).clusters[0].jobs
    worker = next(m for m in job.members if m.role == "worker")
    assert worker.placement.nodes == ()


def test_cluster_api_node_groups_and_declared_ones(tmp_path: Path) -> None:
    """A MachineDeployment with the autoscaler's size and capacity annotations is a node
    group (its zone from the labels annotation); so is one declared in topogen.yaml."""
    md = {
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "MachineDeployment",
        "metadata": {"name": "gpu-a", "namespace": "capi", "annotations": {
            "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "0",
            "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "2",
            "capacity.cluster-autoscaler.kubernetes.io/cpu": "32",
            "capacity.cluster-autoscaler.kubernetes.io/memory": "256G",
            "capacity.cluster-autoscaler.kubernetes.io/gpu-type": GPU,
            "capacity.cluster-autoscaler.kubernetes.io/gpu-count": "8",
            "capacity.cluster-autoscaler.kubernetes.io/labels": f"{ZONE}=zone-a",
            "capacity.cluster-autoscaler.kubernetes.io/taints": "nvidia.com/gpu=present:NoSchedule",
        }},
        "spec": {"replicas": 0},
    }  # fmt: skip
    declared = {"nodeGroups": [{"name": "gpu-b", "maxSize": 1, "labels": {ZONE: "zone-b"},
                                "taints": [GPU_TAINT], "allocatable": {"cpu": "32", GPU: 8}}]}  # fmt: skip
    plan = _plan(_case(tmp_path, [md], _job("big", 2, 8), declared))
    assert plan["jobPlacements"][0]["domain"] == "zone-a"  # zone-b's group holds one node
    assert plan["scaleUp"] == ["node group capi/gpu-a in zone-a, up to 16 GPUs"]


def test_kwok_instance_types_file_is_read_as_karpenters_provider_reads_it(tmp_path: Path) -> None:
    types = REPO / "tests" / "live" / "karpenter" / "instance-types.json"
    (tmp_path / "types").mkdir()
    (tmp_path / "types" / "it.json").write_text(types.read_text())
    pool = _nodepool(requirements=[
        {"key": ZONE, "operator": "In", "values": ["zone-a"]}])  # fmt: skip
    jobs = _job("big", 1, 8)
    cfg = load_config(_case(tmp_path, [pool], jobs, {"instanceTypeFiles": ["types/it.json"]}))
    (cluster,) = analyze(cfg).clusters
    (pool_read,) = cluster.inputs.pools
    by_name = {t.name: t for t in pool_read.instance_types}
    eight = by_name["gpu-8x.24xlarge"]
    assert eight.capacity["cpu"] == 96 and eight.allocatable["cpu"] == Fraction(959, 10)
    assert eight.allocatable[GPU] == 8 and eight.capacity["pods"] == 110
    assert {o.zone for o in eight.offerings} == {"us-east-1a", "us-east-1b", "us-east-1c"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda p: p["spec"]["template"]["spec"]["requirements"][0].update(typo=1),
         "NodePool gpu: spec.template.spec.requirements[0] has unknown field 'typo'"),
        (lambda p: p["spec"].update(limits={GPU: "lots"}),
         "NodePool gpu: spec.limits.nvidia.com/gpu is not a quantity: 'lots'"),
        (lambda p: p.update(apiVersion="karpenter.sh/v1beta1"),
         "NodePool gpu: karpenter.sh/v1beta1 is not read (karpenter.sh/v1 is)"),
    ],
)  # fmt: skip
def test_a_bad_nodepool_is_one_line_naming_it(tmp_path: Path, change: Any, message: str) -> None:
    pool = _nodepool()
    change(pool)
    result = CliRunner().invoke(
        main, ["analyze", "-c", str(_case(tmp_path, [pool], _job("j", 1, 8)))]
    )
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_an_instance_type_declared_twice_is_refused(tmp_path: Path) -> None:
    config = _case(tmp_path, [_nodepool()], _job("j", 1, 8), {"instanceTypes": [P4D, P4D]})
    result = CliRunner().invoke(main, ["analyze", "-c", str(config)])
    assert result.exit_code == 2
    assert "instance type p4d.24xlarge is declared twice" in result.output


def test_room_takes_existing_gpus_first_and_shares_a_pool_between_domains() -> None:
    room = Room({"a": 4, "b": 0}, [SharedPool("NodePool gpu", 10, {"a": 10, "b": 10})])
    assert (room["a"], room["b"]) == (14, 10)
    room["a"] -= 6  # 4 of its own, 2 of the pool's
    assert (room["a"], room["b"], room.drawn()) == (8, 8, {"a": ("NodePool gpu",)})
    room["b"] -= 8
    assert (room["a"], room["b"]) == (0, 0)
    room["b"] += 8
    assert (room["a"], room["b"], room.drawn()) == (8, 8, {"a": ("NodePool gpu",)})


def test_assign_draws_a_pools_budget_across_domains() -> None:
    jobs = [JobNeed("one", Fraction(10), ("a", "b")), JobNeed("two", Fraction(10), ("a", "b"))]
    shared = [PoolNeed("NodePool gpu", Fraction(16), {"a": Fraction(16), "b": Fraction(16)})]
    a = assign(jobs, {"a": Fraction(0), "b": Fraction(0)}, pools=shared)
    assert len(a.runs_at_once) == 1
    separate = assign(jobs, {"a": Fraction(16), "b": Fraction(16)})
    assert len(separate.runs_at_once) == 2


def test_a_snapshot_keeps_what_topogen_reads_of_nodepools_and_node_groups() -> None:
    """The live reduction: a NodePool's spec, and of a Cluster API object the autoscaler's
    annotations, replicas and the template's labels and taints; read back as files are."""
    from topogen.sources.live import (
        AUTOSCALING,
        ClusterObjects,
        check_snapshot,
        minimal,
        snapshot_yaml,
    )

    md = {
        "metadata": {"name": "gpu-a", "namespace": "capi", "uid": "u", "annotations": {
            "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "2",
            "capacity.cluster-autoscaler.kubernetes.io/cpu": "32",
            "capacity.cluster-autoscaler.kubernetes.io/memory": "256G",
            "kubectl.kubernetes.io/last-applied-configuration": "{}",
        }},
        "spec": {"replicas": 0, "clusterName": "c", "template": {
            "metadata": {"labels": {"node.cluster.x-k8s.io/pool": "gpu"}},
            "spec": {"bootstrap": {}, "taints": [GPU_TAINT]}}},
        "status": {"replicas": 0},
    }  # fmt: skip
    kinds = {k.kind: k for k in AUTOSCALING}
    got = minimal(kinds["MachineDeployment"], md)
    assert got == {
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "MachineDeployment",
        "metadata": {"name": "gpu-a", "namespace": "capi", "annotations": {
            "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "2",
            "capacity.cluster-autoscaler.kubernetes.io/cpu": "32",
            "capacity.cluster-autoscaler.kubernetes.io/memory": "256G"}},
        "spec": {"replicas": 0, "template": {
            "metadata": {"labels": {"node.cluster.x-k8s.io/pool": "gpu"}},
            "spec": {"taints": [GPU_TAINT]}}},
    }  # fmt: skip
    pool = _nodepool()
    kept = minimal(kinds["NodePool"], {**pool, "status": {"resources": {GPU: "8"}}})
    assert kept == pool
    check_snapshot(snapshot_yaml(ClusterObjects((got, kept))))  # topogen reads it back


def test_gpu_labels_of_instance_types_filter_them_and_weight_orders_the_pools() -> None:
    """A requirement on a label the instance type defines (a provider's GPU name) keeps
    only the types that match; new nodes of a NodePool of higher weight come first (first
    fit takes them first, as Karpenter tries such NodePools first)."""
    from topogen.analysis.provisioning import Provisioning
    from topogen.model import NodeSelectorRequirement
    from topogen.nodepools import KARPENTER, InstanceType, NodePool, Offering

    def itype(name: str, gpu: str) -> InstanceType:
        res = {"cpu": Fraction(96), GPU: Fraction(8), "pods": Fraction(110)}
        return InstanceType(name, res, res, (Offering("zone-a", "on-demand"),),
                            {"karpenter.k8s.aws/instance-gpu-name": gpu})  # fmt: skip

    types = (itype("p4d.24xlarge", "a100"), itype("p5.48xlarge", "h100"))
    h100 = NodeSelectorRequirement("karpenter.k8s.aws/instance-gpu-name", "In", ("h100",))
    light = NodePool(KARPENTER, "any", {}, (), types, limits={GPU: Fraction(8)})
    heavy = NodePool(KARPENTER, "h100", {}, (), types, (h100,), weight=50)
    nodes = Provisioning([light, heavy], ZONE, (GPU,), []).nodes()
    assert {n.labels["node.kubernetes.io/instance-type"] for n in nodes if
            n.scale_up and n.scale_up.pool == "NodePool h100"} == {"p5.48xlarge"}  # fmt: skip
    assert sorted(nodes, key=lambda n: n.name)[0].scale_up.pool == "NodePool h100"  # type: ignore[union-attr]
    over = [n for n in nodes if n.scale_up and n.scale_up.over_limit]
    assert over == []  # 8 of 8 left: one node of each type fits the limit


def test_a_nodepool_without_declared_instance_types_is_a_warning(tmp_path: Path) -> None:
    config = _case(tmp_path, [_nodepool()], _job("j", 1, 8), {})
    result = CliRunner().invoke(main, ["analyze", "-c", str(config)])
    assert result.exit_code == 1
    assert (
        "NodePool gpu: no instance type of its NodeClass x is declared "
        "(clusters[].autoscaling.instanceTypes): topogen counts no node it could add"
    ) in result.output
