"""The engine-neutral cases of tests/engines through Kyverno's admission controller (the
CEL policies and the legacy ClusterPolicies), held to the expectations the Kyverno CLI is
held to; and the webhooks Kyverno registers for the generated policies.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from kyverno_harness import (
    Kyverno,
)
from kyverno_kit import (
    BEFORE,
    GENERATED,
    install,
    policy_docs,
)
from live_harness import ControlPlane
from live_kit import create_pod_raw, docs, pods_of, project
from webhook_harness import Answer, wait_answered

from engines.cases import Suite, expected, suites
from engines.engines import Checks, check_ids
from topogen.render.kyverno import kyverno_policies
from topogen.render.kyverno_legacy import kyverno_legacy_policies

pytestmark = [pytest.mark.slow, pytest.mark.tools]


# --- the engine-neutral cases through admission --------------------------------------------

SUITES = suites()


def _checks_of(warnings: Sequence[str], check_of: Mapping[str, str]) -> Checks:
    """(check, message) of each failed check, from the Warn policies' warnings."""
    out = []
    for w in warnings:
        m = re.match(r"^Policy (\S+) (failed|error): (.*)$", w, re.DOTALL)
        assert m is not None and m[2] == "failed", w
        out.append((check_of[m[1]], m[3]))
    return tuple(sorted(out))


def _warned(check_of: Mapping[str, str], want: Checks) -> Callable[[Answer], bool]:
    """The probe's answer once every check policy answers it: admitted with exactly the
    warnings `want` (a warning of a policy that is not one of these: not yet)."""

    def answered(a: Answer) -> bool:
        names = [re.match(r"^Policy (\S+) ", w) for w in a[2]]
        if a[0] != 201 or not all(m is not None and m[1] in check_of for m in names):
            return False
        return _checks_of(a[2], check_of) == want

    return answered


def _mutated(want: Mapping[str, Any]) -> Callable[[Answer], bool]:
    """The probe's answer once the mutation answers it: admitted as `want`."""
    expected = project(want)
    return lambda a: a[0] == 201 and project(a[1]) == expected


@pytest.mark.parametrize("suite", SUITES, ids=[s.key for s in SUITES])
def test_kyverno_admission_controller_behaves_as_the_cli(
    kyverno_plane: tuple[ControlPlane, Kyverno], suite: Suite
) -> None:
    """tests/engines' cases created (dryRun=All) through the API server: the pods Kyverno's
    admission controller returns and the checks it fails are what the Kyverno CLI is held
    to (expected(case, "kyverno")). Each check is its own ValidatingPolicy with
    validationActions [Warn] (Kyverno reports a policy's first failing validation only,
    and a warning per failing policy)."""
    cp, k = kyverno_plane
    for ns in sorted({c.pod["metadata"]["namespace"] for c in suite.cases}):
        cp.ensure_namespace(ns)
    objs = [o for f in kyverno_policies(suite.intent) for o in f.objects]
    mutating = [o for o in objs if o["kind"] == "MutatingPolicy"]
    # the group's ValidatingPolicy, and one per detached selector (its own webhook)
    checks, check_of = [], {}
    for validating in (o for o in objs if o["kind"] == "ValidatingPolicy"):
        for n, (v, check) in enumerate(
            zip(validating["spec"]["validations"], check_ids(suite.intent), strict=True)
        ):
            one = copy.deepcopy(validating)
            one["metadata"]["name"] = f"{validating['metadata']['name']}-check-{n}"
            one["spec"]["validations"] = [v]
            one["spec"]["validationActions"] = ["Warn"]
            one["spec"]["evaluation"]["admission"]["enabled"] = True
            checks.append(one)
            check_of[one["metadata"]["name"]] = check
    only = [c for c in suite.cases if not c.admission]
    admission = [c for c in suite.cases if c.admission]
    wrong = []
    probe = suite.case("unpinned-coordinator")
    try:
        install(
            k, checks, probe.pod, _warned(check_of, expected(probe, "kyverno", suite.intent).checks)
        )
        for case in only:
            status, body, warnings = create_pod_raw(cp, case.pod)
            assert status == 201, body
            want = expected(case, "kyverno", suite.intent).checks
            if _checks_of(warnings, check_of) != want:
                wrong.append(f"{case.name}: expected {want}, got {_checks_of(warnings, check_of)}")
        first = expected(admission[0], "kyverno", suite.intent).pod
        install(k, mutating, admission[0].pod, _mutated(first))
        for case in admission:
            status, body, warnings = create_pod_raw(cp, case.pod)
            assert status == 201, body
            want_ = expected(case, "kyverno", suite.intent)
            if project(body) != project(want_.pod):
                wrong.append(f"{case.name}: mutated {project(body)}\n  want {project(want_.pod)}")
            if _checks_of(warnings, check_of) != want_.checks:
                wrong.append(f"{case.name}: expected {want_.checks}, got {warnings}")
    finally:
        k.delete([*checks, *mutating])
        k.wait_unregistered([o["metadata"]["name"] for o in (*checks, *mutating)])
    assert not wrong, "\n".join(wrong)


