"""The native engine against the real kube-apiserver: MutatingAdmissionPolicy (v1, as
rendered for a 1.36 cluster) and ValidatingAdmissionPolicy with their bindings, over the
engine-neutral cases of tests/engines/cases.py, held to the same expectations as the
Kyverno CLI's evaluation of them (tests/engines/test_behaviour.py).

The shared control plane (conftest.py) runs with the admission-policy plugins off, so
this module starts its own with them on. Pods are
created with dryRun=All: admission runs in full and nothing is stored. The checks are
read from warnings: for the observation the validating binding's actions are [Warn]
(the API server reports its first denial only, but every failed validation as a
warning); a second test installs the bindings as rendered and checks Deny and Audit.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import pytest
from live_harness import ControlPlane, start_control_plane
from live_kit import create_pod_raw, project

from engines.cases import Pod, Suite, expected, suites
from tooling import TOOLS_BIN, require_tool
from topogen.render.native import native_policies

KUBERNETES = "1.36"  # MutatingAdmissionPolicy v1, as the harness's kube-apiserver serves
POLICY_PLUGINS = ("MutatingAdmissionPolicy", "ValidatingAdmissionPolicy")


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    for tool in ("etcd", "kube-apiserver", "kube-scheduler"):
        require_tool(tool)
    cp = start_control_plane(
        TOOLS_BIN, tmp_path_factory.mktemp("native-plane"), admission=POLICY_PLUGINS
    )
    try:
        yield cp
    finally:
        cp.stop()


def _dry_run(cp: ControlPlane, pod: Pod) -> tuple[int, dict[str, Any], list[str]]:
    return create_pod_raw(cp, pod)


_CHECK = (
    (re.compile(r"must be pinned to "), "coordinator-pinned"),
    (re.compile(r"must require pod affinity"), "worker-affinity"),
    (re.compile(r": identity label "), "identity"),
)


def _checks(warnings: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """(check, message) of every failed validation, from the VAP's Warn warnings."""
    out = []
    for w in warnings:
        m = re.match(
            r"^Validation failed for ValidatingAdmissionPolicy '[^']*' with binding "
            r"'[^']*': (.*)$",
            w,
            re.DOTALL,
        )
        if m is None:
            continue
        message = m[1]
        span = re.search(r": node affinity spans (\S+) and (\S+), whose", message)
        check = (
            f"denied:{span[1]}:{span[2]}"
            if span
            else next(c for pattern, c in _CHECK if pattern.search(message))
        )
        out.append((check, message))
    return tuple(sorted(out))


def _path(obj: dict[str, Any]) -> str:
    """The collection of an admissionregistration object (cluster-scoped)."""
    kind = obj["kind"].lower()
    plural = kind[:-1] + "ies" if kind.endswith("policy") else kind + "s"
    return f"/apis/{obj['apiVersion']}/{plural}"


def _install(cp: ControlPlane, objs: Sequence[dict[str, Any]]) -> None:
    kube = cp.kube()
    for obj in objs:
        kube.create(_path(obj), obj)


def _uninstall(cp: ControlPlane, objs: Sequence[dict[str, Any]]) -> None:
    kube = cp.kube()
    for obj in objs:
        kube.delete(f"{_path(obj)}/{obj['metadata']['name']}")


def _wait(what: str, ready: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _policies(suite: Suite, actions: list[str] | None) -> list[dict[str, Any]]:
    objs = [copy.deepcopy(o) for f in native_policies(suite.intent, KUBERNETES) for o in f.objects]
    if actions is not None:
        objs[-1]["spec"]["validationActions"] = actions
    return objs


SUITES = suites()


@pytest.mark.slow
@pytest.mark.tools
@pytest.mark.parametrize("suite", SUITES, ids=[s.key for s in SUITES])
def test_native_policies_on_the_api_server(plane: ControlPlane, suite: Suite) -> None:
    for ns in {c.pod["metadata"]["namespace"] for c in suite.cases}:
        plane.ensure_namespace(ns)
    objs = _policies(suite, ["Warn"])
    mutating, validating = objs[:4], objs[4:]
    only = [c for c in suite.cases if not c.admission]
    admission = [c for c in suite.cases if c.admission]
    probe_bad = only[[c.name for c in only].index("unpinned-coordinator")].pod
    probe_raw = admission[0].pod
    try:
        # validation only: the VAP alone, then the MAPs too
        _install(plane, validating)
        _wait("the ValidatingAdmissionPolicy", lambda: bool(_dry_run(plane, probe_bad)[2]))
        wrong = []
        for case in only:
            status, body, warnings = _dry_run(plane, case.pod)
            assert status == 201, body
            want = expected(case, "native", suite.intent).checks
            if _checks(warnings) != want:
                wrong.append(f"{case.name}: expected {want}, got {_checks(warnings)}")
        _install(plane, mutating)
        # each policy goes live on its own: wait for the coordinators' and the workers'
        probes = [probe_raw, suite.case("worker-0").pod]
        _wait(
            "the MutatingAdmissionPolicies",
            lambda: all(
                _dry_run(plane, p)[1].get("spec", {}).get("affinity") is not None for p in probes
            ),
        )
        for case in admission:
            status, body, warnings = _dry_run(plane, case.pod)
            assert status == 201, body
            want = expected(case, "native", suite.intent)
            if project(body) != project(want.pod):
                wrong.append(f"{case.name}: mutated {project(body)}\n  want {project(want.pod)}")
            if _checks(warnings) != want.checks:
                wrong.append(f"{case.name}: expected {want.checks}, got {_checks(warnings)}")
        assert not wrong, "\n".join(wrong)
    finally:
        _uninstall(plane, objs)


@pytest.mark.slow
@pytest.mark.tools
@pytest.mark.parametrize("action", ["Enforce", "Audit"])
def test_validation_actions_as_rendered(plane: ControlPlane, action: str) -> None:
    """Enforce denies with the check's message; Audit admits."""
    suite = replace(SUITES[1], intent=replace(SUITES[1].intent, validation_action=action))
    objs = _policies(suite, None)
    bad = suite.case("unpinned-coordinator").pod
    for ns in suite.intent.namespaces:
        plane.ensure_namespace(ns)
    try:
        _install(plane, objs[4:])
        if action == "Enforce":
            _wait("the deny", lambda: _dry_run(plane, bad)[0] != 201)
            status, body, _ = _dry_run(plane, bad)
            assert status == 403 and body["reason"] == "Forbidden", body
            assert "must be pinned to" in body["message"]
        else:
            time.sleep(2)  # nothing to observe but admission; give the policy time to load
            assert _dry_run(plane, bad)[0] == 201
    finally:
        _uninstall(plane, objs)
