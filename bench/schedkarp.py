"""The fleet measure on a fleet scaled to zero: NodePools instead of GPU nodes.

A scenario of bench/schedfleet.py with its GPU nodes gone (the CPU and system nodes stay)
and, per zone that had GPUs, a Karpenter NodePool that launches that zone's node type
there, limited to the zone's GPUs: the same capacity, so the same bound (bench/bounds.py),
now added by Karpenter (v1.15.0, its KWOK provider, the KWOK controller: tests/live's
harness) as pods ask for it. topogen reads the NodePools and the instance types (the very
file Karpenter's KWOK provider reads) and plans on what they can add; each plan's native
admission policies run as in bench/schedrun.py, and once Karpenter and the scheduler have
nothing left to do each job is useful, split, partial or pending as there.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests" / "live"))
sys.path.insert(0, str(ROOT / "tests"))

import schedfleet as sf  # noqa: E402
import schedrun as sr  # noqa: E402
from fleet_kit import Client, PodWatch, settle  # noqa: E402
from karpenter_harness import NODECLASS_REF, KarpenterPlane, conditions, start_karpenter  # noqa: E402
from live_harness import ControlPlane  # noqa: E402

__all__ = ["QUICK_SCALED", "SCALED", "ScaledScenario", "measure", "scaled"]

SCALED = [sf.SchedSpec(1, 3, load=1.0), sf.SchedSpec(2, 4, load=1.0), sf.SchedSpec(21, 4, load=1.5)]
QUICK_SCALED = [sf.SchedSpec(1, 3, load=1.0)]
QUIET = 5.0  # seconds without a new NodeClaim or binding: more than Karpenter's 1 s batch
ZONES = [f"zone-{chr(ord('a') + i)}" for i in range(26)]
TYPES_FILE = "instance-types.json"
POOLS_FILE = "nodepools.yaml"


def instance_types() -> list[dict[str, Any]]:
    """The GPU node types of the scenarios (4 and 8 GPUs), offered on demand in every zone,
    the price rising zone by zone (Karpenter's KWOK provider draws among equal prices)."""
    return [
        {
            "name": f"gpu-{n}x.24xlarge",
            "offerings": [
                {
                    "Price": round(n * (1 + i / 10), 2),
                    "Available": True,
                    "Requirements": [
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": ["on-demand"],
                        },
                        {"key": sf.ZONE, "operator": "In", "values": [z]},
                    ],
                }
                for i, z in enumerate(ZONES)
            ],
            "architecture": "amd64",
            "operatingSystems": ["linux"],
            "resources": {"cpu": "96", "memory": "1000Gi", "pods": "110", sf.GPU: str(n)},
        }
        for n in (4, 8)
    ]


@dataclasses.dataclass
class ScaledScenario(sf.Scenario):
    """A scenario whose GPU nodes are NodePools (`pools`)."""

    pools: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def config(
        self, placement: str | None, nodes: str, policies: str, workloads: str
    ) -> dict[str, Any]:
        cfg = super().config(placement, nodes, policies, workloads)
        cluster = cfg["clusters"][0]
        cluster["nodes"] = [nodes, POOLS_FILE]
        cluster["autoscaling"] = {"instanceTypeFiles": [TYPES_FILE]}
        return cfg


