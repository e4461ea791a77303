"""Findings for small inline clusters, through load_config + pipeline.analyze."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers import (
    GPU_TAINT,
    GPU_TOLERATION,
    ZONE,
    config_doc,
    deployment,
    node_doc,
    write_tree,
)
from topogen.config import load_config
from topogen.model import Finding, FindingKind
from topogen.pipeline.analyze import AnalysisReport, analyze

INTRA_ZONE = """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: intra-zone-a, namespace: ml}
spec:
  endpointSelector: {matchLabels: {zone: zone-a}}
  ingress: [{fromEndpoints: [{matchLabels: {zone: zone-a}}]}]
  egress: [{toEndpoints: [{matchLabels: {zone: zone-a}}]}]
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: intra-zone-b, namespace: ml}
spec:
  endpointSelector: {matchLabels: {zone: zone-b}}
  ingress: [{fromEndpoints: [{matchLabels: {zone: zone-b}}]}]
  egress: [{toEndpoints: [{matchLabels: {zone: zone-b}}]}]
"""
ALLOW_NONE = "# no policies\n"
COORD = {"app": "job1", "role": "coordinator"}
WORKER = {"app": "job1", "role": "worker"}
PIN_A = {
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-a"]}]}
                ]
            }
        }
    }
}


def zone_split_nodes(gpus: int = 2, b_gpus: int = 0) -> list[dict[str, Any]]:
    """Two tainted GPU nodes in zone-a; two CPU (or GPU) nodes in zone-b."""
    b_taints = [GPU_TAINT] if b_gpus else []
    return [
        node_doc("gpu-a1", gpus=gpus, taints=[GPU_TAINT]),
        node_doc("gpu-a2", gpus=gpus, taints=[GPU_TAINT]),
        node_doc("node-b1", "zone-b", gpus=b_gpus, taints=b_taints),
        node_doc("node-b2", "zone-b", gpus=b_gpus, taints=b_taints),
    ]


def workers(
    replicas: int = 4, spec: dict[str, Any] | None = None, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return deployment(
        "workers",
        labels or WORKER,
        replicas=replicas,
        gpus=1,
        kind="Job",
        spec={"tolerations": [GPU_TOLERATION], **(spec or {})},
    )


def run(
    tmp_path: Path,
    *,
    nodes: list[dict[str, Any]],
    policies: str,
    workloads: list[dict[str, Any]],
    group: dict[str, Any] | None = None,
    cluster: dict[str, Any] | None = None,
) -> AnalysisReport:
    write_tree(
        tmp_path,
        {
            "topogen.yaml": config_doc(
                {"identityLabel": "zone", "ports": [29500], **(group or {})}, cluster=cluster
            ),
            "nodes.yaml": nodes,
            "policies/p.yaml": policies,
            "workloads/w.yaml": workloads,
        },
    )
    return analyze(load_config(tmp_path / "topogen.yaml"))


def kinds(report: AnalysisReport) -> set[FindingKind]:
    return {f.kind for f in report.findings}


def one(report: AnalysisReport, kind: FindingKind) -> Finding:
    found = [f for f in report.findings if f.kind is kind]
    assert len(found) == 1, report.findings
    return found[0]


def test_hard_block_names_the_denying_policies(tmp_path: Path) -> None:
    report = run(
        tmp_path,
        nodes=zone_split_nodes(),
        policies=INTRA_ZONE,
        workloads=[deployment("coord", COORD), workers()],
    )
    f = one(report, FindingKind.HARD_BLOCK)
    assert report.has_problems
    assert f.group == "ml-training" and f.job == "job1" and f.namespace == "ml"
    assert f.roles == ("coordinator", "worker")
    assert f.zones == ("zone-a", "zone-b")
    assert f.policies == ("cnp ml/intra-zone-a", "cnp ml/intra-zone-b")
    assert "intra-zone-a" in f.message and "intra-zone-b" in f.message
    # the fix: the GPU zone, with the GPU toleration for the coordinator
    assert "zone-a" in f.fix and "nvidia.com/gpu" in f.fix


def test_ok_when_the_group_is_pinned_to_one_allowed_zone(tmp_path: Path) -> None:
    coord = deployment(
        "coord", {**COORD, "zone": "zone-a"}, spec={"tolerations": [GPU_TOLERATION], **PIN_A}
    )
    pinned = workers(labels={**WORKER, "zone": "zone-a"}, spec=PIN_A)
    report = run(tmp_path, nodes=zone_split_nodes(), policies=INTRA_ZONE, workloads=[coord, pinned])
    assert kinds(report) == {FindingKind.OK}
    assert not report.has_problems
    assert one(report, FindingKind.OK).zones == ("zone-a",)


def test_cross_zone_when_allowed_but_splittable(tmp_path: Path) -> None:
    coord = deployment("coord", COORD, spec={"tolerations": [GPU_TOLERATION]})
    report = run(
        tmp_path, nodes=zone_split_nodes(), policies=ALLOW_NONE, workloads=[coord, workers()]
    )
    f = one(report, FindingKind.CROSS_ZONE)
    assert FindingKind.HARD_BLOCK not in kinds(report)
    assert f.zones == ("zone-a", "zone-b") and f.roles == ("coordinator", "worker")
    assert "latency" in f.message and "ms RTT" in f.message
    assert "$0.01/GB" in f.message


def test_cross_zone_message_states_latency_and_price(tmp_path: Path) -> None:
    coord = deployment("coord", COORD, spec={"tolerations": [GPU_TOLERATION]})
    report = run(
        tmp_path, nodes=zone_split_nodes(), policies=ALLOW_NONE, workloads=[coord, workers()]
    )
    msg = one(report, FindingKind.CROSS_ZONE).message
    assert "0.5-2 ms" in msg and "0.1-0.3 ms" in msg
    assert "$0.01/GB" in msg and "$0.02/GB" in msg


def test_unschedulable_when_a_role_has_no_eligible_node(tmp_path: Path) -> None:
    intolerant = deployment("workers", WORKER, replicas=2, gpus=1, kind="Job")
    report = run(
        tmp_path,
        nodes=zone_split_nodes(),
        policies=ALLOW_NONE,
        workloads=[deployment("coord", COORD), intolerant],
    )
    found = [f for f in report.findings if f.kind is FindingKind.UNSCHEDULABLE]
    no_node = [f for f in found if "no eligible node" in f.message]
    assert len(no_node) == 1 and no_node[0].roles == ("worker",)
    assert (
        "not tolerated" in no_node[0].message
        and "insufficient nvidia.com/gpu" in no_node[0].message
    )
    assert FindingKind.HARD_BLOCK not in kinds(report)


def test_unschedulable_when_no_domain_has_the_gpus(tmp_path: Path) -> None:
    coord = deployment("coord", COORD, spec={"tolerations": [GPU_TOLERATION]})
    report = run(
        tmp_path,
        nodes=zone_split_nodes(gpus=2, b_gpus=1),
        policies=ALLOW_NONE,
        workloads=[coord, workers(replicas=6)],
    )
    capacity = [
        f
        for f in report.findings
        if f.kind is FindingKind.UNSCHEDULABLE and "no single allowed domain" in f.message
    ]
    assert len(capacity) == 1, report.findings
    msg = capacity[0].message
    assert "needs 6 GPUs" in msg
    assert "zone-a (4 GPUs)" in msg and "zone-b (2 GPUs)" in msg
    assert report.has_problems


def test_unschedulable_when_every_domain_denies_the_traffic(tmp_path: Path) -> None:
    lockdown = """
    apiVersion: cilium.io/v2
    kind: CiliumClusterwideNetworkPolicy
    metadata: {name: lockdown}
    spec:
      endpointSelector: {}
      ingress: [{}]
    """
    coord = deployment("coord", COORD, spec={"tolerations": [GPU_TOLERATION], **PIN_A})
    report = run(
        tmp_path,
        nodes=zone_split_nodes(),
        policies=lockdown,
        workloads=[coord, workers(spec=PIN_A)],
    )
    assert FindingKind.HARD_BLOCK in kinds(report)
    assert "ccnp lockdown" in one(report, FindingKind.HARD_BLOCK).policies
    assert FindingKind.UNSCHEDULABLE in kinds(report)
    assert report.plans[0].refused


def test_identity_mismatch_for_a_static_label_naming_an_impossible_zone(tmp_path: Path) -> None:
    coord = deployment(
        "coord", {**COORD, "zone": "zone-b"}, spec={"tolerations": [GPU_TOLERATION], **PIN_A}
    )
    report = run(
        tmp_path,
        nodes=zone_split_nodes(),
        policies=INTRA_ZONE,
        workloads=[coord, workers(spec=PIN_A)],
    )
    f = one(report, FindingKind.IDENTITY_MISMATCH)
    assert f.roles == ("coordinator",)
    assert f.zones == ("zone-a", "zone-b")
    assert "zone=zone-b" in f.message and "can only land in zone-a" in f.message
    # placement and identity disagree: the static zone-b pod is denied by zone-a's workers
    assert FindingKind.HARD_BLOCK in kinds(report)


def test_static_identity_matching_placement_is_not_a_mismatch(tmp_path: Path) -> None:
    coord = deployment(
        "coord", {**COORD, "zone": "zone-a"}, spec={"tolerations": [GPU_TOLERATION], **PIN_A}
    )
    report = run(
        tmp_path,
        nodes=zone_split_nodes(),
        policies=INTRA_ZONE,
        workloads=[coord, workers(spec=PIN_A)],
    )
    assert FindingKind.IDENTITY_MISMATCH not in kinds(report)
    assert kinds(report) == {FindingKind.OK}


def test_stamped_identity_follows_the_zone_the_pod_lands_in(tmp_path: Path) -> None:
    """Without a static label the pod gets its zone's identity: same-zone pins are OK."""
    coord = deployment("coord", COORD, spec={"tolerations": [GPU_TOLERATION], **PIN_A})
    report = run(
        tmp_path,
        nodes=zone_split_nodes(),
        policies=INTRA_ZONE,
        workloads=[coord, workers(spec=PIN_A)],
    )
    assert kinds(report) == {FindingKind.OK}


