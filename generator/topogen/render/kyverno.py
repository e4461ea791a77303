"""Kyverno CEL policies (policies.kyverno.io/v1 MutatingPolicy and ValidatingPolicy).

Kyverno registers one webhook per policy with its matchConstraints' selectors, so the API
server calls Kyverno only for pods of the group's namespaces that carry the job label: an
outage blocks no other pod. A detached pod (KubeRay's submitter) has no job label, and a
label selector cannot OR, so it gets a policy pair of its own (`-detached`,
`-detached-validate`) selecting it by its own label, pinned like the coordinator.

Under Enforce a ValidatingPolicy asks Kyverno to generate a native ValidatingAdmissionPolicy
and binding from it (`vpol-<name>`, spec.autogen.validatingAdmissionPolicy.enabled; config
kyverno.generateValidatingAdmissionPolicy): Kyverno v1.19.1's admissionpolicygenerator
copies matchConstraints, matchConditions, variables and validations as they are
(pkg/admissionpolicy/builder.go; the CEL is the native engine's, which the API server
runs), the binding carries validationActions, and Kyverno's webhook controller then
registers no webhook for the policy. The API server validates the pods itself: no webhook
round trip and no admission report on the pod's path, and validation holds while Kyverno
is down. Audit runs in the background scans of Kyverno's reports controller only
(evaluation.admission.enabled false: no webhook, no admission report on the pod's path,
the same PolicyReports), or on the webhook with config kyverno.auditAtAdmission. Enforce
stays on the webhook for a group in a namespace Kyverno's install leaves out (a
ValidatingAdmissionPolicy knows nothing of Kyverno's config), which carries no
API_SERVER_LABEL for the enforce Component.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from topogen.model import LabelSelector
from topogen.render import cel, cel_spread
from topogen.render.base import RenderedFile, render_documents
from topogen.render.intent import (
    MUTATE,
    AdmissionIntent,
    kyverno_library_annotations,
    policy_metadata,
)
from topogen.render.requirements import requirements

__all__ = [
    "API_SERVER_LABEL",
    "KYVERNO_EXCLUDED_NAMESPACES",
    "kyverno_policies",
    "policy_names",
    "webhook_selectors",
]

# a ValidatingPolicy Kyverno may turn into a ValidatingAdmissionPolicy under Enforce (what
# kustomize/components/enforce selects to switch the generation on)
API_SERVER_LABEL = ("topogen.io/api-server-validation", "allowed")
# left out of Kyverno's webhooks by its install (the `webhooks` namespaceSelector and
# resourceFilters of its ConfigMap, config/install-latest-testing.yaml)
KYVERNO_EXCLUDED_NAMESPACES = ("kube-node-lease", "kube-public", "kube-system", "kyverno")


def api_server_validation(intent: AdmissionIntent) -> bool:
    """Whether the group's ValidatingPolicies may become ValidatingAdmissionPolicies."""
    return intent.api_server_validation and not set(intent.namespaces) & set(
        KYVERNO_EXCLUDED_NAMESPACES
    )


def _meta(intent: AdmissionIntent, role: str) -> dict[str, Any]:
    what = "" if role == MUTATE else f"{role} "
    return policy_metadata(
        intent,
        role,
        kyverno_library_annotations(intent, f"topogen {what}co-location for {intent.group}"),
    )


def webhook_selectors(
    intent: AdmissionIntent, detached: LabelSelector | None = None
) -> dict[str, Any]:
    """matchConstraints' namespaceSelector and objectSelector: the group's namespaces (by
    the name label the API server sets on every namespace) and pods with the job label
    (`detached`: pods without it that this selector matches)."""
    pods: list[dict[str, Any]] = [{"key": intent.job_label, "operator": "Exists"}]
    if detached is not None:
        pods = [{"key": intent.job_label, "operator": "DoesNotExist"}, *requirements(detached)]
    return {
        "namespace_selector": {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "In",
                    "values": list(intent.namespaces),
                }
            ]
        },
        "object_selector": {"matchExpressions": pods},
    }


def policy_names(intent: AdmissionIntent) -> list[tuple[str, str, LabelSelector | None]]:
    """(name, role, detached selector) of each policy: the group's mutation (MUTATE: both
    roles) and validation; a detached selector's pair (coordinator, validate) after them."""
    out: list[tuple[str, str, LabelSelector | None]] = [
        (f"{intent.name}-{MUTATE}", MUTATE, None),
        (f"{intent.name}-validate", "validate", None),
    ]
    for i, d in enumerate(intent.detached):
        base = f"{intent.name}-detached" + (f"-{i + 1}" if len(intent.detached) > 1 else "")
        out += [(base, "coordinator", d), (f"{base}-validate", "validate", d)]
    return out


