"""Small builders for inline test cases: file trees, policies, nodes, pod templates."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

from topogen.analysis.ports import PortSet
from topogen.analysis.reachability import PathVerdict, PolicyIndex, host_endpoint, pod_endpoint
from topogen.manifest import KubeObject
from topogen.model import (
    NO_ZONE_PREFIX,
    CiliumSettings,
    Endpoint,
    Namespace,
    Node,
    PodTemplate,
    PolicySet,
    Taint,
    Toleration,
    Topology,
)
from topogen.sources.objects import flatten
from topogen.sources.policies import read_policies
from topogen.sources.yamlio import Document
from topogen.yamltext import load_yaml_text

ZONE = "topology.kubernetes.io/zone"
GPU = "nvidia.com/gpu"


def write_tree(root: Path, files: Mapping[str, str | Any]) -> Path:
    """Write {relative path: YAML text (dedented) or a Python object (dumped)} under root."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            text = textwrap.dedent(content).lstrip("\n")
        else:
            docs = content if isinstance(content, list) else [content]
            text = yaml.safe_dump_all(docs, sort_keys=False)
        path.write_text(text, encoding="utf-8")
    return root


def dedent_docs(text: str) -> str:
    """Dedent each `---`-separated document on its own (inline cases concatenate them)."""
    parts = re.split(r"^[ \t]*---[ \t]*$", text, flags=re.MULTILINE)
    return "---\n".join(textwrap.dedent(p).strip("\n") + "\n" for p in parts)


def objects(text: str, path: str = "inline.yaml") -> list[KubeObject]:
    docs = load_yaml_text(dedent_docs(text), path)
    return list(flatten(Document(d, path, i) for i, d in enumerate(docs) if d is not None))


def policies(text: str, cilium: CiliumSettings | None = None) -> PolicySet:
    return read_policies(objects(text), cilium)


def index(
    text: str, namespaces: Sequence[Namespace] = (), cilium: CiliumSettings | None = None
) -> PolicyIndex:
    """The policies under Cilium's default agent options, or `cilium`."""
    return PolicyIndex(policies(text, cilium), {n.name: n for n in namespaces})


# host policies with fromNodes/toNodes need both agent options on
HOST_FIREWALL = CiliumSettings(host_firewall=True, node_selector_labels=True)


def ns(name: str, **labels: str) -> Namespace:
    return Namespace(name, {"kubernetes.io/metadata.name": name, **labels})


def pod(
    namespace: str = "ml",
    idx: PolicyIndex | None = None,
    ports: tuple[tuple[str, int, str], ...] = (),
    **labels: str,
) -> Endpoint:
    namespaces = idx.namespaces if idx is not None else {}
    return pod_endpoint(labels, namespace, namespaces, ports)


def host(name: str, **labels: str) -> Endpoint:
    return host_endpoint(name, labels)


TCP_ALL = PortSet.of({"TCP": [(1, 65535)]})


def tcp(*ports: int) -> PortSet:
    return PortSet.of({"TCP": [(p, p) for p in ports]})


def allowed(idx: PolicyIndex, src: Endpoint, dst: Endpoint, required: PortSet = TCP_ALL) -> bool:
    return idx.verdict(src, dst).permits(required)


def verdict(idx: PolicyIndex, src: Endpoint, dst: Endpoint) -> PathVerdict:
    return idx.verdict(src, dst)


def node(
    name: str,
    zone: str | None = "zone-a",
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Taint] = (),
    unschedulable: bool = False,
    **allocatable: Any,
) -> Node:
    """A Node; allocatable keys use `_` for `/` and `.` is spelt `__` (gpu=2 means nvidia.com/gpu)."""
    all_labels = dict(labels or {})
    if zone is not None:
        all_labels[ZONE] = zone
    alloc = {"cpu": Fraction(16), "memory": Fraction(64 * 2**30), "pods": Fraction(110)}
    for key, value in allocatable.items():
        alloc[GPU if key == "gpu" else key] = Fraction(value)
    return Node(
        name,
        all_labels,
        tuple(taints),
        alloc,
        unschedulable,
        (),
        zone if zone is not None else f"{NO_ZONE_PREFIX}{name}",
    )


