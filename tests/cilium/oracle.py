"""Driver for tools/cilium-oracle: Cilium's own policy engine, one batch per run.

A scenario is plain data (see tools/cilium-oracle/protocol.go): agent options,
namespaces, services, nodes, policy objects as Kubernetes would store them,
endpoints and probes. `run` sends a batch and returns one result per scenario:
the policies Cilium accepted or rejected (with its error), each endpoint's
identity labels, and per ordered pair the egress and ingress verdict of every
probe ("A" allowed, "D" denied).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooling import require_tool

__all__ = ["OracleResult", "cilium_source", "oracle_path", "run"]


def oracle_path() -> Path:
    return require_tool("cilium-oracle")


@dataclass(frozen=True)
class OracleResult:
    """One scenario's answer."""

    name: str
    policies: tuple[Mapping[str, Any], ...]
    identities: Mapping[str, tuple[str, ...]]  # endpoint -> identity labels ("k8s:app=web")
    # (from, to) -> (egress, ingress), one letter per probe
    verdicts: Mapping[tuple[str, str], tuple[str, str]]

    def rejected(self) -> dict[tuple[str, str, str], str]:
        """(kind, namespace, name) -> Cilium's error, for every object it refused."""
        return {
            (p["kind"], p["namespace"], p["name"]): p["error"]
            for p in self.policies
            if p.get("error")
        }


def run(scenarios: Sequence[Mapping[str, Any]], timeout: float = 600) -> list[OracleResult]:
    """Run one batch; any scenario the oracle could not evaluate raises."""
    proc = subprocess.run(
        [str(oracle_path())],
        input=json.dumps({"scenarios": list(scenarios)}),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"cilium-oracle exited {proc.returncode}: {proc.stderr.strip()}")
    out = json.loads(proc.stdout)
    results = []
    for sc in out["scenarios"]:
        if sc.get("error"):
            raise RuntimeError(f"cilium-oracle: scenario {sc['name']}: {sc['error']}")
        results.append(
            OracleResult(
                name=sc["name"],
                policies=tuple(sc.get("policies") or ()),
                identities={k: tuple(v["labels"]) for k, v in sc["identities"].items()},
                verdicts={
                    (r["from"], r["to"]): (r["egress"], r["ingress"])
                    for r in sc.get("results") or ()
                },
            )
        )
    return results


def cilium_source() -> Path:
    """The pinned cilium/cilium module's source (its examples/ and Documentation/), as
    `make tools` downloaded it for the oracle."""
    oracle_path()  # skip (or fail in CI) without the oracle, like every test here
    moddir = Path(__file__).resolve().parents[2] / "tools" / "cilium-oracle"
    proc = subprocess.run(
        ["go", "list", "-m", "-json", "github.com/cilium/cilium"],
        cwd=moddir,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "GOWORK": "off", "GOFLAGS": "-mod=readonly"},
    )
    if proc.returncode != 0:
        raise RuntimeError(f"go list -m github.com/cilium/cilium: {proc.stderr.strip()}")
    return Path(json.loads(proc.stdout)["Dir"])