def joined(expressions: list[str]) -> str:
    """JSONPatch expressions -> one, their lists concatenated in order. Kyverno encodes the
    pod, applies the patch and decodes the pod once per mutation
    (pkg/cel/policies/mpol/compiler/json.go), the largest part of a MutatingPolicy's cost
    in its profile at admission, so each policy has one mutation. Every expression sees
    the pod as sent: each reads only its own field (tolerations, affinity, labels;
    directly and through its variables), which no other writes."""
    return expressions[0] if len(expressions) == 1 else " + ".join(f"({e})" for e in expressions)


def affinity_patch(intent: AdmissionIntent, role: str) -> str:
    """The pod, node and anti-affinity patches as one JSONPatch list: led by an add of an
    empty /spec/affinity where the pod has none, each then adds only its own field (one
    encode-patch-decode of the pod instead of one per patch). The node patch is in every
    list and always adds where there was no affinity, so none is left empty."""
    kinds: list[Callable[[bool], str]] = []
    if role != "coordinator":
        kinds.append(cel.mutation_pod_affinity_patch)
    kinds.append(lambda ensured: cel.mutation_node_affinity_patch(intent, ensured))
    if intent.job_excludes:
        kinds.append(cel_spread.mutation_anti_affinity_patch)
    if len(kinds) == 1:
        return kinds[0](False)
    return joined([cel.ENSURE_AFFINITY, *(k(True) for k in kinds)])


def _role_mutation(intent: AdmissionIntent, role: str) -> tuple[list[dict[str, str]], str]:
    """The variables and the one JSONPatch expression of a role's mutation."""
    variables: list[dict[str, str]] = []
    patches: list[str] = []
    if role == "coordinator":
        variables.append(
            {
                "name": "missingTolerations",
                "expression": cel.missing_tolerations(intent.tolerations),
            }
        )
        patches.append(cel.mutation_tolerations_patch())
    else:
        variables += [
            {"name": "coordinatorTerm", "expression": cel.coordinator_term(intent)},
            {"name": "hasCoordinatorTerm", "expression": cel.has_coordinator_term(intent)},
        ]
    patches.append(affinity_patch(intent, role))
    if cel.has_identity(intent):
        patches.append(cel.mutation_identity_patch(intent))
    return variables, joined(patches)


def mutating_policy(
    intent: AdmissionIntent, role: str, name: str = "", detached: LabelSelector | None = None
) -> RenderedFile:
    """role coordinator or worker (what the native engine derives its policies from), or
    MUTATE: both roles' mutations in one policy, the role chosen in its expression. One
    policy is one webhook whose matchConditions the API server evaluates per pod, after
    converting the pod to unstructured for them (k8s.io/apiserver
    pkg/admission/plugin/cel): one policy for both roles halves that per group pod."""
    variables = cel_spread.mutation_variables(intent)
    if role == MUTATE:
        coordinator_vars, coordinator = _role_mutation(intent, "coordinator")
        worker_vars, worker = _role_mutation(intent, "worker")
        variables += [
            {"name": "isCoordinator", "expression": cel.is_coordinator(intent)},
            *coordinator_vars,
            *worker_vars,
        ]
        patch = f"variables.isCoordinator ? ({coordinator}) : ({worker})"
    else:
        role_vars, patch = _role_mutation(intent, role)
        variables += role_vars
    name = name or f"{intent.name}-{role}"
    text, objs = render_documents(
        "kyverno/mutating-policy.yaml.j2",
        name=name,
        **_meta(intent, role),
        **webhook_selectors(intent, detached),
        match_conditions=cel.match_role(intent, role),
        variables=variables,
        patches=[patch],
    )
    return RenderedFile(f"{name}.yaml", text, objs)


def validating_policy(
    intent: AdmissionIntent, name: str = "", detached: LabelSelector | None = None
) -> RenderedFile:
    name = name or f"{intent.name}-validate"
    enforce = intent.validation_action == "Enforce"
    meta = _meta(intent, "validate")
    allowed = api_server_validation(intent)
    if allowed:
        meta["labels"][API_SERVER_LABEL[0]] = API_SERVER_LABEL[1]
    text, objs = render_documents(
        "kyverno/validating-policy.yaml.j2",
        name=name,
        **meta,
        actions=["Deny"] if enforce else ["Audit"],
        generate_vap=allowed and enforce,
        at_admission=enforce or intent.audit_at_admission,
        **webhook_selectors(intent, detached),
        match_conditions=cel.match_role(intent, None),
        variables=cel.validation_variables(intent),
        validations=cel.validations(intent),
    )
    return RenderedFile(f"{name}.yaml", text, objs)


def kyverno_policies(intent: AdmissionIntent) -> list[RenderedFile]:
    return [
        validating_policy(intent, name, detached)
        if role == "validate"
        else mutating_policy(intent, role, name, detached)
        for name, role, detached in policy_names(intent)
    ]