def topology(*nodes: Node, gpu_node_selector: Mapping[str, str] | None = None) -> Topology:
    return Topology(tuple(nodes), ZONE, (GPU, "amd.com/gpu"), dict(gpu_node_selector or {}))


def template(
    labels: Mapping[str, str] | None = None,
    *,
    tolerations: Sequence[Toleration] = (),
    gpus: int = 0,
    **kwargs: Any,
) -> PodTemplate:
    requests: dict[str, Fraction] = {"cpu": Fraction(1)}
    if gpus:
        requests[GPU] = Fraction(gpus)
    return PodTemplate(
        labels=dict(labels or {}), tolerations=tuple(tolerations), requests=requests, **kwargs
    )


def node_doc(
    name: str,
    zone: str | None = "zone-a",
    *,
    gpus: int = 0,
    taints: Sequence[Mapping[str, str]] = (),
    labels: Mapping[str, str] | None = None,
    unschedulable: bool = False,
    cpu: str = "16",
) -> dict[str, Any]:
    """A Node manifest (as `kubectl get node -o yaml` would give it)."""
    all_labels = {"kubernetes.io/hostname": name, **(labels or {})}
    if zone is not None:
        all_labels[ZONE] = zone
    alloc = {"cpu": cpu, "memory": "64Gi", "pods": "110"}
    if gpus:
        alloc[GPU] = str(gpus)
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
        "spec": spec,
        "status": {"allocatable": alloc},
    }


GPU_TAINT = {"key": GPU, "value": "present", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}


def config_doc(
    group: Mapping[str, Any] | None = None,
    *,
    network_policies: Sequence[str] = ("policies/",),
    cluster: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A topogen.yaml for the custom profile (app/role labels), overridable per key."""
    g: dict[str, Any] = {
        "name": "ml-training",
        "profile": "custom",
        "namespaces": ["ml"],
        "groupLabel": "app",
        "roleLabel": "role",
        "coordinatorRoles": ["coordinator"],
        "workerRoles": ["worker"],
    }
    g.update(group or {})
    c: dict[str, Any] = {
        "name": "lab",
        "nodes": ["nodes.yaml"],
        "networkPolicies": list(network_policies),
    }
    c.update(cluster or {})
    return {
        "apiVersion": "topogen.io/v1alpha1",
        "kind": "TopogenConfig",
        "clusters": [c],
        "workloads": ["workloads/"],
        "groups": [g],
    }


def deployment(
    name: str,
    labels: Mapping[str, str],
    *,
    replicas: int = 1,
    namespace: str = "ml",
    gpus: int = 0,
    spec: Mapping[str, Any] | None = None,
    kind: str = "Deployment",
) -> dict[str, Any]:
    """A Deployment (or batch Job with kind="Job") whose pods carry `labels`."""
    resources: dict[str, Any] = {"requests": {"cpu": "1"}}
    if gpus:
        resources["requests"][GPU] = str(gpus)
        resources["limits"] = {GPU: str(gpus)}
    pod_spec = {
        "containers": [{"name": "main", "image": "img", "resources": resources}],
        **(spec or {}),
    }
    body: dict[str, Any] = {"template": {"metadata": {"labels": dict(labels)}, "spec": pod_spec}}
    if kind == "Job":
        api, body["parallelism"] = "batch/v1", replicas
    else:
        api, body["replicas"] = "apps/v1", replicas
        body["selector"] = {"matchLabels": dict(labels)}
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
    }


def rendered_tree(out: Path) -> dict[str, bytes]:
    """What a reader of the output tree sees: every file under out's non-dot entries
    (through the top folders' symlinks into .topogen/tree), by relative path."""
    found: dict[str, bytes] = {}
    for entry in sorted(out.iterdir()) if out.is_dir() else []:
        if entry.name.startswith("."):
            continue
        if entry.is_file():
            found[entry.name] = entry.read_bytes()
        elif entry.is_dir():
            for p in sorted(entry.rglob("*")):
                if p.is_file():
                    found[f"{entry.name}/{p.relative_to(entry).as_posix()}"] = p.read_bytes()
    return found
