"""The quantities and labels the autoscaler sources read (Karpenter NodePools, Cluster API
node groups, declared instance types and node groups, Karpenter's KWOK instance-types
files) by the rules Kubernetes and Karpenter hold them to: the node a pool adds must be
one the API server registers (ValidateNode: no negative capacity, extended resources
such as GPUs whole: sources/api_rules.quantity_problem); a NodePool's taints unique by
key and effect (Karpenter v1.15.0 nodeclaim_validation.go validateTaintsField); a NodePool
limit is any quantity Karpenter's CRD pattern takes, a negative one included (it allows
no node, as a reached limit). One line naming the file and the field, exit 2."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from core.test_scale_up import GPU, GPU_TAINT, P4D, _case, _job, _nodepool, _plan
from topogen.cli import main

ANN = "capacity.cluster-autoscaler.kubernetes.io/"
MD = {
    "apiVersion": "cluster.x-k8s.io/v1beta1",
    "kind": "MachineDeployment",
    "metadata": {"name": "gpu-a", "namespace": "capi", "annotations": {
        "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "0",
        "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "2",
        ANN + "cpu": "32", ANN + "memory": "256G", ANN + "gpu-type": GPU, ANN + "gpu-count": "8",
        ANN + "labels": "topology.kubernetes.io/zone=zone-a",
    }},
    "spec": {"replicas": 0},
}  # fmt: skip


def _md(**annotations: str) -> dict[str, Any]:
    md = copy.deepcopy(MD)
    md["metadata"]["annotations"].update({ANN + k: v for k, v in annotations.items()})
    return md


def _analyze(config: Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["analyze", "-c", str(config)])
    return result.exit_code, result.stderr


def _types_file(tmp: Path, name: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    (tmp / "types").mkdir(exist_ok=True)
    (tmp / "types" / name).write_text(
        json.dumps(entries) if name.endswith(".json") else yaml.safe_dump(entries)
    )
    return {"instanceTypeFiles": [f"types/{name}"]}


KWOK = {"name": "gpu-8x", "resources": {"cpu": "96", "memory": "1Ti", GPU: "8"},
        "offerings": [{"Requirements": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}]}]}  # fmt: skip
Case = Callable[[Path], tuple[list[dict[str, Any]], dict[str, Any] | None]]
REFUSED: dict[str, tuple[Case, str, str]] = {
    "declared-gpu-fraction": (
        lambda t: ([_nodepool()], {"instanceTypes": [{**P4D, "resources": {GPU: "1.5"}}]}),
        "topogen.yaml",
        "clusters.lab.autoscaling.instanceTypes[0].resources.nvidia.com/gpu: must be an "
        "integer, got '1.5'",
    ),
    "node-group-gpu-fraction": (
        lambda t: ([], {"nodeGroups": [{"name": "g", "maxSize": 1, "allocatable": {GPU: "0.5"}}]}),
        "topogen.yaml",
        "clusters.lab.autoscaling.nodeGroups[0].allocatable.nvidia.com/gpu: must be an integer",
    ),
    "kwok-negative-memory": (
        lambda t: (
            [_nodepool()],
            _types_file(t, "it.json", [{**KWOK, "resources": {"cpu": "96", "memory": "-1Gi"}}]),
        ),
        "types/it.json",
        "[0].resources.memory: must be greater than or equal to 0, got '-1Gi'",
    ),
    "kwok-gpu-fraction": (
        lambda t: (
            [_nodepool()],
            _types_file(t, "it.json", [{**KWOK, "resources": {GPU: "2500m"}}]),
        ),
        "types/it.json",
        "[0].resources.nvidia.com/gpu: must be an integer, got '2500m'",
    ),
    "types-file-entry-in-topogens-words": (
        lambda t: ([_nodepool()], _types_file(t, "it.yaml", [{**P4D, "zone": ["zone-a"]}])),
        "types/it.yaml",
        "unknown key [0].zone (did you mean zones?)",
    ),
    "types-file-entry-type": (
        lambda t: ([_nodepool()], _types_file(t, "it.yaml", [{**P4D, "zones": "zone-a"}])),
        "types/it.yaml",
        "[0].zones: must be a list",
    ),
    "capi-gpu-fraction": (
        lambda t: ([_md(**{"gpu-count": "1.5"})], {}),
        "cluster/nodes.yaml",
        "MachineDeployment capi/gpu-a: annotation capacity.cluster-autoscaler.kubernetes.io/"
        "gpu-count (nvidia.com/gpu): must be an integer, got '1.5'",
    ),
    "capi-negative-cpu": (
        lambda t: ([_md(cpu="-32")], {}),
        "cluster/nodes.yaml",
        "(cpu): must be greater than or equal to 0, got '-32'",
    ),
    "nodepool-taint-twice": (
        lambda t: ([_nodepool(taints=[GPU_TAINT, GPU_TAINT])], None),
        "cluster/nodes.yaml",
        "NodePool gpu: spec.template.spec.taints[1]: taints must be unique by key and effect",
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_the_api_server_or_karpenter_refuses_is_refused(tmp_path: Path, name: str) -> None:
    make, file, says = REFUSED[name]
    pools, auto = make(tmp_path)
    code, err = _analyze(_case(tmp_path, pools, _job("j", 1, 8), auto))
    assert code == 2, err
    (line,) = err.splitlines()
    assert line.startswith(f"topogen: error: {tmp_path}/{file}"), line
    assert says in line, line
    assert "Input should" not in line and "Traceback" not in line


def test_a_negative_nodepool_limit_is_read_as_karpenter_reads_it(tmp_path: Path) -> None:
    """Karpenter's CRD takes `-8` (its quantity pattern allows a sign): no node fits under
    it, as under a limit of 0."""
    plans = []
    for limit in ("-8", "0"):
        config = _case(tmp_path / limit, [_nodepool(limits={GPU: limit})], _job("j", 1, 8))
        plan = _plan(config)
        plans.append(plan)
        assert plan.get("scaleUp", []) == [], plan
    assert plans[0]["refused"] and plans[1]["refused"]
