"""topogen's generated policies in front of Karpenter's own controller, on a fleet scaled
to zero: three zones with CPU nodes only, GPU NodePools, a network policy that allows the
PyTorchJob in us-east-1a or us-east-1b only (karpenter/zone-policy.yaml).

topogen reads the scenario as a GitOps folder (karpenter_kit.topogen_tree: the nodes and
NodePools as `kubectl get` gives them, the very instance-types file Karpenter's KWOK
provider reads as the declared instance types), plans and renders; the rendered Kyverno
policies are installed in Kyverno's admission controller; the pods are created as the
Training Operator creates them. Karpenter (v1.15.0, KWOK provider) picks the instance
types and zones, KWOK makes the nodes Ready, kube-scheduler binds the pods.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from karpenter_harness import ZONE, KarpenterPlane
from karpenter_kit import (
    INSTANCE_TYPE,
    NAMESPACE,
    PYTORCHJOB,
    ZONES,
    cpu_nodes,
    gpu_nodepool,
    topogen_tree,
)
from kyverno_harness import Kyverno
from kyverno_kit import install, pytorchjob_pods, render_group
from live_harness import ADMIN_TOKEN
from live_kit import cli
from webhook_harness import wait_bound

pytestmark = [pytest.mark.tools, pytest.mark.slow]

ALLOWED = ("us-east-1a", "us-east-1b")
DISALLOWED = "us-east-1c"


def _plan(config: Path) -> dict[str, Any]:
    result = cli("analyze", "-c", config, "-o", "json")
    assert result.exit_code == 1, result.output  # the HARD_BLOCK of the unconstrained job
    (plan,) = json.loads(result.stdout)["plans"]
    return plan  # type: ignore[no-any-return]


def _run(plane: KarpenterPlane, pools: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """The CPU nodes and NodePools, then the job's pods as the operator creates them (all
    at once); until every pod is bound: pod -> its node's zone and instance type."""
    plane.cp.create_nodes(cpu_nodes())
    plane.karpenter.apply_nodepools(pools)
    pods = pytorchjob_pods(PYTORCHJOB)
    plane.cp.ensure_namespace(NAMESPACE)
    for pod in pods:
        plane.cp.create_pod(pod)
    bound = wait_bound(plane.cp, NAMESPACE, [p["metadata"]["name"] for p in pods])
    nodes = {n["metadata"]["name"]: n["metadata"]["labels"] for n in plane.karpenter.nodes()}
    return {
        pod: {"zone": nodes[node][ZONE], "type": nodes[node][INSTANCE_TYPE]}
        for pod, node in bound.items()
    }


def _claim_zones(plane: KarpenterPlane) -> list[str]:
    return sorted(c["metadata"]["labels"][ZONE] for c in plane.karpenter.nodeclaims())


def test_karpenter_provisions_only_in_the_zone_topogens_policies_pin(
    karpenter_plane: KarpenterPlane, karpenter_kyverno: Kyverno, tmp_path: Path
) -> None:
    """topogen plans the job into an allowed zone, saying it fits after Karpenter scales
    up; with its policies in Kyverno every NodeClaim is launched there and every pod is
    bound there: the master's 1-GPU node and the workers' 8-GPU nodes (cheaper in
    us-east-1c, where Karpenter puts them without topogen: the control below)."""
    config = topogen_tree(tmp_path / "repo", [gpu_nodepool("gpu", ZONES)])
    plan = _plan(config)
    assert plan["domains"] == list(ALLOWED)
    (placement,) = plan["jobPlacements"]
    zone = placement["domain"]
    assert zone in ALLOWED
    assert placement["scaleUp"] == [f"NodePool gpu in {zone}, no GPU limit"]
    policies = render_group(config, tmp_path / "out")
    pods = pytorchjob_pods(PYTORCHJOB)
    install(karpenter_kyverno, policies, pods[0])
    placed = _run(karpenter_plane, [gpu_nodepool("gpu", ZONES)])
    assert {p["zone"] for p in placed.values()} == {zone}
    assert _claim_zones(karpenter_plane) == [zone] * len(pods)
    stored = karpenter_plane.cp.pod(NAMESPACE, pods[0]["metadata"]["name"])
    terms = stored["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert all({"key": ZONE, "operator": "In", "values": [zone]} in t["matchExpressions"]
               for t in terms)  # fmt: skip


