"""Generated tests for the Gatekeeper backend: `gator verify` suites for the checks and
Rego unit tests for `opa test`, with expected verdicts and messages from the reference
model (render/reference.py), over the Kyverno tests' validation cases.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from topogen.plaindata import copy_plain
from topogen.render.base import RenderedFile, render_text, to_yaml
from topogen.render.gatekeeper import coordinator_term, parameters
from topogen.render.intent import AdmissionIntent
from topogen.render.kyverno_tests import validation_cases
from topogen.render.reference import anchor_of, role_of, violations
from topogen.render.reference import coordinator_term as reference_term
from topogen.render.vocabulary import REQUIRED

__all__ = ["check_messages", "gatekeeper_test_files", "reference_checks"]

REGO = "gatekeeper/colocation.rego"

_REFERENCE_CHECK = (
    ("coordinator not pinned", "coordinator-pinned"),
    ("worker without pod affinity", "worker-affinity"),
    ("identity ", "identity"),
)


def reference_checks(pod: dict[str, Any], intent: AdmissionIntent) -> list[str]:
    """The reference model's violations as check ids (the Rego's details.check)."""
    out = []
    for v in violations(pod, intent):
        if v.startswith("spans denied zones "):
            a, b = v.removeprefix("spans denied zones ").split(" and ")
            out.append(f"denied:{a}:{b}")
            continue
        out.append(next(check for prefix, check in _REFERENCE_CHECK if v.startswith(prefix)))
    return out


def check_messages(
    pod: dict[str, Any], intent: AdmissionIntent, checks: Sequence[str]
) -> list[str]:
    """The message each check reports for this pod (the same text as the CEL policies)."""
    name = pod.get("metadata", {}).get("name") or "being created"
    out = []
    for check in checks:
        if check == "coordinator-pinned":
            out.append(
                f"pod {name}: the coordinator of group {intent.group} must be pinned to "
                f"{intent.zone_label} in [{', '.join(intent.zones)}] (topogen co-location)"
            )
        elif check == "worker-affinity":
            out.append(
                f"pod {name}: a worker of group {intent.group} must require pod affinity to "
                f"its coordinator on {intent.topology_key} (topogen co-location)"
            )
        elif check == "identity":
            assert intent.identity_label
            value = pod["metadata"]["labels"][intent.identity_label]
            out.append(
                f"pod {name}: identity label {intent.identity_label}={value} claims a zone "
                "the pod is not pinned to"
            )
        else:
            _, a, b = check.split(":")
            policies = next(p for x, y, p in intent.denied_zone_pairs if (x, y) == (a, b))
            out.append(
                f"pod {name}: node affinity spans {a} and {b}, whose traffic is denied by "
                f"{', '.join(policies)}"
            )
    return out


def _as_gatekeeper_worker(pod: dict[str, Any], intent: AdmissionIntent) -> dict[str, Any]:
    """A reference-mutated worker with the coordinator term in the mutator's form."""
    terms = pod["spec"]["affinity"]["podAffinity"][REQUIRED]
    wanted = reference_term(pod, intent)
    mine = coordinator_term(intent, anchor_of(pod["metadata"]["labels"], intent))
    pod["spec"]["affinity"]["podAffinity"][REQUIRED] = [mine if t == wanted else t for t in terms]
    return pod


def _test_pods(intent: AdmissionIntent) -> list[tuple[dict[str, Any], list[str]]]:
    """Pods with the checks they must fail: the validation cases of the Kyverno tests,
    plus a worker in the form Gatekeeper's own mutator leaves it."""
    pods = validation_cases(intent)
    out = [(p, reference_checks(p, intent) if role_of(p, intent) else []) for p in pods]
    worker = next(p for p in pods if p["metadata"]["name"] == "admitted-worker")
    own = _as_gatekeeper_worker(copy_plain(worker), intent)
    own["metadata"]["name"] = "gatekeeper-mutated-worker"
    out.append((own, reference_checks(worker, intent)))
    return out


def _regex(text: str) -> str:
    """An RE2 pattern matching text exactly (gator's message assertions)."""
    return "^" + re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", text) + "$"


def _suite(intent: AdmissionIntent, cases: list[tuple[dict[str, Any], list[str]]]) -> str:
    tests = []
    for pod, checks in cases:
        assertions: list[dict[str, Any]] = [{"violations": len(checks) if checks else "no"}]
        assertions += [
            {"message": _regex(m), "violations": 1} for m in check_messages(pod, intent, checks)
        ]
        tests.append(
            {
                "name": pod["metadata"]["name"],
                "object": f"cases/{pod['metadata']['name']}.yaml",
                "assertions": assertions,
            }
        )
    suite = {
        "apiVersion": "test.gatekeeper.sh/v1alpha1",
        "kind": "Suite",
        "metadata": {"name": intent.name},
        "tests": [
            {
                "name": intent.name,
                "template": f"../../{intent.name}-template.yaml",
                "constraint": f"../../{intent.name}-constraint.yaml",
                "cases": tests,
            }
        ],
    }
    return to_yaml(suite) + "\n"


def gatekeeper_test_files(intent: AdmissionIntent) -> list[RenderedFile]:
    """`gator verify tests/...` (the checks) and `opa test tests/<name>/rego` (the Rego)."""
    folder = f"tests/{intent.name}"
    cases = _test_pods(intent)
    files = [RenderedFile(f"{folder}/suite.yaml", _suite(intent, cases))]
    files += [
        RenderedFile(f"{folder}/cases/{p['metadata']['name']}.yaml", to_yaml(p) + "\n")
        for p, _ in cases
    ]
    rego_cases = [
        {
            "name": p["metadata"]["name"],
            "pod": p,
            "checks": sorted(checks),
            "messages": sorted(check_messages(p, intent, checks)),
        }
        for p, checks in cases
    ]
    source = render_text(REGO)
    tests = render_text(
        "gatekeeper/colocation_test.rego.j2", parameters=parameters(intent), cases=rego_cases
    )
    files += [
        RenderedFile(f"{folder}/rego/colocation.rego", source),
        RenderedFile(f"{folder}/rego/colocation_test.rego", tests),
    ]
    return files
