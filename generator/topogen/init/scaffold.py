"""`topogen init`: a topogen.yaml for an existing GitOps repository, from what is in it.

Finds the training operators' objects (and their namespaces), the network
policies and any node snapshot among the repository's manifests, and writes a
topogen.yaml naming them, plus the folder for the node snapshot. The core never
prints: it returns what it found and wrote.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from topogen.cilium.identity import normalise_key
from topogen.config import parse_config
from topogen.errors import InputError
from topogen.init.schema import SCHEMA_FILE, schema_text
from topogen.init.suggest import (
    KUSTOMIZATION_HEADER,
    covering_folders,
    group_names,
    workload_kustomization,
)
from topogen.operators.registry import detected_kinds
from topogen.sources.objects import typed_item
from topogen.sources.yamlio import expand_paths
from topogen.yamltext import load_yaml_text

__all__ = ["CONFIG_NAME", "OPERATORS", "Found", "InitResult", "detect", "init_repository"]

CONFIG_NAME = "topogen.yaml"
NODES_FILE = "cluster/nodes.yaml"
# (API group, version or "" for every version, kind) -> the profile of its operator
OPERATORS: dict[tuple[str, str, str], str] = detected_kinds()
# objects that are no workload but shape one (a TrainJob's runtime): read with them
_WORKLOAD_INPUTS = {
    ("trainer.kubeflow.org", "TrainingRuntime"),
    ("trainer.kubeflow.org", "ClusterTrainingRuntime"),
}
_POLICY_KINDS = {
    ("cilium.io", "CiliumNetworkPolicy"),
    ("cilium.io", "CiliumClusterwideNetworkPolicy"),
    ("networking.k8s.io", "NetworkPolicy"),
}
_NODE_KINDS = {("", "Node"), ("topogen.io", "TopogenSnapshot")}
# topogen's own output: never scanned
_GENERATED = {"policies", "kustomize", "monitoring"}


@dataclass
class Found:
    """What the repository's manifests hold."""

    profiles: dict[str, set[str]] = field(default_factory=dict)  # profile -> namespaces
    kinds: dict[str, set[str]] = field(default_factory=dict)  # profile -> kinds seen
    workload_files: set[str] = field(default_factory=set)
    policy_files: set[str] = field(default_factory=set)
    node_files: set[str] = field(default_factory=set)
    skipped: list[str] = field(default_factory=list)  # files that are not parseable YAML
    # node topology label keys the policies select pods on (an identity stamped at binding)
    topology_keys: set[str] = field(default_factory=set)
    host_policies: bool = False  # a CCNP nodeSelector: written for the host firewall
    node_peers: bool = False  # fromNodes/toNodes: written for node-selector labels
    jobs: dict[str, set[tuple[str, str]]] = field(default_factory=dict)  # profile -> (ns, name)
    object_files: set[str] = field(default_factory=set)  # files holding Kubernetes objects
    kustomized: set[str] = field(default_factory=set)  # folders with a kustomization file
    # pod-selector label keys of the policies, with the values they select
    selector_values: dict[str, set[str]] = field(default_factory=dict)
    template_keys: set[str] = field(default_factory=set)  # label keys the manifests set
    zone_values: set[str] = field(default_factory=set)  # zones of the nodes found
    unreadable: set[str] = field(default_factory=set)  # files that do not parse (skipped)


@dataclass(frozen=True)
class InitResult:
    config: Path
    written: tuple[str, ...]  # relative posix paths
    found: Found


def _group(api_version: Any) -> str:
    text = str(api_version or "")
    return text.rpartition("/")[0] if "/" in text else ""


def _objects(doc: Any) -> Iterator[dict[str, Any]]:
    if not isinstance(doc, dict):
        return
    items = doc.get("items")
    kind = str(doc.get("kind", ""))
    if kind.endswith("List") and isinstance(items, list):
        item_kind = kind.removesuffix("List")  # a typed list's items may name none
        for item in items:
            if item_kind and isinstance(item, dict):
                item = dict(typed_item(item, item_kind, doc.get("apiVersion")))
            yield from _objects(item)
    else:
        yield doc


