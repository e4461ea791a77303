"""Every engine against the reference model, case by case, with the real tools.

For each suite (tests/engines/cases.py) and engine: the pods the engine's mutation
leaves (admission cases) and the checks its validation fails, with their messages
(every case; admission cases after the engine's own mutation), must be the reference
model's, transformed by the differences the case declares for that engine, and by
nothing else. Engines with the same declarations must therefore agree with each other.
All tool runs happen once (module fixture), side by side.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from engines.cases import DIFFERENCES, ENGINES, Suite, expected, suites
from engines.engines import Outcome, run_gatekeeper, run_kyverno_family, stored
from tooling import require_tool

SUITES = suites()
HAS_LEGACY = importlib.util.find_spec("topogen.render.kyverno_legacy") is not None
# gatekeeper: its template's CEL judges (as Gatekeeper's webhook runs it by default);
# gatekeeper-rego: its Rego (native validation off), held to gatekeeper's declarations
REGO = "gatekeeper-rego"
RUN_ENGINES = [e for e in (*ENGINES, REGO) if e != "kyverno-legacy" or HAS_LEGACY]
PAIRS = [(s.key, e) for s in SUITES for e in RUN_ENGINES]
BY_KEY = {s.key: s for s in SUITES}


def _declared(engine: str) -> str:
    """The engine whose declared differences hold."""
    return "gatekeeper" if engine == REGO else engine


def _run(engine: str, suite: Suite, tmp: Path, tools: dict[str, Path]) -> Outcome:
    if _declared(engine) == "gatekeeper":
        return run_gatekeeper(tools["gator"], suite, tmp, rego=engine == REGO)
    return run_kyverno_family(engine, tools["kyverno"], suite, tmp)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Outcome]:
    tools = {name: require_tool(name) for name in ("kyverno", "gator")}
    root = tmp_path_factory.mktemp("engines")
    with ThreadPoolExecutor(max_workers=len(PAIRS)) as pool:
        futures = {
            (key, engine): pool.submit(_run, engine, BY_KEY[key], root / key / engine, tools)
            for key, engine in PAIRS
        }
        return {k: f.result() for k, f in futures.items()}


def _diff(want: object, got: object) -> str:
    a = json.dumps(want, indent=1, sort_keys=True).splitlines()
    b = json.dumps(got, indent=1, sort_keys=True).splitlines()
    return "\n".join(difflib.unified_diff(a, b, "expected", "engine", lineterm="", n=2))


@pytest.mark.tools
@pytest.mark.parametrize(("key", "engine"), PAIRS, ids=[f"{k}-{e}" for k, e in PAIRS])
def test_mutated_pods(outcomes: dict[tuple[str, str], Outcome], key: str, engine: str) -> None:
    suite, outcome = BY_KEY[key], outcomes[(key, engine)]
    wrong = []
    for case in (c for c in suite.cases if c.admission):
        want = expected(case, _declared(engine), suite.intent).pod
        got = outcome.mutated[case.name]
        if (
            _declared(engine) == "gatekeeper"
        ):  # gator was given the pods as the API server stores them
            want = stored(want)
        if got != want:
            wrong.append(f"--- {case.name}\n{_diff(want, got)}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.tools
@pytest.mark.parametrize(("key", "engine"), PAIRS, ids=[f"{k}-{e}" for k, e in PAIRS])
def test_decisions(outcomes: dict[tuple[str, str], Outcome], key: str, engine: str) -> None:
    suite, outcome = BY_KEY[key], outcomes[(key, engine)]
    wrong = []
    for case in suite.cases:
        want = expected(case, _declared(engine), suite.intent).checks
        got = outcome.checks.get(case.name, ())
        if got != want:
            wrong.append(f"{case.name}:\n  expected {want}\n  engine   {got}")
    assert not set(outcome.checks) - {c.name for c in suite.cases}
    assert not wrong, "\n".join(wrong)


@pytest.mark.tools
@pytest.mark.parametrize("key", list(BY_KEY))
def test_engines_agree_unless_declared(outcomes: dict[tuple[str, str], Outcome], key: str) -> None:
    """Engines that declare the same differences for a case give the same answer."""
    suite = BY_KEY[key]
    for case in suite.cases:
        groups: dict[tuple[str, ...], list[str]] = {}
        for engine in RUN_ENGINES:
            declared = case.differences.get(_declared(engine), ())
            groups.setdefault(tuple(declared), []).append(engine)
        for engines in groups.values():
            answers = [
                (
                    _stored_or_none(outcomes[(key, e)].mutated.get(case.name)),
                    outcomes[(key, e)].checks.get(case.name, ()),
                )
                for e in engines
            ]
            assert all(a == answers[0] for a in answers), (case.name, engines)


def _stored_or_none(pod: dict[str, object] | None) -> dict[str, object] | None:
    return None if pod is None else stored(pod)


@pytest.mark.parametrize("key", list(BY_KEY))
def test_declared_differences_change_the_answer(key: str) -> None:
    """No stale declaration: without any one of them, the expectation would differ."""
    suite = BY_KEY[key]
    for case in suite.cases:
        for engine, names in case.differences.items():
            assert engine in ENGINES, (case.name, engine)
            for name in names:
                assert name in DIFFERENCES, (case.name, name)
                with_it = expected(case, engine, suite.intent)
                without = expected(case, engine, suite.intent, without=name)
                assert with_it != without, f"{case.name}: {engine} {name} changes nothing"


def test_the_suites_cover_the_shapes() -> None:
    """Each role's pod, constraints, outsiders, Kueue, spoofing, unpinned, blocked spans;
    and pods that must be denied as well as admitted."""
    for suite in SUITES:
        names = {c.name for c in suite.cases}
        i = suite.intent
        for needed in (
            "coordinator-0",
            "worker-0",
            "coordinator-constrained",
            "not-training",
            "other-namespace",
            "kueue-label",
            "kueue-annotation",
            "kueue-gate",
            "unpinned-coordinator",
            *(["coordinator-spoofed-identity"] if i.identity_label else []),
            *(["coordinator-spans-0"] if i.denied_zone_pairs else []),
            *(["coordinator-unknown-job", "coordinator-job-elsewhere"] if i.per_job else []),
            *(["coordinator-queued", "worker-queued"] if i.job_excludes else []),
        ):
            assert needed in names, (suite.key, needed)
        verdicts = {bool(expected(c, "kyverno", suite.intent).checks) for c in suite.cases}
        assert verdicts == {True, False}
    assert len(SUITES[1].intent.zones) == 2 and len(SUITES[1].intent.tolerations) > 2
    # the spread suites: one with the identity label per job, one without identity
    assert [s.intent.job_identity for s in SUITES if s.intent.per_job] == [True, False]
    # and a queued job in each, excluding jobs of its own namespace and of another (one
    # term), and jobs of another kind (a second term)
    for s in SUITES:
        if s.intent.per_job:
            ((_, (one, other)),) = s.intent.job_excludes
            assert len(one.namespaces) == 2 and one.key != other.key
