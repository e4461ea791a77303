"""The legacy ClusterPolicies against the CEL policies, with the real Kyverno CLI.

Both engines are applied (`kyverno apply`) to the same admission pods; the mutated
pods must be identical object for object (lists in order: both engines append), a
second application must change nothing, and every validation check must give the
same verdict and message on the same pods. All kyverno calls of one case run once
(module fixture), cases in parallel.
"""

from __future__ import annotations

import copy
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kyverno_legacy.cases import Case, Pod, cases, mutation_pods, untouched_names
from kyverno_legacy.kyverno_cli import apply, verdicts, write_pods
from tooling import require_tool
from topogen.render import cel
from topogen.render.base import RenderedFile
from topogen.render.kyverno import kyverno_policies
from topogen.render.kyverno_legacy import kyverno_legacy_policies

pytestmark = pytest.mark.tools

CASES = cases()
IDS = [c.key for c in CASES]
Checks = dict[str, list[str | None]]  # pod name -> per check: failure message or None


@dataclass(frozen=True)
class Run:
    case: Case
    pods: dict[str, Pod]
    cel: dict[str, Pod]
    legacy: dict[str, Pod]
    cel_again: dict[str, Pod]
    legacy_again: dict[str, Pod]
    validated: dict[str, Pod]
    cel_checks: Checks
    legacy_checks: Checks
    legacy_failures: tuple[dict[str, Any], ...]  # report results, run with --audit-warn
    legacy_returncode: int


def _write(folder: Path, files: list[RenderedFile]) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for f in files:
        (folder / f.path).write_text(f.text, encoding="utf-8")
        out[f.objects[0]["kind"] + "/" + f.objects[0]["metadata"]["name"]] = folder / f.path
    return out


def _split_cel_validations(policy: dict[str, Any], folder: Path) -> list[list[int]]:
    """ValidatingPolicies with a share of the validations each (written to folder): the CLI
    reports only the first failing validation. The first two (coordinator pinned, worker
    affinity) share one: each passes every pod of the other role, so neither hides the
    other. Returns the validation indexes of each policy (`<name>-checks-<n>`)."""
    folder.mkdir(parents=True, exist_ok=True)
    count = len(policy["spec"]["validations"])
    groups = [[0, 1], *([i] for i in range(2, count))]
    for n, group in enumerate(groups):
        one = copy.deepcopy(policy)
        one["metadata"]["name"] = f"{policy['metadata']['name']}-checks-{n}"
        one["spec"]["validations"] = [policy["spec"]["validations"][i] for i in group]
        path = folder / f"checks-{n}.yaml"
        path.write_text(yaml.safe_dump(one, sort_keys=False), encoding="utf-8")
    return groups


def _cel_checks(
    results: list[dict[str, Any]], name: str, groups: list[list[int]], pods: list[str]
) -> Checks:
    by = verdicts(results)
    out: Checks = {}
    for pod in pods:
        checks: list[str | None] = [None] * sum(len(g) for g in groups)
        for n, group in enumerate(groups):
            for r in by.get((f"{name}-checks-{n}", pod), []):
                if r["result"] == "fail":
                    checks[group[int(r["properties"].get("cel.validationIndex", 0))]] = str(
                        r["message"]
                    )
        out[pod] = checks
    return out


def _admitted(mutated: dict[str, Pod], names: set[str]) -> list[Pod]:
    """The mutated role pods, renamed so they sit beside the raw ones."""
    out = []
    for name in sorted(names):
        p = copy.deepcopy(mutated[name])
        p["metadata"]["name"] = f"{name}-admitted"
        out.append(p)
    return out