def test_node_without_zone_label_is_its_own_zone(tmp_path: Path) -> None:
    nodes = [node_doc("gpu-a1", gpus=4), node_doc("cp-1", zone=None)]
    report = run(
        tmp_path,
        nodes=nodes,
        policies=ALLOW_NONE,
        workloads=[deployment("coord", COORD), workers(spec={})],
    )
    f = one(report, FindingKind.CROSS_ZONE)
    assert "<no-zone>:cp-1" in f.zones and "zone-a" in f.zones


def test_pods_on_a_node_without_zone_label_get_no_zone_identity(tmp_path: Path) -> None:
    """A zone policy keyed on `zone Exists` must not be satisfied by a zone-less node."""
    exists = """
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: zoned-only, namespace: ml}
    spec:
      endpointSelector: {}
      ingress: [{fromEndpoints: [{matchExpressions: [{key: zone, operator: Exists}]}]}]
    """
    nodes = [node_doc("gpu-a1", gpus=4), node_doc("cp-1", zone=None)]
    report = run(
        tmp_path,
        nodes=nodes,
        policies=exists,
        workloads=[deployment("coord", COORD), workers(spec={})],
    )
    f = one(report, FindingKind.HARD_BLOCK)
    assert "<no-zone>:cp-1" in f.zones


