"""Kyverno CLI test folders (cli.kyverno.io/v1alpha1 Test) for the generated policies.

Expected patched pods and verdicts come from the reference model (render/reference.py);
`kyverno test` then checks that the generated policies behave that way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from topogen.model import LabelSelector
from topogen.render.base import RenderedFile, to_yaml
from topogen.render.intent import MUTATE, AdmissionIntent
from topogen.render.kyverno import policy_names
from topogen.render.reference import mutate, role_of, sample_pods, violations
from topogen.render.vocabulary import REQUIRED

__all__ = ["kyverno_test_files", "validation_cases"]


def _stream(objs: Sequence[dict[str, Any]]) -> str:
    return "".join(f"---\n{to_yaml(o)}\n" for o in objs)


def _ref(pod: dict[str, Any]) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def validation_cases(intent: AdmissionIntent) -> list[dict[str, Any]]:
    """Pods for the validating policy: mutated (must pass) and hand-broken ones (must fail)."""
    pods = [mutate(p, intent) for p in sample_pods(intent)]
    for p in pods:
        p["metadata"]["name"] = f"admitted-{p['metadata']['name']}"
    raw = sample_pods(intent)
    unpinned = next(p for p in raw if p["metadata"]["name"] == "coordinator")
    unpinned["metadata"]["name"] = "unpinned-coordinator"
    bare_worker = next(p for p in raw if p["metadata"]["name"] == "worker")
    bare_worker["metadata"]["name"] = "worker-without-affinity"
    pods += [unpinned, bare_worker]
    for p in raw:  # a detached pod (KubeRay's submitter) that was not pinned
        if p["metadata"]["name"].startswith("detached-"):
            p["metadata"]["name"] = f"unpinned-{p['metadata']['name']}"
            pods.append(p)
    if intent.identity_label:
        spoof = mutate(
            next(p for p in sample_pods(intent) if p["metadata"]["name"] == "coordinator"), intent
        )
        spoof["metadata"]["name"] = "spoofed-identity"
        spoof["metadata"]["labels"][intent.identity_label] = "not-" + intent.zones[0]
        pods.append(spoof)
    for za, zb, _ in intent.denied_zone_pairs[:1]:
        span = mutate(
            next(p for p in sample_pods(intent) if p["metadata"]["name"] == "coordinator"), intent
        )
        span["metadata"]["name"] = "spans-denied-zones"
        terms = span["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"]
        terms[0]["matchExpressions"][-1]["values"] = [za, zb]
        if intent.identity_label:
            span["metadata"]["labels"].pop(intent.identity_label, None)
        pods.append(span)
    return pods


def _selected(pod: dict[str, Any], intent: AdmissionIntent, detached: LabelSelector | None) -> bool:
    """Whether the policy's objectSelector (kyverno.webhook_selectors) lets the pod in."""
    labels = pod["metadata"].get("labels") or {}
    if detached is None:
        return intent.job_label in labels
    return intent.job_label not in labels and detached.matches(labels)


def _mutation_test(
    intent: AdmissionIntent,
    policy: str,
    role: str,
    folder: str,
    detached: LabelSelector | None = None,
) -> list[RenderedFile]:
    pods = sample_pods(intent)
    roles = set(intent.roles) if role == MUTATE else {role}
    changed, unchanged, skipped = [], [], []
    for pod in pods:
        if role_of(pod, intent) not in roles or not _selected(pod, intent, detached):
            skipped.append(pod)
        elif mutate(pod, intent) != pod:
            changed.append(pod)
        else:
            unchanged.append(pod)
    results: list[dict[str, Any]] = []
    if changed:
        results.append(
            {
                "policy": policy,
                "isMutatingPolicy": True,
                "kind": "Pod",
                "resources": [_ref(p) for p in changed],
                "patchedResources": "patched.yaml",
                "result": "pass",
            }
        )
    if unchanged:
        results.append(
            {
                "policy": policy,
                "isMutatingPolicy": True,
                "kind": "Pod",
                "resources": [_ref(p) for p in unchanged],
                "result": "pass",
            }
        )
    if skipped:
        results.append(
            {
                "policy": policy,
                "isMutatingPolicy": True,
                "kind": "Pod",
                "resources": [_ref(p) for p in skipped],
                "result": "skip",
            }
        )
    test = {
        "apiVersion": "cli.kyverno.io/v1alpha1",
        "kind": "Test",
        "metadata": {"name": policy},
        "policies": [f"../../{policy}.yaml"],
        "resources": ["resources.yaml"],
        "results": results,
    }
    return [
        RenderedFile(f"{folder}/kyverno-test.yaml", to_yaml(test) + "\n"),
        RenderedFile(f"{folder}/resources.yaml", _stream(pods)),
        RenderedFile(f"{folder}/patched.yaml", _stream([mutate(p, intent) for p in changed])),
    ]


def _validation_test(
    intent: AdmissionIntent, policy: str, folder: str, detached: LabelSelector | None = None
) -> list[RenderedFile]:
    pods = validation_cases(intent)
    groups: dict[str, list[str]] = {"pass": [], "fail": [], "skip": []}
    for pod in pods:
        verdict = (
            "skip"
            if role_of(pod, intent) is None or not _selected(pod, intent, detached)
            else ("fail" if violations(pod, intent) else "pass")
        )
        groups[verdict].append(_ref(pod))
    results = [
        {
            "policy": policy,
            "isValidatingPolicy": True,
            "kind": "Pod",
            "resources": refs,
            "result": verdict,
        }
        for verdict, refs in groups.items()
        if refs
    ]
    test = {
        "apiVersion": "cli.kyverno.io/v1alpha1",
        "kind": "Test",
        "metadata": {"name": policy},
        "policies": [f"../../{policy}.yaml"],
        "resources": ["resources.yaml"],
        "results": results,
    }
    return [
        RenderedFile(f"{folder}/kyverno-test.yaml", to_yaml(test) + "\n"),
        RenderedFile(f"{folder}/resources.yaml", _stream(pods)),
    ]


def kyverno_test_files(intent: AdmissionIntent) -> list[RenderedFile]:
    out = []
    for policy, role, detached in policy_names(intent):
        if role == "validate":
            out += _validation_test(intent, policy, f"tests/{policy}", detached)
        else:
            out += _mutation_test(intent, policy, role, f"tests/{policy}", detached)
    return out