# --- what Kyverno registers for the generated policies --------------------------------------


def _merged(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> dict[str, Any]:
    """Kyverno's mergeLabelSelectors (pkg/controllers/webhook/validating.go): labels of
    both, a's expressions then b's; the API server stores a missing selector as {}."""
    out: dict[str, Any] = {}
    labels = {**((a or {}).get("matchLabels") or {}), **((b or {}).get("matchLabels") or {})}
    exprs = [*((a or {}).get("matchExpressions") or []), *((b or {}).get("matchExpressions") or [])]
    if labels:
        out["matchLabels"] = labels
    if exprs:
        out["matchExpressions"] = exprs
    return out


def test_kyverno_registers_each_generated_policy_as_its_own_webhook(
    kyverno_plane: tuple[ControlPlane, Kyverno],
) -> None:
    """How Kyverno v1.19.1 turns each generated policy into a webhook of its resource
    configurations: a policy with matchConditions gets a fine-grained webhook of its own
    (pkg/controllers/webhook/validating.go buildWebhookRules) whose rules are the policy's
    matchConstraints.resourceRules, whose namespaceSelector and objectSelector are the
    policy's merged with Kyverno's `webhooks` config (its ConfigMap), and whose
    matchConditions are the policy's as written, for the API server to evaluate before it
    calls Kyverno at all. So the API server calls Kyverno only for pods of the group's
    namespaces with the job label, and of those only for its coordinators and workers (what
    tests/kyverno/test_webhook_scope.py finds with Kyverno's builders, here as the running
    admission controller registers it). The ValidatingPolicy as kyverno.auditAtAdmission
    (or, under Enforce, kyverno.generateValidatingAdmissionPolicy false) puts it on the
    admission path; as rendered, Audit has no webhook."""
    cp, k = kyverno_plane
    policies = policy_docs(GENERATED)
    for p in policies:
        if p["kind"] == "ValidatingPolicy":
            p["spec"]["evaluation"]["admission"]["enabled"] = True
    install(k, policies, pods_of(docs(BEFORE))[0])
    config = cp.kube().get("/api/v1/namespaces/kyverno/configmaps/kyverno")["data"]
    webhooks = json.loads(config["webhooks"])
    assert webhooks["namespaceSelector"]["matchExpressions"] == [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": [ns]}
        for ns in ("kube-system", "kyverno")
    ]
    for policy in policies:
        name, spec = policy["metadata"]["name"], policy["spec"]
        mutating = policy["kind"] == "MutatingPolicy"
        (hook,) = k.webhooks_for("mutating" if mutating else "validating", name)
        prefix = "mpol" if mutating else "vpol"
        assert hook["name"] == f"{prefix}.validate.kyverno.svc-fail-finegrained-{name}"
        assert hook["clientConfig"]["url"] == f"https://127.0.0.1:{k.port}/{prefix}/{name}"
        assert hook["failurePolicy"] == spec["failurePolicy"] == "Fail"
        constraints = spec["matchConstraints"]
        assert hook["rules"] == [r | {"scope": "*"} for r in constraints["resourceRules"]]
        assert hook["namespaceSelector"] == _merged(
            constraints.get("namespaceSelector"), webhooks.get("namespaceSelector")
        )
        assert hook["objectSelector"] == _merged(
            constraints.get("objectSelector"), webhooks.get("objectSelector")
        )
        assert hook["matchConditions"] == spec["matchConditions"]
        assert constraints["namespaceSelector"]["matchExpressions"][0]["operator"] == "In"
        assert constraints["objectSelector"]
        assert hook["matchPolicy"] == "Equivalent" and hook["timeoutSeconds"] == 10
        assert hook["sideEffects"] == "NoneOnDryRun"
        if mutating:
            # the policy's reinvocationPolicy IfNeeded is not carried to its webhook
            assert spec["reinvocationPolicy"] == "IfNeeded"
            assert hook["reinvocationPolicy"] == "Never"


@pytest.mark.parametrize("suite", SUITES, ids=[s.key for s in SUITES])
def test_kyverno_admission_controller_runs_the_legacy_cluster_policies_as_the_cli(
    kyverno_plane: tuple[ControlPlane, Kyverno], suite: Suite
) -> None:
    """The kyverno-legacy engine (ClusterPolicy) through the same admission controller: the
    engine cases' pods and failed checks are what the CLI is held to. The validate
    ClusterPolicy's rules run in Audit with emitWarning true, so Kyverno admits every pod (an
    Enforce denial would hide the mutated pod) and warns once per rule it evaluated: a
    failed rule's warning is its message."""
    cp, k = kyverno_plane
    for ns in sorted({c.pod["metadata"]["namespace"] for c in suite.cases}):
        cp.ensure_namespace(ns)
    mutate, validate = [copy.deepcopy(f.objects[0]) for f in kyverno_legacy_policies(suite.intent)]
    validate["spec"]["emitWarning"] = True
    for rule in validate["spec"]["rules"]:  # the action is each rule's (validate.failureAction)
        rule["validate"]["failureAction"] = "Audit"
    check_of = {
        r["name"]: c
        for r, c in zip(validate["spec"]["rules"], check_ids(suite.intent), strict=True)
    }
    name = validate["metadata"]["name"]

    def checks(warnings: Sequence[str]) -> Checks:
        out = []
        for w in warnings:
            m = re.match(rf"^policy {re.escape(name)}\.(\S+): (.*)$", w, re.DOTALL)
            if m is None:
                continue  # another policy's warning (the mutate policy's)
            if not re.fullmatch(r"validation rule '\S+' passed\.", m[2]):
                out.append((check_of[m[1]], m[2]))
        return tuple(sorted(out))

    only = [c for c in suite.cases if not c.admission]
    admission = [c for c in suite.cases if c.admission]
    wrong = []
    unpinned = suite.case("unpinned-coordinator")
    try:
        k.apply([validate])
        wait_answered(
            cp,
            unpinned.pod,
            lambda a: checks(a[2]) == expected(unpinned, "kyverno-legacy", suite.intent).checks,
            "the ClusterPolicy at admission",
        )
        for case in only:
            status, body, warnings = create_pod_raw(cp, case.pod)
            assert status == 201, body
            want = expected(case, "kyverno-legacy", suite.intent).checks
            if checks(warnings) != want:
                wrong.append(f"{case.name}: expected {want}, got {warnings}")
        k.apply([mutate])
        first = expected(admission[0], "kyverno-legacy", suite.intent).pod
        wait_answered(cp, admission[0].pod, _mutated(first), "the mutate ClusterPolicy")
        for case in admission:
            status, body, warnings = create_pod_raw(cp, case.pod)
            assert status == 201, body
            want_ = expected(case, "kyverno-legacy", suite.intent)
            if project(body) != project(want_.pod):
                wrong.append(f"{case.name}: mutated {project(body)}\n  want {project(want_.pod)}")
            if checks(warnings) != want_.checks:
                wrong.append(f"{case.name}: expected {want_.checks}, got {warnings}")
    finally:
        k.delete([mutate, validate])
    assert not wrong, "\n".join(wrong)