def test_kueue_tas_jobs_are_reported_not_planned(tmp_path: Path) -> None:
    kueue_labels = {**WORKER, "kueue.x-k8s.io/tas": "true"}
    report = run(
        tmp_path,
        nodes=zone_split_nodes(),
        policies=INTRA_ZONE,
        workloads=[
            deployment("coord", {**COORD, "kueue.x-k8s.io/tas": "true"}),
            workers(labels=kueue_labels),
        ],
    )
    f = one(report, FindingKind.KUEUE_MANAGED)
    assert "Kueue" in f.message
    # Kueue, not the scheduler, picks the zone: the denying policies are stated, not a verdict
    assert kinds(report) == {FindingKind.KUEUE_MANAGED} and not report.has_problems
    assert f.policies == ("cnp ml/intra-zone-a", "cnp ml/intra-zone-b")
    assert "one zone" in f.message
    plan = report.plans[0]
    assert plan.kueue_jobs == ("ml-training/ml/job1",)
    assert plan.jobs == () and plan.domain is None


def test_jobs_are_grouped_by_the_group_label(tmp_path: Path) -> None:
    coord2 = deployment(
        "coord2",
        {"app": "job2", "role": "coordinator"},
        spec={"tolerations": [GPU_TOLERATION], **PIN_A},
    )
    workers2 = deployment(
        "workers2",
        {"app": "job2", "role": "worker"},
        replicas=1,
        gpus=1,
        kind="Job",
        spec={"tolerations": [GPU_TOLERATION], **PIN_A},
    )
    report = run(
        tmp_path,
        nodes=zone_split_nodes(),
        policies=INTRA_ZONE,
        workloads=[deployment("coord", COORD), workers(replicas=2), coord2, workers2],
    )
    by_job = {(f.job, f.kind) for f in report.findings}
    assert ("job1", FindingKind.HARD_BLOCK) in by_job
    assert ("job2", FindingKind.OK) in by_job