def _run_case(kyverno: Path, case: Case, tmp: Path, pool: Executor) -> Run:
    """Every kyverno call of one case; independent calls run side by side (the CLI
    spends most of its wall time sleeping, so they overlap well)."""
    cel_files = kyverno_policies(case.intent)
    legacy_files = kyverno_legacy_policies(case.intent)
    cel_paths = _write(tmp / "cel", cel_files)
    legacy_paths = _write(tmp / "legacy", legacy_files)
    cel_mutating = [p for k, p in cel_paths.items() if k.startswith("MutatingPolicy/")]
    legacy_mutate = [legacy_paths[f"ClusterPolicy/{case.intent.name}-mutate"]]
    raw = mutation_pods(case)
    pods_file = write_pods(tmp / "pods.yaml", raw)

    first = [
        pool.submit(apply, kyverno, cel_mutating, pods_file, out=tmp / "out-cel"),
        pool.submit(apply, kyverno, legacy_mutate, pods_file, out=tmp / "out-legacy"),
    ]
    cel_out, legacy_out = (f.result().mutated for f in first)

    by_name = {p["metadata"]["name"]: p for p in raw}
    changed = {n for n, p in cel_out.items() if p != by_name[n]}
    validated = [*raw, *_admitted(cel_out, changed)]
    validated_file = write_pods(tmp / "validate.yaml", validated)
    cel_validating = next(f for f in cel_files if f.objects[0]["kind"] == "ValidatingPolicy")
    groups = _split_cel_validations(cel_validating.objects[0], tmp / "cel-checks")
    checks = sorted((tmp / "cel-checks").glob("checks-*.yaml"))
    legacy_validate = legacy_paths[f"ClusterPolicy/{case.intent.name}-validate"]
    second = [
        # a second application, to what the first one changed (the rest is the same input)
        pool.submit(
            apply,
            kyverno,
            cel_mutating,
            write_pods(tmp / "cel-1.yaml", [cel_out[n] for n in sorted(changed)]),
            out=tmp / "out-cel-2",
        ),
        pool.submit(
            apply,
            kyverno,
            legacy_mutate,
            write_pods(tmp / "legacy-1.yaml", [legacy_out[n] for n in sorted(changed)]),
            out=tmp / "out-legacy-2",
        ),
        pool.submit(
            apply, kyverno, [legacy_validate], validated_file, report=True, audit_warn=True
        ),
        *(pool.submit(apply, kyverno, [c], validated_file, report=True) for c in checks),
    ]
    cel_again, legacy_again = (f.result().mutated for f in second[:2])
    legacy_report = second[2].result()
    cel_results = [r for f in second[3:] for r in f.result().results]

    names = [p["metadata"]["name"] for p in validated]
    cel_name = cel_validating.objects[0]["metadata"]["name"]
    cel_checks = _cel_checks(cel_results, cel_name, groups, names)
    legacy_v = verdicts(legacy_report.results)
    rules = [r["name"] for r in legacy_files[1].objects[0]["spec"]["rules"]]
    legacy_checks = {
        n: [
            _failure(
                [
                    r
                    for r in legacy_v.get((f"{case.intent.name}-validate", n), [])
                    if r.get("rule") == rule
                ]
            )
            for rule in rules
        ]
        for n in names
    }
    return Run(
        case,
        by_name,
        cel_out,
        legacy_out,
        cel_again,
        legacy_again,
        {p["metadata"]["name"]: p for p in validated},
        cel_checks,
        legacy_checks,
        tuple(r for r in legacy_report.results if r["result"] in ("fail", "warn")),
        legacy_report.returncode,
    )


def _failure(results: list[dict[str, Any]]) -> str | None:
    assert len(results) <= 1, results
    if results and results[0]["result"] in ("fail", "warn"):
        return str(results[0]["message"])
    return None


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    kyverno = require_tool("kyverno")
    root = tmp_path_factory.mktemp("kyverno-legacy")
    with (
        ThreadPoolExecutor(max_workers=12) as pool,
        ThreadPoolExecutor(max_workers=len(CASES)) as cases_pool,
    ):
        futures = {
            c.key: cases_pool.submit(_run_case, kyverno, c, root / c.key, pool) for c in CASES
        }
        return {k: f.result() for k, f in futures.items()}


# --- mutation ----------------------------------------------------------------------------


@pytest.mark.parametrize("key", IDS)
def test_mutated_pods_are_identical(runs: dict[str, Run], key: str) -> None:
    run = runs[key]
    assert set(run.cel) == set(run.legacy) == set(run.pods)
    for name, pod in run.cel.items():
        assert run.legacy[name] == pod, name


@pytest.mark.parametrize("key", IDS)
def test_second_application_changes_nothing(runs: dict[str, Run], key: str) -> None:
    run = runs[key]
    assert run.cel_again
    assert run.cel_again == {n: run.cel[n] for n in run.cel_again}
    assert run.legacy_again == {n: run.legacy[n] for n in run.cel_again}


@pytest.mark.parametrize("key", IDS)
def test_pods_outside_the_group_are_untouched(runs: dict[str, Run], key: str) -> None:
    run = runs[key]
    for name in untouched_names(run.case):
        assert run.cel[name] == run.pods[name], name
        assert run.legacy[name] == run.pods[name], name


