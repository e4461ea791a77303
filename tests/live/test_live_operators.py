"""The real kube-scheduler places each operator's real pods as topogen's policies mutate them.

For the kinds the issue names (elastic PyTorchJob, TrainJob, MPIJob v2beta1, RayJob,
LeaderWorkerSet) and the others kube-scheduler places: the cluster of
tests/operators/cluster, the pods of the case as the real Kyverno CLI mutates them,
created in the order the controllers create them; every member of the group must be
bound, all in the one zone the policies name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from live_harness import ControlPlane
from webhook_harness import wait_bound

from operators.kit import CLUSTER, NAMESPACE, SCHEDULED_BY_KUBE, ZONE, load_case, mutated_case_pods

pytestmark = [pytest.mark.tools, pytest.mark.slow]
ISSUE_KINDS = ["pytorchjob-elastic", "trainjob-runtimepatches", "mpijob-v2beta1", "rayjob", "lws"]


def _nodes() -> list[dict[str, Any]]:
    nodes = yaml.safe_load((CLUSTER / "nodes.yaml").read_text())["items"]
    for i, n in enumerate(nodes):
        n.setdefault("spec", {})["podCIDRs"] = [f"10.244.{i}.0/24"]
    return nodes


def _bound(cluster: ControlPlane, names: list[str], members: list[str]) -> dict[str, str]:
    """pod -> node ("" unbound), once the scheduler bound every member of the group among
    `names` (a member waiting for another is retried; the wait is for the binding itself)."""
    wait_bound(cluster, NAMESPACE, [n for n in names if n in members])
    return {n: cluster.pod(NAMESPACE, n)["spec"].get("nodeName", "") for n in names}


@pytest.mark.parametrize(
    "name", ISSUE_KINDS + [n for n in SCHEDULED_BY_KUBE if n not in ISSUE_KINDS]
)
def test_scheduler_places_the_mutated_pods_in_one_allowed_zone(
    cluster: ControlPlane, tmp_path: Path, name: str
) -> None:
    case = load_case(name)
    mutated, _ = mutated_case_pods(case, tmp_path)
    zone_of = {n["metadata"]["name"]: n["metadata"]["labels"][ZONE] for n in _nodes()}
    cluster.create_nodes(_nodes())
    late = set(case.meta.get("created_late", ()))
    first = [p for p in mutated if p["metadata"]["name"] not in late]
    then = [p for p in mutated if p["metadata"]["name"] in late]
    members = case.members()
    for pod in first:
        cluster.create_pod(pod)
    placed = _bound(cluster, [p["metadata"]["name"] for p in first], members)
    for pod in then:  # created once the others run, as the controllers do
        cluster.create_pod(pod)
    placed.update(_bound(cluster, [p["metadata"]["name"] for p in then], members))
    assert all(placed[m] for m in members), {m: placed[m] or "Pending" for m in members}
    zones = {zone_of[placed[m]] for m in members}
    assert len(zones) == 1, {m: zone_of[placed[m]] for m in members}
    labelled = {
        p["metadata"]["labels"].get("zone") for p in mutated if p["metadata"]["name"] in members
    }
    assert labelled == zones  # the identity label the policies set is the zone they landed in