def test_other_namespaces_are_not_part_of_the_group(tmp_path: Path) -> None:
    report = run(
        tmp_path,
        nodes=zone_split_nodes(),
        policies=INTRA_ZONE,
        workloads=[deployment("coord", COORD, namespace="elsewhere"), workers()],
    )
    assert all(f.roles == ("worker",) for f in report.findings)


HOST_ZONES = """
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: hosts-zone-a}
spec:
  nodeSelector: {matchLabels: {topology.kubernetes.io/zone: zone-a}}
  ingress: [{fromNodes: [{matchLabels: {topology.kubernetes.io/zone: zone-a}}]}]
  egress: [{toNodes: [{matchLabels: {topology.kubernetes.io/zone: zone-a}}]}]
---
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: hosts-zone-b}
spec:
  nodeSelector: {matchLabels: {topology.kubernetes.io/zone: zone-b}}
  ingress: [{fromNodes: [{matchLabels: {topology.kubernetes.io/zone: zone-b}}]}]
  egress: [{toNodes: [{matchLabels: {topology.kubernetes.io/zone: zone-b}}]}]
"""


# host policies apply with the host firewall; fromNodes needs node-selector labels, and a
# nodeSelector on the zone needs the agent to keep that label (which makes `labels` an
# allow-list: the pods' keys are listed too)
HOST_FIREWALL_AGENT = {
    "cilium": {
        "hostFirewall": True,
        "nodeSelectorLabels": True,
        "identityLabels": [f"k8s:{ZONE}", "k8s:zone", "k8s:app", "k8s:role"],
    }
}


def test_host_network_group_is_judged_by_host_policies(tmp_path: Path) -> None:
    host_net = {"hostNetwork": True}
    report = run(
        tmp_path,
        nodes=zone_split_nodes(),
        policies=HOST_ZONES + "---\n" + INTRA_ZONE,
        workloads=[deployment("coord", COORD, spec=host_net), workers(spec=host_net)],
        cluster=HOST_FIREWALL_AGENT,
    )
    f = one(report, FindingKind.HARD_BLOCK)
    assert f.policies == ("ccnp hosts-zone-a", "ccnp hosts-zone-b")  # pod policies play no part
    pinned = run(
        tmp_path,
        nodes=zone_split_nodes(),
        policies=HOST_ZONES,
        workloads=[
            deployment("coord", COORD, spec={**host_net, "tolerations": [GPU_TOLERATION], **PIN_A}),
            workers(spec={**host_net, **PIN_A}),
        ],
        cluster=HOST_FIREWALL_AGENT,
    )
    assert kinds(pinned) == {FindingKind.OK}


