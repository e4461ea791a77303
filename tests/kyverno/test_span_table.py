"""Many denied zone pairs: one validation over a table, judged by the real Kyverno CLI.

Up to cel.PAIRS_INLINE pairs each is its own validation; beyond, one validation looks
the pod's zones up in a table of the pairs. A pod's verdict and message must be what
the per-pair validations gave: denied when it may land in both zones of a denied pair,
naming the first such pair and the policies that deny it.
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

from engines.engines import gator_checks
from tooling import REPO, require_tool
from topogen.config import load_config
from topogen.pipeline.analyze import analyze
from topogen.render import cel
from topogen.render.gatekeeper import gatekeeper_policies
from topogen.render.intent import AdmissionIntent, intent_for
from topogen.render.kyverno import kyverno_policies
from topogen.render.reference import sample_pods, violations

pytestmark = pytest.mark.tools

ZONES = ("zone-a", "zone-b", "zone-c", "zone-d", "zone-e", "zone-f", "zone-g", "zone-h")
P1, P2, P3 = ("ccnp fence",), ("cnp train/deny-a-e", "netpol train/x"), ("ccnp e-f",)
P4 = ("ccnp host-firewall-g", "ccnp host-firewall-h")
PAIRS = tuple(
    sorted(
        [(a, b, P1) for i, a in enumerate(ZONES[:4]) for b in ZONES[i + 1 : 4]]  # a zone fence
        + [("zone-a", "zone-e", P2), ("zone-c", "zone-f", P2)]  # a table
        + [("zone-e", "zone-f", P3)]  # a set of two
        + [(a, b, P4) for a in ZONES[:2] for b in ZONES[6:]]  # a block: {a, b} x {g, h}
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


def test_a_table_replaces_per_pair_validations(intent: AdmissionIntent) -> None:
    names = {v["name"]: v["expression"] for v in cel.validation_variables(intent)}
    # the CLI compiles the policy per pod: every expression costs, and literal elements
    assert {"landing", "spanFrom"} <= set(names)
    assert not {"deniedPairs", "deniedBy", "spanTo", "spanBy"} & set(names)
    table = names["spanFrom"].split('"')[1]
    assert table.startswith("|01=")  # zone-a zone-b
    assert table.count("|") == len(PAIRS)
    assert names["landing"].startswith('"0 1 2 3 4 5 6 7".split')
    assert len(cel.validations(intent)) < len(PAIRS)
    few = replace(intent, denied_zone_pairs=PAIRS[: cel.PAIRS_INLINE])
    assert len(cel.validations(few)) == len(cel.validations(intent)) - 1 + cel.PAIRS_INLINE
    assert "spanFrom" not in {v["name"] for v in cel.validation_variables(few)}


def test_zone_codes_sort_as_the_zones() -> None:
    zones = [f"zone-{i:03d}" for i in range(200)]
    codes = cel.zone_codes(list(reversed(zones)))
    assert [codes[z] for z in zones] == sorted(codes.values())
    assert {len(c) for c in codes.values()} == {2}
    assert cel.zone_codes(zones[:62])["zone-061"] == "z"
    assert {len(c) for c in cel.zone_codes(zones[:63]).values()} == {2}


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
        "block": ["zone-h", "zone-b", "zone-e"],
        "block-and-fence": ["zone-g", "zone-d", "zone-a"],
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
    assert got["block"] and "host-firewall" in got["block"]


def test_gatekeeper_reports_the_first_pair_with_cel_and_each_with_rego(
    intent: AdmissionIntent, tmp_path: Path
) -> None:
    """The same table in Gatekeeper's K8sNativeValidation code (gator's default engine):
    a pod spanning several denied pairs is reported with the first; the template's Rego
    (native validation off) reports each."""
    gator = require_tool("gator")
    files = gatekeeper_policies(intent)
    paths = []
    for f in files[:2]:  # the template and the constraint
        paths.append(tmp_path / Path(f.path).name)
        paths[-1].write_text(f.text, encoding="utf-8")
    coordinator = next(p for p in sample_pods(intent) if p["metadata"]["name"] == "coordinator")
    zones = {"fence-first": ["zone-f", "zone-c", "zone-d"], "one-zone": ["zone-a"]}
    pods = [_pinned(coordinator, n, z, intent.zone_label) for n, z in zones.items()]
    pod = pods[0]
    spans = [v for v in violations(pod, intent) if v.startswith("spans denied zones")]
    pairs = ["denied:" + ":".join(s.split(" ")[3::2]) for s in spans]
    assert len(pairs) > 1
    for rego, want in ((False, pairs[:1]), (True, pairs)):
        got = gator_checks(gator, paths, pods, tmp_path / str(rego), intent, rego)
        denied = {n: sorted(c for c, _ in got.get(n, ()) if c.startswith("denied:")) for n in zones}
        assert denied == {"fence-first": sorted(want), "one-zone": []}, rego
