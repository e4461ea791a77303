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
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import pytest
from live_harness import ControlPlane, start_control_plane
from live_kit import create_pod_raw, project
from webhook_harness import wait_admitted

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


def _audited(plane: ControlPlane, policy: str) -> float:
    """How many times the API server audited a failed validation of `policy`
    (apiserver_validating_admission_policy_check_total, enforcement_action audit)."""
    text = plane.kube().text("/metrics")
    total = 0.0
    for labels, value in _CHECK_TOTAL.findall(text):
        if 'enforcement_action="audit"' in labels and f'policy="{policy}"' in labels:
            total += float(value)
    return total


_CHECK_TOTAL = re.compile(
    r"^apiserver_validating_admission_policy_check_total\{([^}]*)\} (\S+)$", re.MULTILINE
)


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
    bad_checks = expected(suite.case("unpinned-coordinator"), "native", suite.intent).checks
    try:
        # validation only: the VAP alone, then the MAPs too; each waited for until a probe
        # comes back as this version of the policies answers it (the API server loads
        # policies and bindings asynchronously, and may still hold a removed one's)
        _install(plane, validating)
        wait_admitted(
            "the ValidatingAdmissionPolicy",
            lambda: (lambda a: a[0] == 201 and _checks(a[2]) == bad_checks)(
                _dry_run(plane, probe_bad)
            ),
        )
        wrong = []
        for case in only:
            status, body, warnings = _dry_run(plane, case.pod)
            assert status == 201, body
            want = expected(case, "native", suite.intent).checks
            if _checks(warnings) != want:
                wrong.append(f"{case.name}: expected {want}, got {_checks(warnings)}")
        _install(plane, mutating)
        # each policy goes live on its own: wait for the coordinators' and the workers'
        probes = [admission[0], suite.case("worker-0")]
        want_pods = [project(expected(c, "native", suite.intent).pod) for c in probes]
        wait_admitted(
            "the MutatingAdmissionPolicies",
            lambda: [project(_dry_run(plane, c.pod)[1]) for c in probes] == want_pods,
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
    (vap,) = [o["metadata"]["name"] for o in objs[4:] if o["kind"].endswith("Policy")]
    try:
        _install(plane, objs[4:])
        if action == "Enforce":
            wait_admitted(
                "the deny",
                lambda: (lambda a: a[0] == 403 and "must be pinned to" in a[1]["message"])(
                    _dry_run(plane, bad)
                ),
            )
            status, body, _ = _dry_run(plane, bad)
            assert status == 403 and body["reason"] == "Forbidden", body
        else:
            # Audit admits, and the API server audits the failed validation (its check
            # counter): the probe admitted while the counter moved is this binding's answer
            def audited() -> bool:
                before = _audited(plane, vap)
                admitted = _dry_run(plane, bad)[0] == 201
                return admitted and _audited(plane, vap) > before

            wait_admitted("the audit", audited)
    finally:
        _uninstall(plane, objs)
