"""Karpenter's own controller (its KWOK provider) provisions GPU nodes for a PyTorchJob on a
fleet scaled to zero: three zones with CPU nodes only and a GPU NodePool.

The real engines decide: Karpenter v1.15.0 picks the instance type and zone of each
NodeClaim, KWOK makes the nodes Ready, kube-scheduler binds the pods. The pods are the
training operator's (karpenter/pods.yaml); the zone affinity is given by hand here, as
topogen's mutation adds it (policies in front of Karpenter come with the generator's
capacity work). What Karpenter does, and why, is in each test's docstring.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from karpenter_harness import NODEPOOL_LABEL, ZONE, KarpenterPlane, conditions
from karpenter_kit import (
    GPU,
    INSTANCE_TYPE,
    NAMESPACE,
    ZONES,
    cheapest_zone,
    cpu_nodes,
    fitting_type,
    gpu_nodepool,
    job_pods,
    with_master_affinity,
    with_zone_affinity,
)
from live_harness import wait_until
from webhook_harness import CONTROLLER_TIMEOUT, wait_bound

pytestmark = [pytest.mark.tools, pytest.mark.slow]

ALLOWED = ("us-east-1a", "us-east-1b")  # the zones a policy allows the job in
DISALLOWED = "us-east-1c"


def _provision(
    plane: KarpenterPlane, pods: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, str]]:
    """Create the pods one after another, as the operator does; until each is bound.
    pod -> its node's zone, instance type and NodePool."""
    for pod in pods:
        plane.cp.create_pod(pod)
    bound = wait_bound(plane.cp, NAMESPACE, [p["metadata"]["name"] for p in pods])
    nodes = {n["metadata"]["name"]: n["metadata"]["labels"] for n in plane.karpenter.nodes()}
    return {
        pod: {
            "zone": nodes[node][ZONE],
            "type": nodes[node][INSTANCE_TYPE],
            "pool": nodes[node][NODEPOOL_LABEL],
        }
        for pod, node in bound.items()
    }


def _claims(plane: KarpenterPlane) -> list[tuple[str, str]]:
    """(zone, instance type) of each NodeClaim, sorted."""
    return sorted(
        (c["metadata"]["labels"][ZONE], c["metadata"]["labels"][INSTANCE_TYPE])
        for c in plane.karpenter.nodeclaims()
    )


def _expected(pods: Sequence[Mapping[str, Any]], zones: Sequence[str]) -> dict[str, dict[str, str]]:
    """Where Karpenter puts each pod: the one instance type that holds it, in the zone of
    that type's cheapest offering among `zones`."""
    out = {}
    for pod in pods:
        kind = fitting_type(pod)
        out[pod["metadata"]["name"]] = {
            "zone": cheapest_zone(kind, zones),
            "type": kind,
            "pool": "gpu",
        }
    return out


def test_karpenter_without_topogen_spreads_the_group_over_zones(
    karpenter_plane: KarpenterPlane,
) -> None:
    """Without topogen: Karpenter launches one NodeClaim per pod here (a worker fills an
    8-GPU node; the master fits only the 1-GPU type) and each in the zone of its instance
    type's cheapest offering, chosen NodeClaim by NodeClaim: nothing ties the master's zone
    to its workers'. The master lands in us-east-1a, the workers in us-east-1c."""
    plane = karpenter_plane
    plane.cp.create_nodes(cpu_nodes())
    plane.karpenter.apply_nodepools([gpu_nodepool("gpu", ZONES)])
    pods = job_pods()
    placed = _provision(plane, pods)
    assert placed == _expected(pods, ZONES)
    assert {p["zone"] for p in placed.values()} == {"us-east-1a", "us-east-1c"}
    assert _claims(plane) == sorted((p["zone"], p["type"]) for p in placed.values())


def test_karpenter_provisions_only_in_the_zones_of_the_required_affinity(
    karpenter_plane: KarpenterPlane,
) -> None:
    """With the required zone affinity topogen's mutation adds (us-east-1a, us-east-1b):
    every NodeClaim is launched in those zones and every pod is bound there. The choice
    inside them is still Karpenter's, per NodeClaim: master in us-east-1a, workers in
    us-east-1b; an affinity to two zones keeps the group out of us-east-1c, not together."""
    plane = karpenter_plane
    plane.cp.create_nodes(cpu_nodes())
    plane.karpenter.apply_nodepools([gpu_nodepool("gpu", ZONES)])
    pods = [with_zone_affinity(p, ALLOWED) for p in job_pods()]
    placed = _provision(plane, pods)
    assert placed == _expected(pods, ALLOWED)
    assert {p["zone"] for p in placed.values()} == set(ALLOWED)
    assert {zone for zone, _ in _claims(plane)} == set(ALLOWED)
    assert len(_claims(plane)) == len(pods)


