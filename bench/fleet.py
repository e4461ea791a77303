"""Deterministic synthetic GPU fleets for the benchmark (issue 9).

    .venv/bin/python bench/fleet.py --size large --out bench/.fleets/large [--seed 1]
    .venv/bin/python bench/fleet.py --nodes 2500 --zones 60 --policies 2000 --jobs 1000 --out DIR

A fleet is one cluster: nodes in node pools across zones (grouped in regions of three),
with the labels a real EKS + NVIDIA GPU operator node carries, GPU taints, a few cordoned
or degraded nodes; Cilium and Kubernetes network policies mixing endpoint, entity, CIDR,
FQDN, deny and host (nodeSelector) rules, including zone-keyed training isolation; and
training jobs of every profile (custom Jobs, PyTorchJob, MPIJob, JobSet, Volcano Job,
TrainJob), one config group per training namespace.

Every input is written twice, so both source paths are measured:

    DIR/snapshot/  topogen.yaml, cluster.yaml (a TopogenSnapshot: minimal Nodes, Namespaces
                   and policies, as `topogen snapshot` writes), workloads.yaml (manifests
                   as a GitOps repository holds them)
    DIR/kubectl/   topogen.yaml, nodes.yaml, namespaces.yaml, ciliumnetworkpolicies.yaml,
                   ciliumclusterwidenetworkpolicies.yaml, networkpolicies.yaml,
                   workloads.yaml (`kubectl get -o yaml` lists: managedFields, status,
                   last-applied annotations and the rest of the noise)

The same seed gives byte-identical files: one random.Random, sorted keys, no clock.
The parts: fleet_base.py (labels, pools, the spec, teams, the API server's metadata),
fleet_nodes.py, fleet_policies.py, fleet_workloads.py.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from fleet_base import (
    REGION,
    SIZES,
    ZONE,
    FleetSpec,
    add_noise,
    make_teams,
    namespace_object,
    zone_names,
)
from fleet_nodes import make_nodes
from fleet_policies import make_policies
from fleet_workloads import add_workload_noise, make_workloads

from topogen.sources.live import json_yaml

__all__ = ["SIZES", "FleetSpec", "generate", "main", "write_fleet"]

HERE = Path(__file__).resolve().parent
# the generator's modules: this one, and the parts it draws the fleet with
PARTS = ("fleet.py", "fleet_base.py", "fleet_nodes.py", "fleet_policies.py", "fleet_workloads.py")


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Plain YAML: no anchors or aliases for objects the generator happens to share."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


@dataclass
class Fleet:
    """Everything generated, as plain Kubernetes objects (full, kubectl-like bodies)."""

    spec: FleetSpec
    zones: list[str]
    nodes: list[dict[str, Any]] = field(default_factory=list)
    namespaces: list[dict[str, Any]] = field(default_factory=list)
    policies: list[dict[str, Any]] = field(default_factory=list)
    workloads: list[dict[str, Any]] = field(default_factory=list)
    groups: list[dict[str, Any]] = field(default_factory=list)


# --- the fleet ---------------------------------------------------------------------------


def generate(spec: FleetSpec) -> Fleet:
    rng = random.Random(spec.seed)
    zones = zone_names(spec.zones)
    fleet = Fleet(spec, zones)
    fleet.nodes = make_nodes(rng, spec, zones)
    teams = make_teams(rng, spec, zones)
    fleet.groups = [t.group for t in teams]
    fleet.policies, apps = make_policies(rng, spec, teams, zones)
    fleet.workloads = make_workloads(rng, spec, teams, zones)
    nss = [("kube-system", {}), ("monitoring", {}), ("sandbox", {"team": "t0"})]
    nss += [(t.namespace, {"team": f"ml-{i % 5}", "purpose": "training"})
            for i, t in enumerate(teams)]  # fmt: skip
    nss += [(a, {"team": f"t{i % 5}"}) for i, a in enumerate(apps)]
    fleet.namespaces = [namespace_object(n, labels) for n, labels in nss]
    for body in fleet.workloads:
        add_workload_noise(rng, body)
    for body in fleet.policies + fleet.namespaces:
        add_noise(rng, body, "kubectl-client-side-apply")
    return fleet


# --- writing -------------------------------------------------------------------------------


_POLICY_API = {
    "CiliumNetworkPolicy": "ciliumnetworkpolicies",
    "CiliumClusterwideNetworkPolicy": "ciliumclusterwidenetworkpolicies",
    "NetworkPolicy": "networkpolicies",
}


def _dump(doc: Any) -> str:
    return str(yaml.dump(doc, Dumper=_Dumper, sort_keys=True, default_flow_style=False,
                         allow_unicode=True, width=120))  # fmt: skip


def _dump_all(docs: list[Any]) -> str:
    return "".join("---\n" + _dump(d) for d in docs)


def _list(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "items": items, "kind": "List",
            "metadata": {"resourceVersion": ""}}  # fmt: skip


def _minimal(body: dict[str, Any]) -> dict[str, Any]:
    """What `topogen snapshot` keeps of an object (sources/live.py: minimal)."""
    meta = body["metadata"]
    out_meta: dict[str, Any] = {"name": meta["name"]}
    if "namespace" in meta:
        out_meta["namespace"] = meta["namespace"]
    kind = body["kind"]
    if kind in ("Node", "Namespace") and meta.get("labels"):
        out_meta["labels"] = dict(meta["labels"])
    out: dict[str, Any] = {"apiVersion": body["apiVersion"], "kind": kind, "metadata": out_meta}
    if kind == "Node":
        spec = body.get("spec") or {}
        node_spec: dict[str, Any] = {}
        taints = [{k: t[k] for k in ("key", "value", "effect") if t.get(k)}
                  for t in spec.get("taints") or ()]  # fmt: skip
        if taints:
            node_spec["taints"] = taints
        if spec.get("unschedulable"):
            node_spec["unschedulable"] = True
        if spec.get("podCIDRs"):
            node_spec["podCIDRs"] = list(spec["podCIDRs"])
        if node_spec:
            out["spec"] = node_spec
        out["status"] = {"allocatable": dict(body["status"]["allocatable"])}
    elif kind != "Namespace":
        for key in ("spec", "specs"):
            if key in body:
                out[key] = body[key]
    return out


def _manifest(body: dict[str, Any]) -> dict[str, Any]:
    """A workload as a GitOps repository holds it (no status, no server-side metadata)."""
    meta = {
        k: body["metadata"][k] for k in ("name", "namespace", "labels") if k in body["metadata"]
    }
    return {**{k: v for k, v in body.items() if k not in ("status", "metadata")}, "metadata": meta}


def _config(fleet: Fleet, nodes: list[str], policies: list[str], namespaces: list[str]) -> str:
    cluster: dict[str, Any] = {
        "name": "fleet",
        "nodes": nodes,
        "networkPolicies": policies,
        "namespaces": namespaces,
        "domainLabel": REGION,
        "gpuNodeSelector": {"gpu": "true"},
        # the agent the policies are written for: host firewall (the GPU hosts' CCNPs),
        # fromNodes, and the zone label kept in identities (so `labels` lists every key
        # the policies select on)
        "cilium": {
            "hostFirewall": True,
            "nodeSelectorLabels": True,
            "identityLabels": [
                f"k8s:{ZONE}",
                "k8s:app.kubernetes.io",
                "k8s:jobset.sigs.k8s.io",
                "k8s:k8s-app",
                "k8s:ml.example.com",
                "k8s:node-pool",
                "k8s:team",
                "k8s:tier",
                "k8s:training.kubeflow.org",
                "k8s:volcano.sh",
            ],
        },
    }
    cfg = {
        "apiVersion": "topogen.io/v1alpha1",
        "kind": "TopogenConfig",
        "clusters": [cluster],
        "workloads": ["workloads.yaml"],
        "groups": fleet.groups,
        "engines": ["kyverno"],
        "validationAction": "Audit",
    }
    s = fleet.spec
    head = (
        f"# synthetic fleet {s.name}: {s.nodes} nodes, {s.zones} zones, {s.policies} policies, "
        f"{s.jobs} jobs, seed {s.seed} (bench/fleet.py)\n"
    )
    return head + _dump(cfg)


def fleet_files(fleet: Fleet) -> dict[str, str]:
    """{relative path: text} of both variants."""
    snap = sorted(
        (_minimal(b) for b in fleet.nodes + fleet.namespaces + fleet.policies),
        key=lambda o: (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]),
    )
    snapshot = {"apiVersion": "topogen.io/v1alpha1", "kind": "TopogenSnapshot", "items": snap}
    files = {
        "snapshot/topogen.yaml": _config(fleet, ["cluster.yaml"], [], []),
        # as `topogen snapshot` writes it: JSON, which is YAML
        "snapshot/cluster.yaml": "# topogen snapshot (synthetic)\n" + json_yaml(snapshot),
        "snapshot/workloads.yaml": _dump_all([_manifest(w) for w in fleet.workloads]),
    }
    by_kind: dict[str, list[dict[str, Any]]] = {k: [] for k in _POLICY_API}
    for p in fleet.policies:
        by_kind[p["kind"]].append(p)
    policy_files = [f"{_POLICY_API[k]}.yaml" for k in _POLICY_API]
    files["kubectl/topogen.yaml"] = _config(fleet, ["nodes.yaml"], policy_files,
                                            ["namespaces.yaml"])  # fmt: skip
    files["kubectl/nodes.yaml"] = _dump(_list(fleet.nodes))
    files["kubectl/namespaces.yaml"] = _dump(_list(fleet.namespaces))
    for kind, items in by_kind.items():
        files[f"kubectl/{_POLICY_API[kind]}.yaml"] = _dump(_list(items))
    files["kubectl/workloads.yaml"] = _dump(_list(fleet.workloads))
    return files


def write_fleet(spec: FleetSpec, out: Path) -> dict[str, str]:
    """Write both variants under `out`; returns {relative path: sha256} (also in MANIFEST)."""
    files = fleet_files(generate(spec))
    digests = {}
    for rel, text in sorted(files.items()):
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        path.write_bytes(data)
        digests[rel] = hashlib.sha256(data).hexdigest()
    manifest = "".join(f"{d}  {rel}\n" for rel, d in sorted(digests.items()))
    (out / "MANIFEST").write_text(manifest, encoding="utf-8")
    return digests


def generator_digest() -> str:
    """Changes whenever this generator does (the benchmark's fleet cache key)."""
    h = hashlib.sha256()
    for part in PARTS:
        h.update((HERE / part).read_bytes())
    h.update(inspect.getsource(json_yaml).encode())  # the snapshot writer it shares
    return h.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), help="a preset (default: large)")
    ap.add_argument("--nodes", type=int)
    ap.add_argument("--zones", type=int)
    ap.add_argument("--policies", type=int)
    ap.add_argument("--jobs", type=int)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    base = SIZES[args.size or "large"]
    spec = FleetSpec(
        args.size or "custom",
        args.nodes or base.nodes,
        args.zones or base.zones,
        args.policies or base.policies,
        args.jobs or base.jobs,
        args.seed,
    )
    digests = write_fleet(spec, args.out)
    print(f"wrote {len(digests)} files under {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
