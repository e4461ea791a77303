"""Inputs as the API server and kubectl give them: typed lists whose items carry no kind or
apiVersion, namespaced objects without a namespace, and refusals that name the item."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from helpers import ZONE, config_doc, deployment, node_doc, objects, policies, write_tree
from topogen.cli import main
from topogen.config import TopogenConfig, load_config, with_default_namespace
from topogen.errors import InputError
from topogen.pipeline.analyze import analyze
from topogen.pipeline.render import render
from topogen.sources.loader import load_cluster_inputs, load_workload_inputs, read_objects
from topogen.sources.nodes import read_nodes
from topogen.sources.workloads import read_namespaces, read_workloads

# what GET /api/v1/namespaces returns: the items name neither kind nor apiVersion
NAMESPACE_LIST = {
    "kind": "NamespaceList",
    "apiVersion": "v1",
    "metadata": {"resourceVersion": "123"},
    "items": [
        {"metadata": {"name": "ml", "labels": {"team": "a"}}, "spec": {}, "status": {}},
        {"metadata": {"name": "web"}, "spec": {}, "status": {}},
    ],
}


def test_typed_list_items_take_the_lists_kind_and_api_version() -> None:
    objs = objects(yaml.safe_dump(NAMESPACE_LIST))
    assert [(o.api_version, o.kind, o.name) for o in objs] == [
        ("v1", "Namespace", "ml"),
        ("v1", "Namespace", "web"),
    ]
    assert {n.name: n.labels["team"] for n in read_namespaces(objs) if "team" in n.labels} == {
        "ml": "a"
    }


def test_typed_lists_of_every_input_kind(tmp_path: Path) -> None:
    """NodeList, PodList and CiliumNetworkPolicyList as JSON (the API server's shape) and
    YAML, read where topogen.yaml names them."""
    nodes = {"kind": "NodeList", "apiVersion": "v1", "items": []}
    for i, zone in enumerate(["zone-a", "zone-b"]):
        doc = node_doc(f"n{i}", zone)
        nodes["items"].append({k: v for k, v in doc.items() if k not in ("kind", "apiVersion")})
    pods = {
        "kind": "PodList",
        "apiVersion": "v1",
        "items": [
            {
                "metadata": {"name": f"p{r}", "namespace": "ml", "labels": {"app": "j", "role": r}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            }
            for r in ("coordinator", "worker")
        ],
    }
    cnps = {
        "kind": "CiliumNetworkPolicyList",
        "apiVersion": "cilium.io/v2",
        "items": [
            {
                "metadata": {"name": "deny-all", "namespace": "ml"},
                "spec": {"endpointSelector": {}, "ingress": [{}]},
            }
        ],
    }
    write_tree(
        tmp_path,
        {
            "nodes.json": {},
            "workloads/pods.yaml": pods,
            "policies/cnp.json": {},
            "topogen.yaml": config_doc(cluster={"nodes": ["nodes.json"]}),
        },
    )
    (tmp_path / "nodes.json").write_text(json.dumps(nodes, indent=2), encoding="utf-8")
    (tmp_path / "policies/cnp.json").write_text(json.dumps(cnps), encoding="utf-8")
    read = read_objects(["nodes.json"], tmp_path, "nodes")
    assert [o.kind for o in read] == ["Node", "Node"]
    assert [n.zone for n in read_nodes(read, ZONE)] == ["zone-a", "zone-b"]
    pods_read = read_workloads(read_objects(["workloads/"], tmp_path, "workloads"), [])
    assert [(w.kind, w.name) for w in pods_read] == [("Pod", "pcoordinator"), ("Pod", "pworker")]
    cfg = load_config(tmp_path / "topogen.yaml")
    cluster = load_cluster_inputs(cfg, cfg.clusters[0])
    assert [n.name for n in cluster.topology.nodes] == ["n0", "n1"]
    assert [str(p) for p in cluster.policies.policies] == ["cnp ml/deny-all"]
    assert analyze(cfg).findings  # the whole pipeline reads them


def test_generic_list_items_need_their_own_kind() -> None:
    text = """
    apiVersion: v1
    kind: List
    items:
      - {apiVersion: v1, kind: Node, metadata: {name: a}}
      - {apiVersion: v1, metadata: {name: b}}
    """
    with pytest.raises(InputError) as err:
        objects(text, path="nodes.yaml")
    assert str(err.value) == "nodes.yaml: items[1] (b): object has no kind"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "apiVersion: v1\nkind: NodeList\nitems: [{metadata: {name: a}}, 7]\n",
            "nodes.yaml: items[1]: expected a Kubernetes object (a mapping), got int",
        ),
        (
            "kind: NodeList\nitems: [{metadata: {name: a}}]\n",
            "nodes.yaml: items[0] (a): object has no apiVersion",
        ),
        (
            "apiVersion: v1\nkind: NodeList\nitems: [{metadata: {}}]\n",
            "nodes.yaml: items[0]: Node without metadata.name",
        ),
        (
            "{apiVersion: v1, kind: Node, metadata: {name: a}}\n---\n{kind: Node, metadata: {}}\n",
            "nodes.yaml: document 2: object has no apiVersion",
        ),
        (
            "{apiVersion: v1, kind: Node, metadata: {name: a}}\n---\n"
            "{apiVersion: v1, kind: NodeList, items: [{metadata: {name: b}}, {kind: Node}]}\n",
            "nodes.yaml: document 2, items[1]: Node without metadata.name",
        ),
        ("apiVersion: v1\nkind: NodeList\nitems: {a: 1}\n", "nodes.yaml: document 1: NodeList"),
    ],
)
def test_refusals_name_the_file_and_the_item(text: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        objects(text, path="nodes.yaml")
    assert str(err.value).startswith(message)


def test_namespace_less_objects_apply_in_the_configured_namespace(tmp_path: Path) -> None:
    """defaultNamespace in topogen.yaml, and -n over it, as `kubectl apply -n` would."""
    cnp = """
    apiVersion: cilium.io/v2
    kind: CiliumNetworkPolicy
    metadata: {name: p}
    spec: {endpointSelector: {}, ingress: [{}]}
    """
    assert [str(p) for p in policies(cnp).policies] == ["cnp default/p"]
    nodes = [node_doc("n1", "zone-a")]
    bare = deployment("c", {"app": "j", "role": "coordinator"})
    del bare["metadata"]["namespace"]
    cfg = config_doc({"namespaces": ["ml"]})
    cfg["defaultNamespace"] = "ml"
    write_tree(
        tmp_path,
        {
            "nodes.yaml": nodes,
            "policies/p.yaml": cnp,
            "workloads/c.yaml": bare,
            "topogen.yaml": cfg,
        },
    )
    loaded = load_config(tmp_path / "topogen.yaml")
    assert loaded.default_namespace == "ml"
    assert load_config_default() == "default"
    for cfg, want in ((loaded, "ml"), (with_default_namespace(loaded, "web"), "web")):
        cluster = load_cluster_inputs(cfg, cfg.clusters[0])
        assert [str(p) for p in cluster.policies.policies] == [f"cnp {want}/p"]
        assert [w.ref for w in load_workload_inputs(cfg).workloads] == [f"Deployment {want}/c"]
    # the group's namespace is ml: with defaultNamespace ml the coordinator is found
    (plan,) = analyze(loaded).plans
    assert plan.group.name == "ml-training"
    with pytest.raises(InputError, match=r"--namespace: 'Not_A_Namespace' is not a DNS label"):
        with_default_namespace(loaded, "Not_A_Namespace")


def load_config_default() -> str:
    return str(TopogenConfig.model_fields["default_namespace"].default)


def test_namespace_option_and_duplicates_across_spellings(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "w.yaml": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "a", "labels": {"app": "a"}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
            "p.yaml": """
            apiVersion: networking.k8s.io/v1
            kind: NetworkPolicy
            metadata: {name: np}
            spec: {podSelector: {}, ingress: [{}]}
            """,
        },
    )
    args = ["--policies", str(tmp_path / "p.yaml"), "--workloads", str(tmp_path / "w.yaml")]
    runner = CliRunner()
    plain = runner.invoke(main, ["connectivity", *args, "-o", "json"])
    assert plain.exit_code == 0, plain.output
    data = json.loads(plain.output)
    assert [w["id"] for w in data["workloads"]] == ["default/a"]
    assert data["policies"] == ["netpol default/np"]
    moved = runner.invoke(main, ["connectivity", *args, "-n", "team", "-o", "json"])
    data = json.loads(moved.output)
    assert [w["id"] for w in data["workloads"]] == ["team/a"]
    assert data["policies"] == ["netpol team/np"]
    bad = runner.invoke(main, ["connectivity", *args, "--namespace", "Bad_NS"])
    assert bad.exit_code == 2
    # the same object spelt with and without its (default) namespace is one object twice
    twice = """
    {apiVersion: v1, kind: Service, metadata: {name: s}}
    ---
    {apiVersion: v1, kind: Service, metadata: {name: s, namespace: default}}
    """
    with pytest.raises(InputError, match="duplicate object Service default/s"):
        objects(twice)


def test_workload_patches_follow_the_default_namespace(tmp_path: Path) -> None:
    """A manifest without a namespace, in a group of namespace ml by defaultNamespace: its
    workload patch is rendered (and targets the manifest, which names no namespace)."""
    workloads = []
    for role, gpus in (("coordinator", 0), ("worker", 1)):
        doc = deployment(f"j-{role}", {"app": "j", "role": role}, gpus=gpus)
        del doc["metadata"]["namespace"]
        workloads.append(doc)
    cfg = config_doc()
    cfg["defaultNamespace"] = "ml"
    write_tree(
        tmp_path,
        {
            "nodes.yaml": [node_doc("n1", "zone-a", gpus=8), node_doc("n2", "zone-b", gpus=8)],
            "policies/p.yaml": "",
            "workloads/j.yaml": workloads,
            "topogen.yaml": cfg,
        },
    )
    result = render(load_config(tmp_path / "topogen.yaml"))
    patches = [f for f in result.files if "/workload-patches/" in f.path and "j-" in f.path]
    assert len(patches) == 2, [f.path for f in result.files]
    (kust,) = [
        f for f in result.files if f.path.endswith("workload-patches/lab/kustomization.yaml")
    ]
    targets = [p["target"] for p in yaml.safe_load(kust.text)["patches"]]
    assert sorted(t["name"] for t in targets) == ["^j-coordinator$", "^j-worker$"]
    assert all("namespace" not in t for t in targets)  # as the manifests (none)