def test_host_policies_are_inert_without_the_host_firewall(tmp_path: Path) -> None:
    host_net = {"hostNetwork": True}
    report = run(
        tmp_path,
        nodes=zone_split_nodes(),
        policies=HOST_ZONES,
        workloads=[deployment("coord", COORD, spec=host_net), workers(spec=host_net)],
        cluster={"cilium": {"nodeSelectorLabels": True}},
    )
    assert FindingKind.HARD_BLOCK not in kinds(report)


PYTORCH = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: bert, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers: [{name: pytorch, image: img, resources: {limits: {nvidia.com/gpu: 1}}}]
    Worker:
      replicas: 3
      template:
        spec:
          containers: [{name: pytorch, image: img, resources: {limits: {nvidia.com/gpu: 1}}}]
"""
CCNP_ZONES = """
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: same-zone}
specs:
  - endpointSelector: {matchLabels: {zone: zone-a}}
    ingress: [{fromEndpoints: [{matchLabels: {zone: zone-a}}]}]
  - endpointSelector: {matchLabels: {zone: zone-b}}
    ingress: [{fromEndpoints: [{matchLabels: {zone: zone-b}}]}]
  - endpointSelector: {matchLabels: {zone: zone-c}}
    ingress: [{fromEndpoints: [{matchLabels: {zone: zone-c}}]}]
"""


def test_pytorchjob_on_three_zones_under_a_clusterwide_policy(tmp_path: Path) -> None:
    nodes = [node_doc(f"gpu-{z}", f"zone-{z}", gpus=4) for z in "abc"]
    (tmp_path / "workloads").mkdir()
    report = run(
        tmp_path,
        nodes=nodes,
        policies=CCNP_ZONES,
        workloads=[],
        group={
            "profile": "kubeflow-training-operator",
            "groupLabel": None,
            "roleLabel": None,
            "coordinatorRoles": None,
            "workerRoles": None,
        },
    )
    assert report.findings == ()  # no workloads yet: nothing to say
    (tmp_path / "workloads" / "w.yaml").write_text(PYTORCH)
    report = analyze(load_config(tmp_path / "topogen.yaml"))
    f = one(report, FindingKind.HARD_BLOCK)
    assert f.job == "bert" and f.policies == ("ccnp same-zone",)
    assert f.zones == ("zone-a", "zone-b", "zone-c")
    assert report.plans[0].domain == "zone-a"


def test_node_without_zone_label_is_reported_once_by_the_loader(tmp_path: Path) -> None:
    from topogen.sources.loader import load_cluster_inputs

    write_tree(
        tmp_path,
        {
            "topogen.yaml": config_doc(),
            "nodes.yaml": [node_doc("gpu-a1"), node_doc("cp-1", zone=None)],
            "policies/p.yaml": ALLOW_NONE,
        },
    )
    cfg = load_config(tmp_path / "topogen.yaml")
    inputs = load_cluster_inputs(cfg, cfg.clusters[0])
    assert inputs.warnings == (
        "cluster lab: node cp-1 has no topology.kubernetes.io/zone label; it counts as a zone "
        "of its own",
    )


def test_one_way_denial_is_a_hard_block_not_an_allowed_split(tmp_path: Path) -> None:
    """Workers accept only their own zone; coordinators accept anyone. Every split is
    denied in one direction (towards a worker) and allowed in the other: a HARD_BLOCK,
    never a CROSS_ZONE whose message says the traffic is allowed."""
    one_way = "---\n".join(
        f"""
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {{name: workers-in-{z}, namespace: ml}}
    spec:
      endpointSelector: {{matchLabels: {{role: worker, zone: zone-{z}}}}}
      ingress: [{{fromEndpoints: [{{matchLabels: {{zone: zone-{z}}}}}]}}]
    """
        for z in "ab"
    )
    coord = deployment("coord", COORD, spec={"tolerations": [GPU_TOLERATION]})
    report = run(
        tmp_path,
        nodes=zone_split_nodes(gpus=2, b_gpus=2),
        policies=one_way,
        workloads=[coord, workers(replicas=2)],
    )
    block = one(report, FindingKind.HARD_BLOCK)
    assert block.policies == ("cnp ml/workers-in-a", "cnp ml/workers-in-b")
    assert FindingKind.CROSS_ZONE not in kinds(report), report.findings
