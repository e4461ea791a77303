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
from topogen.operators.registry import detected_kinds
from topogen.sources.yamlio import expand_paths, load_yaml_text

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
    if str(doc.get("kind", "")).endswith("List") and isinstance(items, list):
        for item in items:
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
    for f in _files(root):
        rel = PurePosixPath(f.relative_to(root).as_posix()).as_posix()
        try:
            docs = load_yaml_text(f.read_text(encoding="utf-8"), rel)
        except (InputError, OSError, UnicodeDecodeError) as exc:
            found.skipped.append(f"{rel}: {exc}")
            continue
        for obj in (o for d in docs for o in _objects(d)):
            key = (_group(obj.get("apiVersion")), str(obj.get("kind", "")))
            version = str(obj.get("apiVersion") or "").rpartition("/")[2]
            profile = OPERATORS.get((key[0], version, key[1])) or OPERATORS.get(
                (key[0], "", key[1])
            )
            if profile is not None:
                meta = obj.get("metadata")
                ns = (meta.get("namespace") if isinstance(meta, dict) else None) or (
                    _kustomize_namespace(f, root) or "default"
                )
                found.profiles.setdefault(profile, set()).add(str(ns))
                found.kinds.setdefault(profile, set()).add(key[1])
                found.workload_files.add(rel)
            elif key in _WORKLOAD_INPUTS:
                found.workload_files.add(rel)
            elif key in _POLICY_KINDS:
                found.policy_files.add(rel)
                found.topology_keys.update(k for k in _pod_selector_keys(obj) if _topology(k))
                found.host_policies |= _has_key(obj, "nodeSelector")
                found.node_peers |= _has_key(obj, "fromNodes") or _has_key(obj, "toNodes")
            elif key in _NODE_KINDS:
                found.node_files.add(rel)
    return found


_TOPOLOGY_PREFIXES = ("topology.kubernetes.io/", "failure-domain.beta.kubernetes.io/")
# where a policy selects pods: Cilium's endpoint selectors, NetworkPolicy pod selectors
_POD_SELECTORS = ("endpointSelector", "fromEndpoints", "toEndpoints", "podSelector")


def _topology(key: str) -> bool:
    return normalise_key(key).startswith(_TOPOLOGY_PREFIXES)


def _pod_selector_keys(obj: Any) -> Iterator[str]:
    """Label keys of every pod selector in a policy object (node selectors left out)."""
    if isinstance(obj, list):
        for item in obj:
            yield from _pod_selector_keys(item)
        return
    if not isinstance(obj, dict):
        return
    for k, v in obj.items():
        if k in _POD_SELECTORS:
            for sel in v if isinstance(v, list) else [v]:
                yield from _keys_of(sel)
        elif k not in ("nodeSelector", "fromNodes", "toNodes"):
            yield from _pod_selector_keys(v)


def _has_key(obj: Any, key: str) -> bool:
    if isinstance(obj, list):
        return any(_has_key(i, key) for i in obj)
    return isinstance(obj, dict) and (key in obj or any(_has_key(v, key) for v in obj.values()))


def _keys_of(sel: Any) -> Iterator[str]:
    if not isinstance(sel, dict):
        return
    labels = sel.get("matchLabels")
    if isinstance(labels, dict):
        yield from (normalise_key(str(k)) for k in labels)
    for e in sel.get("matchExpressions") or []:
        if isinstance(e, dict) and isinstance(e.get("key"), str):
            yield normalise_key(e["key"])


def _j(value: Any) -> str:
    """A YAML flow value (JSON is valid YAML): values never become YAML syntax."""
    return json.dumps(value, ensure_ascii=False)


def config_text(found: Found, cluster: str) -> str:
    nodes = sorted(found.node_files) or [NODES_FILE]
    lines = [
        "# topogen.yaml, scaffolded by `topogen init` from this repository's manifests.",
        "# Check every value, then run `topogen analyze` and `topogen render`.",
        "apiVersion: topogen.io/v1alpha1",
        "kind: TopogenConfig",
        "clusters:",
        f"  - name: {_j(cluster)}",
    ]
    if not found.node_files:
        lines.append(f"    # the cluster's nodes: kubectl get nodes -o yaml > {NODES_FILE}")
    lines += [
        f"    nodes: {_j(nodes)}",
        f"    networkPolicies: {_j(sorted(found.policy_files))}",
        "    zoneLabel: topology.kubernetes.io/zone",
        *_agent_lines(found),
        "# the training manifests found here",
        f"workloads: {_j(sorted(found.workload_files))}",
        "groups:",
    ]
    identity = _identity_lines(found)
    for profile in sorted(found.profiles):
        kinds = ", ".join(sorted(found.kinds[profile]))
        lines += [
            f"  # {kinds} ({profile})",
            f"  - name: {_j(profile)}",
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
    """identityLabel when the policies select pods on a node topology label: the label
    the pods get at binding (PodTopologyLabels), which the verdicts then follow."""
    if not found.topology_keys:
        return []
    keys = sorted(found.topology_keys)
    key = "topology.kubernetes.io/zone" if "topology.kubernetes.io/zone" in keys else keys[0]
    return [
        f"    # the policies select pods on {', '.join(keys)}: stamped from the node at",
        "    # binding. Cilium keeps it in identities only where the agent's `labels` option",
        "    # lists it: say so under clusters[].cilium.identityLabels.",
        f"    identityLabel: {_j(key)}",
    ]


def init_repository(root: Path, cluster: str = "default", force: bool = False) -> InitResult:
    """Write topogen.yaml (and the node snapshot folder) into the repository at `root`."""
    config = root / CONFIG_NAME
    if config.exists() and not force:
        raise InputError(
            "topogen.yaml already exists", path=str(config), hint="pass --force to overwrite it"
        )
    found = detect(root)
    text = config_text(found, cluster)
    parse_config(load_yaml_text(text, CONFIG_NAME)[0], CONFIG_NAME, root)  # valid, or a bug
    written = [CONFIG_NAME]
    try:
        config.write_text(text, encoding="utf-8", newline="\n")
        if not found.node_files:
            (root / NODES_FILE).parent.mkdir(parents=True, exist_ok=True)
            written.append(str(PurePosixPath(NODES_FILE).parent) + "/")
    except OSError as exc:
        raise InputError(f"cannot write: {exc}", path=str(root)) from None
    return InitResult(config, tuple(written), found)