@pytest.mark.parametrize("key", IDS)
def test_mutation_adds_what_the_intent_asks(runs: dict[str, Run], key: str) -> None:
    """The engines agree; this pins down that what they agree on is right."""
    run, intent = runs[key], runs[key].case.intent
    zone_term = {
        "matchExpressions": [
            {"key": intent.zone_label, "operator": "In", "values": list(intent.zones)}
        ]
    }
    k = run.case.key
    for name in [f"{k}-coord-0", f"{k}-worker-0"]:
        pod = run.legacy[name]
        assert pod["spec"]["affinity"]["nodeAffinity"] == {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [zone_term]}
        }
        if intent.identity:
            assert pod["metadata"]["labels"][intent.identity[0]] == intent.identity[1]
    assert run.legacy[f"{k}-coord-0"]["spec"]["tolerations"] == cel.toleration_dicts(
        intent.tolerations
    )
    worker = run.legacy[f"{k}-worker-0"]
    [term] = worker["spec"]["affinity"]["podAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    sel = intent.coordinator_selector
    assert term["topologyKey"] == intent.topology_key
    assert term["labelSelector"]["matchLabels"] == {
        intent.job_label: worker["metadata"]["labels"][intent.job_label],
        **dict(sel.match_labels),
    }
    # an equivalent term adds nothing, another job's term is no equivalent
    equivalent = run.legacy[f"{k}-worker-equivalent-term"]["spec"]["affinity"]["podAffinity"]
    assert len(equivalent["requiredDuringSchedulingIgnoredDuringExecution"]) == 1
    other_job = run.legacy[f"{k}-worker-other-job-term"]["spec"]["affinity"]["podAffinity"]
    assert len(other_job["requiredDuringSchedulingIgnoredDuringExecution"]) == 2
    if not run.case.shapes:
        return
    # user constraints kept; tolerations covering the taints add nothing
    constrained = run.legacy[f"{k}-coord-constrained"]["spec"]
    assert constrained["tolerations"][0]["key"] == "team.example.com/dedicated"
    assert (
        constrained["affinity"]["podAntiAffinity"]
        == run.pods[f"{k}-coord-constrained"]["spec"]["affinity"]["podAntiAffinity"]
    )
    terms = constrained["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert [t["matchExpressions"][-1] for t in terms] == [zone_term["matchExpressions"][0]] * 3
    assert "matchFields" in terms[1]
    assert run.legacy[f"{k}-coord-tolerates-all"]["spec"]["tolerations"] == [{"operator": "Exists"}]
    for name, added in [("near-miss", cel.toleration_dicts(intent.tolerations)), ("covered", [])]:
        before = run.pods[f"{k}-coord-{name}"]["spec"]["tolerations"]
        assert run.legacy[f"{k}-coord-{name}"]["spec"]["tolerations"] == before + added


# --- validation --------------------------------------------------------------------------


@pytest.mark.parametrize("key", IDS)
def test_validation_verdicts_are_identical(runs: dict[str, Run], key: str) -> None:
    run = runs[key]
    assert len(cel.validations(run.case.intent)) == len(next(iter(run.legacy_checks.values())))
    for name in run.validated:
        assert run.legacy_checks[name] == run.cel_checks[name], name
        assert not all(run.legacy_checks[name][:2]), name  # roles exclusive: see the split


def _failing(checks: Checks) -> set[str]:
    return {n for n, c in checks.items() if any(c)}


@pytest.mark.parametrize("key", IDS)
def test_validation_reports_the_bad_pods(runs: dict[str, Run], key: str) -> None:
    run, intent, k = runs[key], runs[key].case.intent, runs[key].case.key
    roles = {n for n in run.pods if n not in untouched_names(run.case)}
    # before admission every role pod is missing something, but the already mutated one
    # and the worker whose own affinity term already is the coordinator's
    expected_raw = roles - {
        f"{k}-coord-mutated",
        f"{k}-worker-equivalent-term",
        f"{k}-coord-node-selector-domain",
    }
    # after admission only those whose own constraints stay wrong: a span across a denied
    # pair (the zone term is kept), a nodeSelector zone outside the domain (it decides where
    # the pod may run, whatever the terms say), an identity claim nothing overwrites when
    # the domain has several zones
    expected_admitted = {
        f"{k}-coord-span-{n}-admitted" for n in range(len(intent.denied_zone_pairs))
    }
    # (a user term whose zone requirement is not `In` gets the domain ANDed in: it passes)
    expected_admitted.add(f"{k}-coord-node-selector-admitted")
    if not intent.identity and intent.identity_label:
        expected_admitted |= {
            f"{k}-coord-spoofed-admitted",
            f"{k}-worker-spoofed-admitted",
            f"{k}-coord-identity-empty-admitted",
        }
    expected = (expected_raw | expected_admitted) & set(run.validated)
    assert _failing(run.legacy_checks) == expected
    assert _failing(run.cel_checks) == expected
    for name in untouched_names(run.case):
        assert not any(run.legacy_checks[name])
    if intent.identity_label:
        spoofed = run.legacy_checks[f"{k}-coord-spoofed"][2]
        assert spoofed is not None and "claims a zone" in spoofed
    for n, (za, zb, policies) in enumerate(intent.denied_zone_pairs):
        message = run.legacy_checks[f"{k}-coord-span-{n}-admitted"][
            -len(intent.denied_zone_pairs) + n
        ]
        assert message is not None and f"spans {za} and {zb}" in message
        assert all(p in message for p in policies)


@pytest.mark.parametrize("key", IDS)
def test_validation_failure_action(runs: dict[str, Run], key: str) -> None:
    """Audit reports (warn under --audit-warn, exit 0); Enforce rejects (fail, exit 1).

    The CLI's --audit-warn ignores a CEL policy's validationActions (every CEL failure
    becomes a warning), so the CEL side is checked on the rendered spec.
    """
    run, intent = runs[key], runs[key].case.intent
    assert run.legacy_failures
    enforce = intent.validation_action == "Enforce"
    assert {r["result"] for r in run.legacy_failures} == {"fail" if enforce else "warn"}
    assert run.legacy_returncode == (1 if enforce else 0)
    validating = kyverno_policies(intent)[-1].objects[0]
    assert validating["spec"]["validationActions"] == (["Deny"] if enforce else ["Audit"])