def _kustomize_namespace(file: Path, root: Path) -> str | None:
    """The `namespace:` of the nearest kustomization.yaml above `file` (within root)."""
    folder = file.parent
    while True:
        for name in ("kustomization.yaml", "kustomization.yml", "Kustomization"):
            k = folder / name
            if k.is_file():
                try:
                    docs = load_yaml_text(k.read_text(encoding="utf-8"), str(k))
                except (InputError, OSError, UnicodeDecodeError):
                    docs = []
                ns = docs[0].get("namespace") if docs and isinstance(docs[0], dict) else None
                if isinstance(ns, str) and ns:
                    return ns
        if folder == root or root not in folder.parents:
            return None
        folder = folder.parent


def _files(root: Path) -> Iterable[Path]:
    for f in expand_paths([root]):
        rel = f.relative_to(root)
        if rel.parts[0] in _GENERATED or f.name == CONFIG_NAME or f.suffix == ".json":
            continue
        yield f


def detect(root: Path) -> Found:
    """Scan every YAML file under `root` (hidden folders and topogen's output excluded)."""
    found = Found()
    found.kustomized = _kustomized_folders(root)
    for f in _files(root):
        rel = PurePosixPath(f.relative_to(root).as_posix()).as_posix()
        try:
            docs = load_yaml_text(f.read_text(encoding="utf-8"), rel)
        except (InputError, OSError, UnicodeDecodeError) as exc:
            found.skipped.append(f"{rel}: {exc}")
            found.unreadable.add(rel)
            continue
        for obj in (o for d in docs for o in _objects(d)):
            _note(found, obj, rel, f, root)
    return found


_KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def _kustomized_folders(root: Path) -> set[str]:
    """Folders (relative, posix) that kustomize builds: they hold a kustomization file."""
    out = set()
    for name in _KUSTOMIZATIONS:
        for k in root.rglob(name):
            rel = k.parent.relative_to(root)
            if not any(p.startswith(".") for p in rel.parts) and (
                not rel.parts or rel.parts[0] not in _GENERATED
            ):
                out.add(rel.as_posix())
    return out


def _note(found: Found, obj: dict[str, Any], rel: str, f: Path, root: Path) -> None:
    """What one object of file `rel` tells init."""
    key = (_group(obj.get("apiVersion")), str(obj.get("kind", "")))
    if obj.get("apiVersion") and key[1] and key[1] not in ("Kustomization", "Component"):
        found.object_files.add(rel)
    found.template_keys.update(_template_label_keys(obj))
    version = str(obj.get("apiVersion") or "").rpartition("/")[2]
    profile = OPERATORS.get((key[0], version, key[1])) or OPERATORS.get((key[0], "", key[1]))
    if profile is not None:
        meta = obj.get("metadata")
        ns = (meta.get("namespace") if isinstance(meta, dict) else None) or (
            _kustomize_namespace(f, root) or "default"
        )
        name = meta.get("name") if isinstance(meta, dict) else None
        found.profiles.setdefault(profile, set()).add(str(ns))
        found.kinds.setdefault(profile, set()).add(key[1])
        found.jobs.setdefault(profile, set()).add((str(ns), str(name or key[1].lower())))
        found.workload_files.add(rel)
    elif key in _WORKLOAD_INPUTS:
        found.workload_files.add(rel)
    elif key in _POLICY_KINDS:
        found.policy_files.add(rel)
        for k, values in _pod_selector_values(obj):
            found.selector_values.setdefault(k, set()).update(values)
        found.topology_keys.update(k for k, _ in _pod_selector_values(obj) if _topology(k))
        found.host_policies |= _has_key(obj, "nodeSelector")
        found.node_peers |= _has_key(obj, "fromNodes") or _has_key(obj, "toNodes")
    elif key in _NODE_KINDS:
        found.node_files.add(rel)
        found.zone_values.update(_zones(obj))


def _template_label_keys(obj: Any) -> set[str]:
    """Label keys set anywhere under `metadata.labels` of the manifest (its pod templates)."""
    keys: set[str] = set()
    stack = [obj]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            labels = node.get("labels")
            if isinstance(labels, dict):
                keys.update(normalise_key(str(k)) for k in labels)
            stack.extend(v for v in node.values() if isinstance(v, dict | list))
    return keys


