"""Where jobs run, read from the real API server: the scheduler binds resnet's pods in the
zone a fresh packing would not choose, `topogen snapshot -c` records them, and the render
keeps resnet there (issue 33). Also as argocd/snapshot-rbac.yaml's ServiceAccount: its
Role lets the snapshot list pods in the groups' namespace, and nowhere else."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import yaml
from live_harness import ControlPlane, collection_path
from live_kit import REPO, cli, docs

EXAMPLE = REPO / "examples" / "pytorch-three-zone"
NS = "research"
JOB = "training.kubeflow.org/job-name"
REPLICA = "training.kubeflow.org/replica-type"
ROLE = "training.kubeflow.org/job-role"


def _pod(name: str, labels: dict[str, str], gpus: int, zone: str) -> dict[str, Any]:
    """A pod as the training operator creates it, held to `zone` (as an earlier render's
    policy, or a person, put it there)."""
    resources: dict[str, Any] = {"requests": {"cpu": "1"}}
    if gpus:
        resources = {"requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)},
                     "limits": {"nvidia.com/gpu": str(gpus)}}  # fmt: skip
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {
            "nodeSelector": {"topology.kubernetes.io/zone": zone},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
            "containers": [
                {"name": "pytorch", "image": "registry.example/resnet:2.1", "resources": resources}
            ],
        },
    }


def _resnet(zone: str) -> list[dict[str, Any]]:
    common = {JOB: "resnet", "training.kubeflow.org/operator-name": "pytorchjob-controller"}
    master = {**common, REPLICA: "master", ROLE: "master", "pod-template-hash": "abc"}
    pods = [_pod("resnet-master-0", master, 0, zone)]
    for i in range(3):
        labels = {**common, REPLICA: "worker", "training.kubeflow.org/replica-index": str(i)}
        pods.append(_pod(f"resnet-worker-{i}", labels, 2, zone))
    return pods


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "gitops"
    shutil.copytree(EXAMPLE, root)
    (root / "cluster" / "nodes.yaml").unlink()  # the snapshot stands for them
    return root


def test_render_keeps_the_zone_the_scheduler_bound_resnet_in(
    cluster: ControlPlane, admin_kubeconfig: Path, tmp_path: Path
) -> None:
    cluster.ensure_namespace(NS)
    cluster.ensure_namespace("elsewhere")
    cluster.create_nodes(docs(EXAMPLE / "cluster" / "nodes.yaml"))
    # a fresh packing puts resnet in us-east-1a (tests/core/test_running_pods.py); here it
    # runs in us-east-1b
    pods = _resnet("us-east-1b")
    stranger = _pod("web", {"app": "web"}, 0, "us-east-1a")  # no job's
    too_big = _pod("resnet-worker-9", pods[1]["metadata"]["labels"], 64, "us-east-1b")
    other = copy.deepcopy(pods[1])
    other["metadata"]["namespace"] = "elsewhere"  # no group's namespace
    for p in (*pods, stranger, too_big, other):
        cluster.create_pod(p)
    bound = cluster.wait_scheduled(NS, [p["metadata"]["name"] for p in (*pods, stranger, too_big)])
    cluster.wait_scheduled("elsewhere", ["resnet-worker-0"])
    assert bound["resnet-worker-9"] == ""  # Unschedulable: not bound, not recorded
    assert {bound[p["metadata"]["name"]] for p in pods} <= {"cpu-1b-1", "gpu-1b-1", "gpu-1b-2"}

    root = _repo(tmp_path)
    snap = root / "cluster" / "snapshot.yaml"
    config = root / "topogen.yaml"
    result = cli("snapshot", "--kubeconfig", admin_kubeconfig, "--out", snap, "-c", config)
    assert result.exit_code == 0, result.output
    assert "4 bound pods of training jobs" in result.stderr
    taken = json.loads("\n".join(ln for ln in snap.read_text().splitlines()
                                 if not ln.startswith("#")))  # fmt: skip
    recorded = taken["pods"]
    if any(i["kind"] == "ConfigMap" for i in taken["items"]):
        # the snapshot carries the cluster's own cilium-config: the example's copy goes
        (root / "cluster" / "cilium-config.yaml").unlink()
    assert [(p["namespace"], p["name"], p["nodeName"]) for p in recorded] == [
        (NS, p["metadata"]["name"], bound[p["metadata"]["name"]]) for p in pods
    ]
    master = recorded[0]["labels"]
    assert master[ROLE] == "master" and "pod-template-hash" not in master  # what topogen reads
    again = tmp_path / "again.yaml"
    assert (
        cli("snapshot", "--kubeconfig", admin_kubeconfig, "--out", again, "-c", config).exit_code
        == 0
    )
    assert again.read_bytes() == snap.read_bytes()  # deterministic

    result = cli("render", "-c", config)
    assert result.exit_code == 0, result.output
    placements = yaml.safe_load((root / "policies/prod-east/placements.yaml").read_text())
    assert placements["groups"][0]["jobs"] == [
        {"job": "research/resnet", "domain": "us-east-1b", "gpus": 6}
    ]
    mutate = (root / "policies/prod-east/kyverno/topogen-pytorch-mutate.yaml").read_text()
    assert """'{"research/resnet": dyn(["us-east-1b"])}'""" in mutate
    result = cli("analyze", "-c", config, "-o", "json")
    (plan,) = json.loads(result.stdout)["plans"]
    (resnet,) = plan["jobPlacements"]
    assert resnet["change"] == "kept" and resnet["runningDomain"] == "us-east-1b"

    # without -c nothing is listed, and the summary says so
    result = cli("snapshot", "--kubeconfig", admin_kubeconfig, "--out", tmp_path / "no.yaml")
    assert result.exit_code == 0 and "no pods: give -c" in result.stderr
    assert "pods" not in yaml.safe_load((tmp_path / "no.yaml").read_text())


def test_the_snapshot_role_lists_pods_in_the_groups_namespace_only(
    cluster: ControlPlane, admin_kubeconfig: Path, tmp_path: Path
) -> None:
    cluster.ensure_namespace(NS)
    cluster.create_nodes(docs(EXAMPLE / "cluster" / "nodes.yaml"))
    pods = _resnet("us-east-1b")
    for p in pods:
        cluster.create_pod(p)
    cluster.wait_scheduled(NS, [p["metadata"]["name"] for p in pods])
    kube = cluster.kube()
    rbac = docs(REPO / "argocd" / "snapshot-rbac.yaml")
    for obj in rbac:
        ns = obj["metadata"].get("namespace") or (
            obj["metadata"]["name"] if obj["kind"] == "Namespace" else None
        )
        if ns:
            cluster.ensure_namespace(ns)
        if obj["kind"] != "Namespace":
            kube.create(collection_path(obj), obj, exist_ok=True)
    (role,) = [
        o for o in rbac if o["kind"] == "Role" and o["metadata"]["name"] == "topogen-snapshot-pods"
    ]
    assert role["metadata"]["namespace"] == NS
    sa = next(o for o in rbac if o["kind"] == "ServiceAccount")["metadata"]
    token = kube.create(
        f"/api/v1/namespaces/{sa['namespace']}/serviceaccounts/{sa['name']}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
         "spec": {"expirationSeconds": 600}},
    )["status"]["token"]  # fmt: skip
    as_sa = cluster.kubeconfig("snapshot-sa", token)

    root = _repo(tmp_path)
    config = root / "topogen.yaml"
    by_admin, by_sa = tmp_path / "admin.yaml", tmp_path / "sa.yaml"
    result = cli("snapshot", "--kubeconfig", admin_kubeconfig, "--out", by_admin, "-c", config)
    assert result.exit_code == 0, result.output
    result = cli("snapshot", "--kubeconfig", as_sa, "--out", by_sa, "-c", config)
    assert result.exit_code == 0, result.output
    assert by_sa.read_bytes() == by_admin.read_bytes()
    assert len(yaml.safe_load(by_sa.read_text())["pods"]) == 4

    # a group in another namespace: the Role does not reach it, the snapshot fails closed
    cfg = yaml.safe_load(config.read_text())
    cfg["groups"][0]["namespaces"] = [NS, "elsewhere"]
    config.write_text(yaml.safe_dump(cfg))
    result = cli("snapshot", "--kubeconfig", as_sa, "--out", tmp_path / "x.yaml", "-c", config)
    assert result.exit_code == 2, result.output
    assert "403 Forbidden" in result.stderr and "list pods in namespace elsewhere" in result.stderr
    assert not (tmp_path / "x.yaml").exists()
