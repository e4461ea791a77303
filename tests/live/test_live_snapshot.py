"""`topogen snapshot` against the real API server: round trip, determinism, RBAC, no CRDs."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml
from live_harness import ControlPlane
from live_kit import NS, REPO, cli, docs, example_nodes, example_policies, write_config

from topogen.config import load_config
from topogen.sources.live import LiveSource, read_cluster, snapshot_yaml
from topogen.sources.loader import load_cluster_inputs

NETPOL: dict[str, Any] = {
    "apiVersion": "networking.k8s.io/v1",
    "kind": "NetworkPolicy",
    "metadata": {
        "name": "rendezvous-only",
        "namespace": NS,
        "labels": {"team": "ml"},
        "annotations": {"owner": "ml-platform"},
    },
    "spec": {
        "podSelector": {"matchLabels": {"app": "ml-training"}},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [{"namespaceSelector": {"matchLabels": {"team": "ml"}}}],
                "ports": [{"port": 29500, "protocol": "TCP"}],
            }
        ],
    },
}
CCNP: dict[str, Any] = {
    "apiVersion": "cilium.io/v2",
    "kind": "CiliumClusterwideNetworkPolicy",
    "metadata": {"name": "gpu-hosts", "annotations": {"note": "dropped by the snapshot"}},
    "specs": [
        {
            "nodeSelector": {"matchLabels": {"gpu": "true"}},
            "ingress": [{"fromEntities": ["cluster"]}],
        },
        {"endpointSelector": {}, "egress": [{"toEntities": ["kube-apiserver"]}]},
    ],
}
# the Cilium agent's settings: a snapshot keeps the keys topogen reads, nothing else
CILIUM_CONFIG: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "cilium-config", "namespace": "kube-system"},
    "data": {
        "labels": "k8s:topology.kubernetes.io/zone k8s:app k8s:io.kubernetes.pod.namespace",
        "enable-policy": "default",
        "cluster-name": "lab",
        "debug": "false",
        "kube-proxy-replacement": "true",
    },
}
FORBIDDEN = {
    "managedFields",
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "annotations",
    "conditions",
    "nodeInfo",
    "capacity",
    "addresses",
    "finalizers",
}


def _populate(cluster: ControlPlane) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    cluster.ensure_namespace(NS, {"team": "ml"})
    nodes = example_nodes()
    nodes[3]["spec"]["unschedulable"] = True
    nodes[2]["spec"]["taints"] = [{"key": "maintenance", "effect": "NoExecute"}]
    cluster.create_nodes(nodes)
    policies = [*example_policies(), NETPOL, CCNP]
    cluster.apply(policies)
    _cilium_config(cluster)
    return nodes, policies


def _cilium_config(cluster: ControlPlane) -> None:
    """The agent's settings in kube-system (which outlives a test's namespaces)."""
    from live_harness import collection_path

    cluster.kube().create(collection_path(CILIUM_CONFIG), CILIUM_CONFIG, exist_ok=True)


def _expected(obj: dict[str, Any]) -> dict[str, Any]:
    """The source object as a snapshot keeps it."""
    meta = obj["metadata"]
    out: dict[str, Any] = {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "metadata": {"name": meta["name"]},
    }
    if meta.get("namespace"):
        out["metadata"]["namespace"] = meta["namespace"]
    if obj["kind"] == "ConfigMap":
        out["data"] = {
            k: v for k, v in obj["data"].items() if k not in ("debug", "kube-proxy-replacement")
        }
        return out
    if obj["kind"] == "Node":
        out["metadata"]["labels"] = meta["labels"]
        out["spec"] = copy.deepcopy(obj["spec"])
        out["status"] = {"allocatable": obj["status"]["allocatable"]}
        return out
    for key in ("spec", "specs"):
        if key in obj:
            out[key] = obj[key]
    return out


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_snapshot_round_trip(cluster: ControlPlane, admin_kubeconfig: Path, tmp_path: Path) -> None:
    nodes, policies = _populate(cluster)
    first, second = tmp_path / "a" / "snapshot.yaml", tmp_path / "b" / "snapshot.yaml"
    for out in (first, second):
        result = cli("snapshot", "--kubeconfig", admin_kubeconfig, "-o", out)
        assert result.exit_code == 0, result.output
        assert "4 nodes" in result.stderr and "4 policies" in result.stderr
    assert first.read_bytes() == second.read_bytes()  # deterministic

    text = first.read_text()
    snap = yaml.safe_load(text)
    assert snap["apiVersion"] == "topogen.io/v1alpha1" and snap["kind"] == "TopogenSnapshot"
    # the body is JSON (which is YAML): topogen reads it with the json module
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    assert json.loads(body) == snap
    items = snap["items"]
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        by_kind.setdefault(item["kind"], []).append(item)
    key = lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"])  # noqa: E731
    assert by_kind["Node"] == sorted((_expected(n) for n in nodes), key=key)
    assert by_kind["ConfigMap"] == [_expected(CILIUM_CONFIG)]
    got_policies = [i for i in items if i["kind"] not in ("Node", "Namespace", "ConfigMap")]
    order = ["CiliumClusterwideNetworkPolicy", "CiliumNetworkPolicy", "NetworkPolicy"]
    assert got_policies == sorted(
        (_expected(p) for p in policies), key=lambda o: (order.index(o["kind"]), *key(o))
    )
    ml = next(n for n in by_kind["Namespace"] if n["metadata"]["name"] == NS)
    assert ml["metadata"]["labels"] == {"kubernetes.io/metadata.name": NS, "team": "ml"}
    assert not _keys(items) & FORBIDDEN
    assert "status" not in {k for i in items if i["kind"] != "Node" for k in i}
    assert items[-1]["kind"] == "ConfigMap"  # last, after the policies

    # topogen reads the snapshot as it reads the source files: same model
    source = tmp_path / "source"
    source.mkdir()
    (source / "nodes.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": nodes})
    )
    (source / "policies.yaml").write_text(yaml.safe_dump_all(policies))
    (source / "cilium-config.yaml").write_text(yaml.safe_dump(CILIUM_CONFIG))
    (source / "ns.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": NS, "labels": {"team": "ml"}},
            }
        )
    )
    live = load_cluster_inputs(*_cluster(write_config(tmp_path, nodes=[first], name="l.yaml")))
    files = load_cluster_inputs(
        *_cluster(
            write_config(
                tmp_path,
                nodes=[source / "nodes.yaml", source / "cilium-config.yaml"],
                policies=[source / "policies.yaml"],
                name="f.yaml",
            )
        )
    )
    assert live.topology == files.topology
    assert live.policies.cilium == files.policies.cilium
    # the agent's settings come with the snapshot: its label filter, its cluster name
    assert live.policies.cilium.identity_labels == tuple(CILIUM_CONFIG["data"]["labels"].split())
    assert live.policies.cilium.cluster_name == "lab" and live.cilium is not None

    def rules(inputs: Any) -> list[str]:
        return sorted(
            repr(
                (
                    r.policy.kind,
                    r.policy.namespace,
                    r.policy.name,
                    r.index,
                    r.section,
                    r.item,
                    r.subject_host,
                    r.subject,
                    r.subject_namespace,
                    r.peers,
                    r.ports,
                )
            )
            for r in inputs.policies.rules
        )

    assert rules(live) == rules(files) and len(rules(live)) >= 8
    # named as the networkPolicies source instead, it gives the same policies
    as_policies = load_cluster_inputs(
        *_cluster(
            write_config(tmp_path, nodes=[source / "nodes.yaml"], policies=[first], name="p.yaml")
        )
    )
    assert rules(as_policies) == rules(files)
    assert as_policies.namespaces[NS].labels["team"] == "ml"
    assert live.namespaces[NS].labels["team"] == "ml"


def _cluster(path: Path) -> tuple[Any, Any]:
    cfg = load_config(path)
    return cfg, cfg.clusters[0]


def test_snapshot_pages_through_large_lists(cluster: ControlPlane, admin_kubeconfig: Path) -> None:
    _populate(cluster)
    small = read_cluster(LiveSource(kubeconfig=str(admin_kubeconfig), page_size=1))
    whole = read_cluster(LiveSource(kubeconfig=str(admin_kubeconfig), page_size=500))
    assert small.count("Node") == 4 and small.count("CiliumNetworkPolicy") == 2
    assert snapshot_yaml(small) == snapshot_yaml(whole)


def test_least_privilege_role_is_enough_for_snapshot(
    cluster: ControlPlane, admin_kubeconfig: Path, tmp_path: Path
) -> None:
    """argocd/snapshot-rbac.yaml, as its ServiceAccount: snapshot works, nothing more."""
    _populate(cluster)
    rbac = docs(REPO / "argocd" / "snapshot-rbac.yaml")
    kube = cluster.kube()
    for obj in rbac:
        if obj["kind"] == "Namespace":
            cluster.ensure_namespace(obj["metadata"]["name"])
        else:
            if obj.get("metadata", {}).get("namespace"):
                cluster.ensure_namespace(obj["metadata"]["namespace"])
            from live_harness import collection_path

            kube.create(collection_path(obj), obj, exist_ok=True)
    sa = next(o for o in rbac if o["kind"] == "ServiceAccount")["metadata"]
    role = next(o for o in rbac if o["kind"] == "ClusterRole")
    verbs = {v for r in role["rules"] for v in r["verbs"]}
    assert verbs == {"list"}  # a snapshot lists, cluster-wide
    # and gets one ConfigMap, by name (the other Role lists pods in the groups' namespace)
    (one,) = [
        o for o in rbac if o["kind"] == "Role" and o["metadata"]["namespace"] == "kube-system"
    ]
    assert one["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cilium-config"],
         "verbs": ["get"]}
    ]  # fmt: skip
    token = kube.create(
        f"/api/v1/namespaces/{sa['namespace']}/serviceaccounts/{sa['name']}/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 600},
        },
    )["status"]["token"]
    sa_config = cluster.kubeconfig("snapshot-sa", token)

    as_admin = cli("snapshot", "--kubeconfig", admin_kubeconfig, "-o", tmp_path / "admin.yaml")
    as_sa = cli("snapshot", "--kubeconfig", sa_config, "-o", tmp_path / "sa.yaml")
    assert as_admin.exit_code == 0 and as_sa.exit_code == 0, as_sa.output
    assert (tmp_path / "admin.yaml").read_bytes() == (tmp_path / "sa.yaml").read_bytes()

    # the role grants nothing else: pods (what audit also needs) are forbidden
    config = write_config(tmp_path, nodes=[tmp_path / "sa.yaml"])
    audit = cli("audit", "--kubeconfig", sa_config, "-c", config)
    assert audit.exit_code == 2, audit.output
    assert "403 Forbidden" in audit.stderr and "list pods in namespace ml-demo" in audit.stderr

    # the example CronJob is a valid object for this API server (server-side dry run)
    for obj in docs(REPO / "argocd" / "snapshot-cronjob.yaml"):
        ns = obj["metadata"].get("namespace")
        if ns:
            cluster.ensure_namespace(ns)
        from live_harness import collection_path

        kube.request("POST", collection_path(obj), obj, query={"dryRun": "All"})


def test_missing_cilium_crds_mean_no_cilium_policies(
    cluster: ControlPlane, admin_kubeconfig: Path, tmp_path: Path
) -> None:
    cluster.ensure_namespace(NS)
    cluster.create_nodes(example_nodes())
    cluster.apply([NETPOL])
    _cilium_config(cluster)
    cluster.uninstall_crds()
    try:
        result = cli("snapshot", "--kubeconfig", admin_kubeconfig, "-o", tmp_path / "s.yaml")
        assert result.exit_code == 0, result.output
        warnings = [ln for ln in result.stderr.splitlines() if "warning" in ln]
        assert len(warnings) == 1, result.stderr
        assert "no CiliumClusterwideNetworkPolicy or CiliumNetworkPolicy CRD" in warnings[0]
        kinds = {i["kind"] for i in yaml.safe_load((tmp_path / "s.yaml").read_text())["items"]}
        assert kinds == {"Namespace", "Node", "NetworkPolicy", "ConfigMap"}
    finally:
        cluster.reinstall_crds()