def _zones(obj: Any) -> set[str]:
    """Values of the usual zone labels on a Node (or a snapshot's nodes)."""
    out: set[str] = set()
    for item in _objects(obj) if isinstance(obj, dict) else []:
        labels = (item.get("metadata") or {}).get("labels") or {}
        for k in ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"):
            if isinstance(labels, dict) and isinstance(labels.get(k), str):
                out.add(labels[k])
    return out


_TOPOLOGY_PREFIXES = ("topology.kubernetes.io/", "failure-domain.beta.kubernetes.io/")
# where a policy selects pods: Cilium's endpoint selectors, NetworkPolicy pod selectors
_POD_SELECTORS = ("endpointSelector", "fromEndpoints", "toEndpoints", "podSelector")


def _topology(key: str) -> bool:
    return normalise_key(key).startswith(_TOPOLOGY_PREFIXES)


def _pod_selector_values(obj: Any) -> Iterator[tuple[str, set[str]]]:
    """(label key, values selected) of every pod selector in a policy object (node
    selectors left out)."""
    if isinstance(obj, list):
        for item in obj:
            yield from _pod_selector_values(item)
        return
    if not isinstance(obj, dict):
        return
    for k, v in obj.items():
        if k in _POD_SELECTORS:
            for sel in v if isinstance(v, list) else [v]:
                yield from _keys_of(sel)
        elif k not in ("nodeSelector", "fromNodes", "toNodes"):
            yield from _pod_selector_values(v)


def _has_key(obj: Any, key: str) -> bool:
    if isinstance(obj, list):
        return any(_has_key(i, key) for i in obj)
    return isinstance(obj, dict) and (key in obj or any(_has_key(v, key) for v in obj.values()))


def _keys_of(sel: Any) -> Iterator[tuple[str, set[str]]]:
    if not isinstance(sel, dict):
        return
    labels = sel.get("matchLabels")
    if isinstance(labels, dict):
        yield from ((normalise_key(str(k)), {str(v)}) for k, v in labels.items())
    for e in sel.get("matchExpressions") or []:
        if isinstance(e, dict) and isinstance(e.get("key"), str):
            values: list[Any] = e["values"] if isinstance(e.get("values"), list) else []
            yield normalise_key(e["key"]), {str(v) for v in values}


def _j(value: Any) -> str:
    """A YAML flow value (JSON is valid YAML): values never become YAML syntax."""
    return json.dumps(value, ensure_ascii=False)


def config_text(found: Found, cluster: str) -> str:
    nodes = sorted(found.node_files) or [NODES_FILE]
    avoid = found.unreadable
    lines = [
        f"# yaml-language-server: $schema={SCHEMA_FILE}",
        "# topogen.yaml, scaffolded by `topogen init` from this repository's manifests.",
        "# Check every value, then run `topogen analyze` and `topogen render`. Folders are read",
        "# with everything below them: manifests added there later are read too.",
        "apiVersion: topogen.io/v1alpha1",
        "kind: TopogenConfig",
        "clusters:",
        f"  - name: {_j(cluster)}",
    ]
    if not found.node_files:
        lines.append(f"    # the cluster's nodes: kubectl get nodes -o yaml > {NODES_FILE}")
    lines += [
        f"    nodes: {_j(nodes)}",
        f"    networkPolicies: {_j(covering_folders(found.policy_files, avoid))}",
        "    zoneLabel: topology.kubernetes.io/zone",
        *_agent_lines(found),
        "# the training manifests found here",
        f"workloads: {_j(workload_entries(found))}",
        "groups:",
    ]
    identity = _identity_lines(found)
    names = group_names(found.jobs)
    for profile in sorted(found.profiles):
        kinds = ", ".join(sorted(found.kinds[profile]))
        lines += [
            f"  # {kinds} ({profile})",
            f"  - name: {_j(names[profile])}",
            f"    profile: {_j(profile)}",
            f"    namespaces: {_j(sorted(found.profiles[profile]))}",
            *identity,
        ]
    if not found.profiles:
        lines += [
            "  # No training operator's objects were found: describe your training pods.",
            "  # The job's pods share a group label; a role label tells the coordinator",
            "  # (rank 0) from the workers.",
            "  - name: training",
            "    profile: custom",
            "    namespaces: [default]",
            "    groupLabel: app",
            "    roleLabel: role",
            "    coordinatorRoles: [coordinator]",
            "    workerRoles: [worker]",
            *identity,
        ]
    return "\n".join(lines) + "\n"


