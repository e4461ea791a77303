"""Realistic multi-namespace applications against hand-reviewed golden files.

Each folder under apps/ holds namespaces, workloads and policies, a README stating
the intent of every policy, and expected.json: the workloads, the number of
ordered pairs, and every connected pair with its allowed ports (all others: none).
Regenerate nothing: the golden files are written and reviewed by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conn_kit import connectivity_map, run

from topogen.analysis.reachability import PolicyIndex
from topogen.connectivity import InputSpec, build_endpoints, load_inputs

APPS = Path(__file__).parent / "apps"
NAMES = sorted(p.name for p in APPS.iterdir() if (p / "expected.json").exists())


def app_args(name: str) -> list[str]:
    d = APPS / name
    return [
        "--policies",
        str(d / "policies.yaml"),
        "--workloads",
        str(d / "workloads.yaml"),
        "--namespaces",
        str(d / "namespaces.yaml"),
    ]


def test_there_are_apps() -> None:
    assert len(NAMES) >= 3


@pytest.mark.parametrize("name", NAMES)
def test_app_connectivity_matches_golden(name: str) -> None:
    want = json.loads((APPS / name / "expected.json").read_text(encoding="utf-8"))
    result = run(["connectivity", *app_args(name), "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [w["id"] for w in data["workloads"]] == want["workloads"]
    assert len(want["workloads"]) >= 10
    assert [e["id"] for e in data["excluded"]] == want["excluded"]
    assert len(data["pairs"]) == want["pairs"]
    got = {
        f"{p['from']} -> {p['to']}": ", ".join(p["allowed"])
        for p in data["pairs"]
        if p["connected"]
    }
    missing = sorted(set(want["connected"]) - set(got))
    extra = sorted(set(got) - set(want["connected"]))
    wrong = sorted(k for k in set(got) & set(want["connected"]) if got[k] != want["connected"][k])
    assert (missing, extra, wrong) == ([], [], [])


@pytest.mark.parametrize("name", NAMES)
def test_app_explain_agrees_with_connectivity(name: str) -> None:
    """A sample of pairs per app (every connected one and the first denied per source)."""
    want = json.loads((APPS / name / "expected.json").read_text(encoding="utf-8"))
    got = connectivity_map(app_args(name))
    seen: set[str] = set()
    for (src, dst), allowed in sorted(got.items()):
        if allowed is None and src in seen:
            continue
        if allowed is None:
            seen.add(src)
        result = run(["explain", "--from", src, "--to", dst, *app_args(name)])
        assert result.exit_code == (0 if allowed else 1), result.output
        assert f"the path allows {allowed or 'nothing'}\n" in result.output
        assert want["connected"].get(f"{src} -> {dst}") == allowed


@pytest.mark.parametrize("name", NAMES)
def test_memoised_index_agrees_with_a_fresh_one(name: str) -> None:
    """PolicyIndex caches per endpoint, per rule signature and per namespace: one shared
    index over every pair must give what a fresh index gives for each pair alone."""
    d = APPS / name
    inputs = load_inputs(
        InputSpec(
            policies=(str(d / "policies.yaml"),),
            workloads=(str(d / "workloads.yaml"),),
            namespaces=(str(d / "namespaces.yaml"),),
        )
    )
    endpoints, _ = build_endpoints(inputs.workloads, inputs.namespaces)
    shared = PolicyIndex(inputs.policies, inputs.namespaces)
    for src in reversed(endpoints):
        for dst in endpoints:
            fresh = PolicyIndex(inputs.policies, inputs.namespaces).verdict(
                src.endpoint, dst.endpoint
            )
            got = shared.verdict(src.endpoint, dst.endpoint)
            assert got.allowed == fresh.allowed, (src.id, dst.id)
            assert got.egress.allows == fresh.egress.allows
            assert got.ingress.denies == fresh.ingress.denies