def test_karpenter_nodepool_of_the_disallowed_zone_provisions_nothing(
    karpenter_plane: KarpenterPlane,
) -> None:
    """A GPU NodePool limited to us-east-1c and pods required in us-east-1a/us-east-1b:
    Karpenter reports each pod unschedulable, naming the pod's zones and the NodePool's,
    and creates no NodeClaim; kube-scheduler finds no node either."""
    plane = karpenter_plane
    plane.cp.create_nodes(cpu_nodes())
    plane.karpenter.apply_nodepools([gpu_nodepool("gpu-c", [DISALLOWED])])
    pods = [with_zone_affinity(p, ALLOWED) for p in job_pods()]
    for pod in pods:
        plane.cp.create_pod(pod)
    names = [p["metadata"]["name"] for p in pods]

    def failed(name: str) -> list[str]:
        return [
            e["message"]
            for e in plane.karpenter.events(NAMESPACE, name)
            if e["reason"] == "FailedScheduling"
        ]

    wait_until(
        "Karpenter's FailedScheduling event on every pod",
        lambda: all(failed(n) for n in names),
        CONTROLLER_TIMEOUT,
        plane.karpenter.proc,
        interval=0.2,
    )
    for name in names:
        assert failed(name) == [
            "Failed to schedule pod, incompatible requirements, key topology.kubernetes.io/zone, "
            "topology.kubernetes.io/zone In [us-east-1a us-east-1b] not in "
            "topology.kubernetes.io/zone In [us-east-1c]"
        ]
    assert plane.karpenter.nodeclaims() == []
    assert plane.karpenter.nodes() == []
    for name in names:
        pod = plane.cp.pod(NAMESPACE, name)
        assert not pod["spec"].get("nodeName")
        assert conditions(pod).get("PodScheduled") == "False"
    # the NodePool itself is healthy: it cannot serve these pods
    assert conditions(plane.karpenter.nodepool("gpu-c")).get("Ready") == "True"


@pytest.mark.parametrize(
    ("zones", "expected"),
    [
        pytest.param(("us-east-1b",), "us-east-1b", id="known-job-pinned"),
        pytest.param(ALLOWED, "us-east-1a", id="later-job-fallback-domains"),
    ],
)
def test_karpenter_keeps_the_workers_in_their_masters_zone_with_topogens_pod_affinity(
    karpenter_plane: KarpenterPlane, zones: tuple[str, ...], expected: str
) -> None:
    """The whole of topogen's mutation: the zone affinity (one zone for a job the render
    knew, the group's domains for a later one) and, on the workers, the required pod
    affinity to their master's zone. Karpenter then launches every NodeClaim in one zone:
    the pinned zone, or the master's (its 1-GPU type's cheapest allowed zone, us-east-1a),
    though the workers' 8-GPU type is cheaper in us-east-1b. With two zones the workers
    wait a round: Karpenter records a pod's zone for pod affinity only once a NodeClaim's
    zone is a single value (scheduling/topology.go Record), so it first reports them
    unsatisfiable and places them once the master is bound."""
    plane = karpenter_plane
    plane.cp.create_nodes(cpu_nodes())
    plane.karpenter.apply_nodepools([gpu_nodepool("gpu", ZONES)])
    pods = [with_master_affinity(with_zone_affinity(p, zones)) for p in job_pods()]
    placed = _provision(plane, pods)
    assert {p["zone"] for p in placed.values()} == {expected}
    assert {zone for zone, _ in _claims(plane)} == {expected}
    assert len(_claims(plane)) == len(pods)


def test_karpenter_stops_at_the_nodepool_gpu_limit(karpenter_plane: KarpenterPlane) -> None:
    """A NodePool limited to 17 GPUs: Karpenter counts every node it launches at its
    instance type's capacity (1 + 8 + 8 = 17: scheduler.go subtractMax, then the nodes'
    capacity), and the last worker gets no node; Karpenter says so on the pod."""
    plane = karpenter_plane
    plane.cp.create_nodes(cpu_nodes())
    plane.karpenter.apply_nodepools([gpu_nodepool("gpu", ZONES, limits={GPU: "17"})])
    pods = job_pods()
    for pod in pods:
        plane.cp.create_pod(pod)
    names = [p["metadata"]["name"] for p in pods]
    limited = (
        "Failed to schedule pod, all available instance types exceed limits for nodepool"
        " (NodePool=gpu)"
    )

    def settled() -> bool:
        bound = [n for n in names if plane.cp.pod(NAMESPACE, n)["spec"].get("nodeName")]
        pending = [n for n in names if n not in bound]
        return len(bound) == 3 and all(
            any(e["message"] == limited for e in plane.karpenter.events(NAMESPACE, n))
            for n in pending
        )

    wait_until(
        "three pods bound, the fourth refused for the limit",
        settled,
        CONTROLLER_TIMEOUT,
        plane.karpenter.proc,
        interval=0.2,
    )
    assert _claims(plane) == [
        ("us-east-1a", "gpu-1x.48xlarge"),
        ("us-east-1c", "gpu-8x.24xlarge"),
        ("us-east-1c", "gpu-8x.24xlarge"),
    ]
    wait_until(
        "the NodePool's status counting 17 GPUs",
        lambda: (
            plane.karpenter.nodepool("gpu").get("status", {}).get("resources", {}).get(GPU) == "17"
        ),
        CONTROLLER_TIMEOUT,
        plane.karpenter.proc,
        interval=0.2,
    )
