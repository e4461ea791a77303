"""Many denied zone pairs: one validation over tables, judged by the real Kyverno CLI.

Up to cel.PAIRS_INLINE pairs each is its own validation; beyond, the pairs are zone
sets (every two zones of a set denied by the same policies) and a pair table. A pod's
verdict and message must be what the per-pair validations gave: denied when it may land
in both zones of a denied pair, naming the first such pair and its policies.
"""

from __future__ import annotations

import copy
import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from tooling import REPO, require_tool
from topogen.config import load_config
from topogen.pipeline import analyze
from topogen.render import cel
from topogen.render.intent import AdmissionIntent, intent_for
from topogen.render.kyverno import kyverno_policies
from topogen.render.reference import sample_pods, violations

pytestmark = pytest.mark.tools

ZONES = ("zone-a", "zone-b", "zone-c", "zone-d", "zone-e", "zone-f")
P1, P2, P3 = ("ccnp fence",), ("cnp train/deny-a-e", "netpol train/x"), ("ccnp e-f",)
PAIRS = tuple(
    sorted(
        [(a, b, P1) for i, a in enumerate(ZONES[:4]) for b in ZONES[i + 1 : 4]]  # a zone fence
        + [("zone-a", "zone-e", P2), ("zone-c", "zone-f", P2)]  # a table
        + [("zone-e", "zone-f", P3)]  # a set of two
    )
)


@pytest.fixture(scope="module")
def intent() -> AdmissionIntent:
    cfg = load_config(REPO / "examples" / "zone-split" / "topogen.yaml")
    plan = next(p for p in analyze(cfg).plans if p.enforceable)
    return replace(intent_for(plan, "Enforce"), denied_zone_pairs=PAIRS)


def _pinned(pod: dict[str, Any], name: str, zones: list[str], label: str) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    pod["metadata"]["name"] = name
    pod["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": label, "operator": "In", "values": zones}]}
                ]
            }
        }
    }
    return pod


def test_tables_replace_per_pair_validations(intent: AdmissionIntent) -> None:
    sets, table = cel._denied_tables(PAIRS)
    assert sets == [(("zone-e", "zone-f"), "ccnp e-f"), (ZONES[:4], "ccnp fence")]
    assert table == {
        "zone-a": {"zone-e": P2[0] + ", " + P2[1]},
        "zone-c": {"zone-f": ", ".join(P2)},
    }
    assert len(cel.validations(intent)) < len(PAIRS)
    few = replace(intent, denied_zone_pairs=PAIRS[: cel.PAIRS_INLINE])
    assert len(cel.validations(few)) == len(cel.validations(intent)) - 1 + cel.PAIRS_INLINE


def test_kyverno_judges_spans_as_the_pairs_do(intent: AdmissionIntent, tmp_path: Path) -> None:
    kyverno = require_tool("kyverno")
    validating = next(
        f for f in kyverno_policies(intent) if f.objects[0]["kind"] == "ValidatingPolicy"
    ).objects[0]
    only = copy.deepcopy(validating)  # the span check alone: the CLI reports one failure
    only["spec"]["validations"] = validating["spec"]["validations"][-1:]
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(only), encoding="utf-8")
    coordinator = next(p for p in sample_pods(intent) if p["metadata"]["name"] == "coordinator")
    cases = {
        "one-zone": ["zone-a"],
        "fence": ["zone-b", "zone-a"],
        "allowed-pair": ["zone-b", "zone-e"],
        "table-first": ["zone-f", "zone-e", "zone-a"],
        "fence-first": ["zone-f", "zone-c", "zone-d"],
        "set-of-two": ["zone-f", "zone-e"],
        "outside": ["zone-x", "zone-y"],
    }
    pods = [_pinned(coordinator, n, z, intent.zone_label) for n, z in cases.items()]
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(pods), encoding="utf-8")
    run = subprocess.run(
        [str(kyverno), "apply", str(tmp_path / "policy.yaml"), "-r", str(tmp_path / "pods.yaml"),
         "--remove-color", "--policy-report", "--output-format", "json", "--audit-warn"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    start = run.stdout.find('{"kind":')
    assert start >= 0, run.stdout[-2000:] + run.stderr[-2000:]
    report, _ = json.JSONDecoder().raw_decode(run.stdout[start:])
    got: dict[str, str | None] = {n: None for n in cases}
    for r in report.get("results") or ():
        if r["result"] in ("fail", "warn"):
            for res in r["resources"]:
                got[res["name"]] = r["message"]
    for pod in pods:
        name = pod["metadata"]["name"]
        spans = [v for v in violations(pod, intent) if v.startswith("spans denied zones")]
        if not spans:
            assert got[name] is None, name
            continue
        za, zb = spans[0].removeprefix("spans denied zones ").split(" and ")
        policies = next(", ".join(p) for a, b, p in PAIRS if (a, b) == (za, zb))
        assert got[name] == (
            f"pod {name}: node affinity spans {za} and {zb}, whose traffic is denied by {policies}"
        ), name
    assert got["fence"] and got["table-first"] and got["fence-first"] and got["set-of-two"]
