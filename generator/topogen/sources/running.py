"""Where the training groups' jobs run: the `pods` of a topogen snapshot.

`topogen snapshot -c topogen.yaml` records, for the namespaces of the config's groups, the
bound pods of their jobs, reduced to what topogen reads: namespace, name, the labels the
groups' profiles key on, and the node (`pod_entry`). A render keeps a job whose pods all
run in one domain there (plan/planner.py), as it keeps a job of its placements file.

The list sits beside the snapshot's `items` (not among them: it is no Kubernetes object),
so a topogen that knows no `pods` reads the snapshot as before, and a snapshot without
them (older, or taken without -c) means "nothing known to run".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from topogen.errors import InputError
from topogen.manifest import KubeObject
from topogen.model import LabelSelector, RunningPod
from topogen.names import check_labels, dns_label_problem, object_name_problem
from topogen.operators.profile import Profile
from topogen.sources.objects import SNAPSHOT_KIND
from topogen.sources.workloads import read_workloads
from topogen.sources.yamlio import Document, expand_paths, iter_documents

if TYPE_CHECKING:
    from topogen.config import ClusterConfig, TopogenConfig

__all__ = ["PODS_KEY", "pod_entry", "profile_keys", "read_running_pods", "running_pods"]

PODS_KEY = "pods"
_ENTRY_KEYS = ("namespace", "name", "labels", "nodeName")


def profile_keys(profiles: Iterable[Profile]) -> frozenset[str]:
    """Every label key the profiles read to find a pod's job and role."""
    keys: set[str] = set()
    for p in profiles:
        keys.update(k for k in (p.job_label, p.role_label, p.detached_label, *p.scope) if k)
        selectors: list[LabelSelector] = [*p.coordinator, *p.worker, *p.anchors]
        if p.members is not None:
            selectors.append(p.members)
        for s in selectors:
            keys.update(k for k, _ in s.match_labels)
            keys.update(r.key for r in s.match_expressions)
    return frozenset(keys)


def pod_entry(
    namespace: str, name: str, labels: Mapping[str, str], node: str, keys: frozenset[str]
) -> dict[str, Any]:
    """One bound pod as a snapshot records it (its labels cut to `keys`)."""
    return {
        "namespace": namespace,
        "name": name,
        "labels": {k: str(v) for k, v in sorted(labels.items()) if k in keys},
        "nodeName": node,
    }


def read_running_pods(cfg: TopogenConfig, cluster: ClusterConfig) -> tuple[RunningPod, ...]:
    """The bound pods of the snapshots the cluster names (its nodes or policies sources)."""
    paths = [*cluster.nodes, *cluster.network_policies]
    files = expand_paths(
        dict.fromkeys(paths), base=cfg.base_dir, what=f"clusters.{cluster.name}.nodes",
        root=cfg.root, source=cfg.path,
    )  # fmt: skip
    return running_pods(iter_documents(dict.fromkeys(files)))


def running_pods(docs: Iterable[Document]) -> tuple[RunningPod, ...]:
    """The `pods` of every snapshot among the documents, checked; sorted by namespace/name."""
    out: dict[tuple[str, str], RunningPod] = {}
    for doc in docs:
        data = doc.data
        if not isinstance(data, dict) or data.get("kind") != SNAPSHOT_KIND:
            continue
        entries = data.get(PODS_KEY)
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise InputError(f"{SNAPSHOT_KIND}.{PODS_KEY} must be a list", path=doc.path)
        for i, entry in enumerate(entries):
            pod = _pod(entry, f"{PODS_KEY}[{i}]", doc.path)
            key = (pod.workload.namespace, pod.workload.name)
            if key in out:
                raise InputError(
                    f"{PODS_KEY}[{i}]: pod {key[0]}/{key[1]} is listed twice", path=doc.path
                )
            out[key] = pod
    return tuple(out[k] for k in sorted(out))


def _pod(entry: Any, where: str, path: str) -> RunningPod:
    if not isinstance(entry, dict):
        raise InputError(f"{where}: expected a mapping of {', '.join(_ENTRY_KEYS)}", path=path)
    for key in ("namespace", "name", "nodeName"):
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise InputError(f"{where}: {key} must be a non-empty string", path=path)
    namespace, name, node = entry["namespace"], entry["name"], entry["nodeName"]
    problem = (
        dns_label_problem(namespace)
        or object_name_problem(name, strict=True)
        or object_name_problem(node, strict=True)
    )
    if problem:
        raise InputError(f"{where}: {problem}", path=path)
    labels = entry.get("labels", {})
    if not isinstance(labels, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
    ):
        raise InputError(f"{where}: labels must map strings to strings", path=path)
    check_labels(labels, f"{where}.labels", path)
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {},
    }
    obj = KubeObject("v1", "Pod", namespace, name, body, path)
    (workload,) = read_workloads([obj], [])
    return RunningPod(workload, node)
