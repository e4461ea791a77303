"""The zone-split example, copied and edited into the variants the diff goldens cover.

Each builder edits a copy of examples/zone-split in place; a scenario is a pair
(old edits, new edits) applied to two separate copies.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "zone-split"

Edit = Callable[[Path], None]


def copy_example(dest: Path) -> Path:
    shutil.copytree(EXAMPLE, dest)
    return dest


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _dump(path: Path, data: Any) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _edit_config(root: Path, change: Callable[[dict[str, Any]], None]) -> None:
    cfg = _load(root / "topogen.yaml")
    change(cfg)
    _dump(root / "topogen.yaml", cfg)


def _edit_nodes(root: Path, change: Callable[[list[dict[str, Any]]], None]) -> None:
    doc = _load(root / "cluster" / "nodes.yaml")
    change(doc["items"])
    _dump(root / "cluster" / "nodes.yaml", doc)


def unchanged(root: Path) -> None:
    """The example as it is."""


def enforce(root: Path) -> None:
    """validationAction: Enforce for the whole config."""
    _edit_config(root, lambda c: c.__setitem__("validationAction", "Enforce"))


def gpu_taint_changed(root: Path) -> None:
    """The GPU nodes' taint value changes from `present` to `dedicated`."""

    def change(items: list[dict[str, Any]]) -> None:
        for n in items:
            for t in n.get("spec", {}).get("taints", []):
                if t["key"] == "nvidia.com/gpu":
                    t["value"] = "dedicated"

    _edit_nodes(root, change)


def gpu_capacity_dropped(root: Path) -> None:
    """gpu-a2 loses its GPUs: zone-a keeps 2, the group needs 4."""

    def change(items: list[dict[str, Any]]) -> None:
        for n in items:
            if n["metadata"]["name"] == "gpu-a2":
                n["status"]["allocatable"]["nvidia.com/gpu"] = "0"

    _edit_nodes(root, change)


PERMISSIVE_POLICY = {
    "apiVersion": "cilium.io/v2",
    "kind": "CiliumNetworkPolicy",
    "metadata": {"name": "allow-namespace", "namespace": "ml-demo"},
    "spec": {
        "endpointSelector": {},
        "ingress": [{"fromEndpoints": [{}]}],
        "egress": [{"toEndpoints": [{}]}],
    },
}


def permissive_network(root: Path) -> None:
    """Before the zone policies: one policy that allows every pod of the namespace."""
    for f in (root / "cilium").iterdir():
        f.unlink()
    _dump(root / "cilium" / "allow-namespace.yaml", PERMISSIVE_POLICY)


REGION = "topology.kubernetes.io/region"


def _regions(items: list[dict[str, Any]]) -> None:
    for n in items:
        zone = n["metadata"]["labels"]["topology.kubernetes.io/zone"]
        n["metadata"]["labels"][REGION] = "west" if zone == "zone-b" else "east"


def domains(root: Path) -> None:
    """Co-locate by a domain label (region): region east holds zone-a."""
    _edit_nodes(root, _regions)

    def change(cfg: dict[str, Any]) -> None:
        cfg["clusters"][0]["domainLabel"] = REGION
        cfg["groups"][0]["colocate"] = "domain"

    _edit_config(root, change)


def zone_added(root: Path) -> None:
    """Region east grows by zone-c (two more GPU nodes); zone-a and zone-c may talk."""
    domains(root)

    def change(items: list[dict[str, Any]]) -> None:
        for src in [n for n in items if n["metadata"]["name"].startswith("gpu-a")]:
            copy = yaml.safe_load(yaml.safe_dump(src))
            name = src["metadata"]["name"].replace("gpu-a", "gpu-c")
            copy["metadata"]["name"] = name
            copy["metadata"]["labels"]["kubernetes.io/hostname"] = name
            copy["metadata"]["labels"]["topology.kubernetes.io/zone"] = "zone-c"
            items.append(copy)

    _edit_nodes(root, change)
    path = root / "cilium" / "zone-policies.yaml"
    docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    east = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["zone-a", "zone-c"]}]}
    docs[0]["metadata"]["name"] = "allow-intra-east"
    docs[0]["spec"]["endpointSelector"] = east
    docs[0]["spec"]["ingress"][0]["fromEndpoints"] = [east]
    docs[0]["spec"]["egress"][0]["toEndpoints"] = [east]
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")


# name -> (old edits, new edits, what the change is)
SCENARIOS: dict[str, tuple[Edit, Edit, str]] = {
    "zone-added": (domains, zone_added, "a zone joins the group's domain"),
    "gpu-taint-changed": (unchanged, gpu_taint_changed, "the GPU taint value changes"),
    "network-tightened": (permissive_network, unchanged, "zone policies replace an allow-all"),
    "gpu-capacity-dropped": (unchanged, gpu_capacity_dropped, "zone-a loses two GPUs"),
    "validation-enforce": (unchanged, enforce, "validation switches to Enforce"),
}


def build(root: Path, edit: Edit) -> Path:
    copy_example(root)
    edit(root)
    return root