def test_karpenter_without_topogens_policies_puts_the_workers_in_the_closed_zone(
    karpenter_plane: KarpenterPlane, tmp_path: Path
) -> None:
    """The control: the same cluster and job, no policies. Karpenter launches each NodeClaim
    in its instance type's cheapest zone: the master in us-east-1a, the workers in
    us-east-1c, where the policy denies every path into a training pod: the HARD_BLOCK
    topogen reports for this cluster."""
    config = topogen_tree(tmp_path / "repo", [gpu_nodepool("gpu", ZONES)])
    result = cli("analyze", "-c", config, "-o", "json")
    assert result.exit_code == 1
    (finding,) = json.loads(result.stdout)["findings"]
    assert finding["kind"] == "HARD_BLOCK" and finding["policies"] == ["ccnp training-zones"]
    placed = _run(karpenter_plane, [gpu_nodepool("gpu", ZONES)])
    zones = {name: p["zone"] for name, p in placed.items()}
    assert zones == {
        "resnet-master-0": "us-east-1a",
        "resnet-worker-0": DISALLOWED,
        "resnet-worker-1": DISALLOWED,
        "resnet-worker-2": DISALLOWED,
    }


def test_topogen_refuses_a_nodepool_of_the_closed_zone_and_karpenter_provisions_nothing_useful(
    karpenter_plane: KarpenterPlane, tmp_path: Path
) -> None:
    """The only GPU NodePool is limited to us-east-1c: topogen refuses the group, naming the
    NodePool and the zones it may not provision in (Karpenter's own words for such pods,
    test_live_karpenter.py: `incompatible requirements, key topology.kubernetes.io/zone`),
    and render writes nothing. Karpenter, given the job, can only provision in us-east-1c,
    where the policy denies the job's traffic: nothing useful."""
    pools = [gpu_nodepool("gpu-c", [DISALLOWED])]
    config = topogen_tree(tmp_path / "repo", pools)
    plan = _plan(config)
    assert plan["refused"].startswith("group pytorch: no domain can hold it: job research/resnet")
    for zone in ALLOWED:
        assert (
            f"no NodePool can add a node in {zone} (NodePool gpu-c: its requirements allow "
            f"topology.kubernetes.io/zone In [{DISALLOWED}])"
        ) in plan["refused"]
    rendered = cli("render", "-c", config, "--out", tmp_path / "out")
    assert rendered.exit_code == 1 and "nothing written" in rendered.output
    assert not (tmp_path / "out").exists()
    placed = _run(karpenter_plane, pools)
    assert {p["zone"] for p in placed.values()} == {DISALLOWED}
    assert set(_claim_zones(karpenter_plane)) == {DISALLOWED}


def test_karpenter_nodepools_read_live_through_a_snapshot(
    karpenter_plane: KarpenterPlane, tmp_path: Path
) -> None:
    """`topogen snapshot` reads the NodePools with the nodes; analyzing the snapshot plans
    as the files do (the scale-up included)."""
    pools = [gpu_nodepool("gpu", ZONES, limits={"nvidia.com/gpu": "32"})]
    karpenter_plane.cp.create_nodes(cpu_nodes())
    karpenter_plane.karpenter.apply_nodepools(pools)
    config = topogen_tree(tmp_path / "repo", pools)
    (tmp_path / "repo" / "cluster" / "nodes.yaml").unlink()
    kubeconfig = karpenter_plane.cp.kubeconfig("admin", ADMIN_TOKEN)
    snap = tmp_path / "repo" / "cluster" / "snapshot.yaml"
    result = cli("snapshot", "--kubeconfig", kubeconfig, "-o", snap)
    assert result.exit_code == 0, result.output
    assert '"kind": "NodePool"' in snap.read_text()
    plan = _plan(config)
    assert plan["scaleUp"] == [
        f"NodePool gpu in {plan['jobPlacements'][0]['domain']}, up to 32 GPUs"
    ]