def workload_entries(found: Found) -> list[str]:
    return covering_folders(found.workload_files, found.unreadable)


def _agent_lines(found: Found) -> list[str]:
    """The cilium-agent options the policies found are written for (check them)."""
    if not (found.host_policies or found.node_peers):
        return []
    lines = [
        "    # the agent these policies are written for: check it has these options",
        "    cilium:",
    ]
    if found.host_policies:
        lines.append("      hostFirewall: true        # host policies (nodeSelector) apply")
    if found.node_peers:
        lines.append("      nodeSelectorLabels: true  # fromNodes/toNodes are accepted")
    return lines


def _identity_lines(found: Found) -> list[str]:
    """identityLabel from the policies: a node topology label they select pods on (the
    label the pods get at binding, PodTopologyLabels), else a label they select pods on
    that no manifest sets and whose values are the nodes' zones (or, without nodes, whose
    name says zone): stamped at binding by a webhook. The verdicts then follow it."""
    if found.topology_keys:
        keys = sorted(found.topology_keys)
        key = "topology.kubernetes.io/zone" if "topology.kubernetes.io/zone" in keys else keys[0]
        return [
            f"    # the policies select pods on {', '.join(keys)}: stamped from the node at",
            "    # binding. Cilium keeps it in identities only where the agent's `labels` option",
            "    # lists it: say so under clusters[].cilium.identityLabels.",
            f"    identityLabel: {_j(key)}",
        ]
    stamped = {
        k: v
        for k, v in found.selector_values.items()
        if k not in found.template_keys and "/" not in k and not k.startswith("io.")
    }
    by_zone = sorted(k for k, v in stamped.items() if v & found.zone_values)
    by_name = sorted(k for k in stamped if "zone" in k)
    if not (by_zone or by_name):
        return []
    key = (by_zone or by_name)[0]
    why = "the nodes' zones" if by_zone else "zones, by its name"
    return [
        f"    # the policies select pods on {key}, which no manifest sets and whose values are",
        f"    # {why}: an identity stamped from the node at binding (check it)",
        f"    identityLabel: {_j(key)}",
    ]


def init_repository(root: Path, cluster: str = "default", force: bool = False) -> InitResult:
    """Write topogen.yaml, its schema, a kustomization for each workload folder without one
    and the node snapshot folder into the repository at `root`. Files of anyone else are
    never overwritten (topogen.yaml only with `force`)."""
    config = root / CONFIG_NAME
    if config.exists() and not force:
        raise InputError("already exists", path=str(config), hint="pass --force to overwrite it")
    found = detect(root)
    text = config_text(found, cluster)
    parse_config(load_yaml_text(text, CONFIG_NAME)[0], CONFIG_NAME, root)  # valid, or a bug
    files = {CONFIG_NAME: text, **_kustomizations(found, root)}
    schema = root / SCHEMA_FILE
    if not schema.exists() or _ours(schema, '"title": "topogen.yaml"'):
        files[SCHEMA_FILE] = schema_text()
    written = []
    try:
        for rel, body in files.items():
            (root / rel).write_text(body, encoding="utf-8", newline="\n")
            written.append(rel)
        if not found.node_files:
            (root / NODES_FILE).parent.mkdir(parents=True, exist_ok=True)
            written.append(str(PurePosixPath(NODES_FILE).parent) + "/")
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", path=str(root)) from None
    return InitResult(config, tuple(written), found)


def _kustomizations(found: Found, root: Path) -> dict[str, str]:
    """A kustomization.yaml for each workload folder that has none (or has one init wrote)."""
    out: dict[str, str] = {}
    manifests = found.object_files - found.node_files
    for entry in workload_entries(found):
        folder = entry.rstrip("/")
        if not entry.endswith("/"):
            continue
        path = root / folder / "kustomization.yaml"
        if folder in found.kustomized and not _ours(path, KUSTOMIZATION_HEADER):
            continue
        inside = [f for f in manifests if f.startswith(entry)]
        kustomized = {k for k in found.kustomized if k != folder}
        out[f"{folder}/kustomization.yaml"] = workload_kustomization(entry, inside, kustomized)
    return out


def _ours(path: Path, marker: str) -> bool:
    try:
        return marker in path.read_text(encoding="utf-8")[:2000]
    except (OSError, UnicodeDecodeError):
        return False