def scaled(spec: sf.SchedSpec) -> ScaledScenario:
    """The scenario of `spec` with a NodePool per GPU zone instead of its GPU nodes."""
    sc = sf.generate(spec)
    pools = []
    for z in sc.zones:
        if not z.gpus:
            continue
        per_node = z.gpu_nodes[0]
        requirements = [
            {"key": sf.ZONE, "operator": "In", "values": [z.name]},
            {"key": "node.kubernetes.io/instance-type", "operator": "In",
             "values": [f"gpu-{per_node}x.24xlarge"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        ]  # fmt: skip
        pools.append({
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": f"gpu-{z.name}"},
            "spec": {
                "template": {"spec": {"nodeClassRef": NODECLASS_REF, "requirements": requirements,
                                      "taints": [dict(sf.GPU_TAINT)], "expireAfter": "Never"}},
                "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"},
                "limits": {sf.GPU: str(z.gpus)},
            },
        })  # fmt: skip
    nodes = [n for n in sc.nodes if sf.GPU not in n["status"]["allocatable"]]
    fields = {f.name: getattr(sc, f.name) for f in dataclasses.fields(sf.Scenario)}
    return ScaledScenario(**{**fields, "nodes": nodes}, pools=pools)


def _settled(plane: KarpenterPlane) -> Callable[[ControlPlane, PodWatch], None]:
    """Until Karpenter and the scheduler have nothing left to do: the scheduler settled,
    every NodeClaim initialized, and no NodeClaim or binding for QUIET seconds."""

    def wait(cp: ControlPlane, watch: PodWatch, timeout: float = 1200) -> None:
        end = time.monotonic() + timeout
        last: tuple[int, int] | None = None
        since = time.monotonic()
        while time.monotonic() < end:
            settle(cp, watch, timeout=max(1.0, end - time.monotonic()))
            claims = plane.karpenter.nodeclaims()
            ready = all(conditions(c).get("Initialized") == "True" for c in claims)
            state = (len(claims), sum(1 for p in watch.snapshot().values() if p.node))
            now = time.monotonic()
            if state != last or not ready:
                last, since = state, now
            elif now - since >= QUIET:
                return
            time.sleep(0.2)
        raise TimeoutError(f"Karpenter and the scheduler did not settle within {timeout:g}s")

    return wait


def _zones(plane: KarpenterPlane) -> Callable[[sf.Scenario], dict[str, str]]:
    def zones(sc: sf.Scenario) -> dict[str, str]:
        got = plane.cp.kube().get("/api/v1/nodes")["items"]
        return {n["metadata"]["name"]: n["metadata"]["labels"][sf.ZONE] for n in got}

    return zones


def measure(
    specs: Sequence[sf.SchedSpec], work: Path
) -> list[tuple[ScaledScenario, int, bool, dict[str, sr.PlanRun]]]:
    """Every plan on each scaled-to-zero scenario: (scenario, bound, exact, runs)."""
    types = work / TYPES_FILE
    types.parent.mkdir(parents=True, exist_ok=True)
    types.write_text(json.dumps(instance_types(), indent=1))
    bin_dir = ROOT / ".tools" / "bin"
    cp = sr.start(work / "plane-scaled")
    try:
        plane = start_karpenter(cp, bin_dir / "karpenter-kwok", bin_dir / "kwok",
                                work / "karpenter", types)  # fmt: skip
        try:
            return [_scenario(plane, spec, types, work) for spec in specs]
        finally:
            plane.stop()
    finally:
        cp.stop()


def _scenario(
    plane: KarpenterPlane, spec: sf.SchedSpec, types: Path, work: Path
) -> tuple[ScaledScenario, int, bool, dict[str, sr.PlanRun]]:
    cp = plane.cp
    sc = scaled(spec)
    bound = sr.static_bound(sc)
    runs = {}
    client = Client(cp)
    with PodWatch(cp) as watch:
        for plan in sr.PLANS:
            sr.prepare(cp, sc)
            plane.karpenter.apply_nodepools(sc.pools)
            folder = work / "render" / f"{spec.name}-scaled" / plan
            folder.mkdir(parents=True, exist_ok=True)
            (folder / POOLS_FILE).write_text(yaml.safe_dump_all(sc.pools))
            (folder / TYPES_FILE).write_text(types.read_text())
            began = time.monotonic()
            r = runs[plan] = sr.static_run(
                cp, client, watch, sc, plan, folder.parent, _settled(plane), _zones(plane)
            )
            print(f"fleet: {spec.name} scaled to zero {plan}: useful {r.gpus('useful')} GPUs / "
                  f"bound {bound.gpus}, NodeClaims {len(plane.karpenter.nodeclaims())}, "
                  f"violations {len(r.violations)} ({time.monotonic() - began:.0f}s)",
                  file=sys.stderr, flush=True)  # fmt: skip
            plane.karpenter.clear()
    return sc, bound.gpus, bound.exact, runs
