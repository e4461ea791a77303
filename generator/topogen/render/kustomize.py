"""Kustomize: the kustomize/ tree over the rendered policies, for GitOps.

    policies/<cluster>/<engine>/kustomization.yaml   the policy files of a folder
    monitoring/<cluster>/kustomization.yaml          (any folder of objects, tests/ excluded)
    kustomize/base/                                  Component: what every overlay applies
    kustomize/overlays/<cluster>/                    everything rendered for one cluster
    kustomize/components/audit/, enforce/            the validation action of the policies
    kustomize/components/workload-patches/<cluster>/ the mutation as patches of the manifests
    kustomize/components/gatekeeper-fail-closed/     Gatekeeper's webhooks with failurePolicy
                                                     Fail (gatekeeper.failurePolicy: Fail)

Only current Kustomize fields (resources, components, patches, labels). Kustomization
files hold no Kubernetes objects: they never reach `topogen render --stdout`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

import yaml

from topogen.config import TopogenConfig
from topogen.errors import InternalError
from topogen.render.base import RenderedFile, render_text, to_yaml
from topogen.render.intent import AdmissionIntent, intent_for
from topogen.render.kyverno import API_SERVER_LABEL
from topogen.render.planned import PlannedCluster, PlannedReport
from topogen.render.vocabulary import CLUSTER_LABEL, MANAGED_BY, ROLE_LABEL, enforcement
from topogen.render.workload_patches import WorkloadPatch, workload_patches
from topogen.yamlfast import load_all_fast

__all__ = [
    "DEPRECATED_FIELDS",
    "GATEKEEPER_WEBHOOKS",
    "SYNC_WAVES",
    "kustomize_files",
    "workload_patch_files",
]

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
ROOT = "kustomize"
KUSTOMIZATION = "kustomization.yaml"
# Fields Kustomize deprecated (v5) and topogen never writes.
DEPRECATED_FIELDS = frozenset(
    {"bases", "commonLabels", "patchesJson6902", "patchesStrategicMerge", "vars", "imageTags"}
)
_KINDS = {
    "kustomize.config.k8s.io/v1beta1": "Kustomization",
    "kustomize.config.k8s.io/v1alpha1": "Component",
}
# component -> the validation action, per engine (Gatekeeper's: _gatekeeper_action)
_ACTIONS: dict[str, dict[str, Any]] = {
    "audit": {
        "kyverno": ["Audit"],
        "kyverno_legacy": "Audit",
        "native": ["Audit"],
    },
    "enforce": {
        "kyverno": ["Deny"],
        "kyverno_legacy": "Enforce",
        "native": ["Deny"],
    },
}
# gatekeeper.failurePolicy: Fail -> Gatekeeper's own webhooks, as its install names them
GATEKEEPER_WEBHOOKS = (
    (
        "ValidatingWebhookConfiguration",
        "gatekeeper-validating-webhook-configuration",
        "validation.gatekeeper.sh",
    ),
    (
        "MutatingWebhookConfiguration",
        "gatekeeper-mutating-webhook-configuration",
        "mutation.gatekeeper.sh",
    ),
)
_MANAGED = "=".join(MANAGED_BY)
# Argo CD sync waves of topogen's admission objects (kustomize/base; --stdout sets the same)
SYNC_WAVES: list[tuple[dict[str, str], str]] = [
    ({"group": "policies.kyverno.io", "labelSelector": _MANAGED}, "-1"),
    ({"group": "kyverno.io", "kind": "ClusterPolicy", "labelSelector": _MANAGED}, "-1"),
    ({"group": "templates.gatekeeper.sh", "labelSelector": _MANAGED}, "-2"),
    ({"group": "constraints.gatekeeper.sh", "labelSelector": _MANAGED}, "-1"),
    ({"group": "mutations.gatekeeper.sh", "labelSelector": _MANAGED}, "-1"),
    ({"group": "admissionregistration.k8s.io", "labelSelector": _MANAGED}, "-1"),
]


def _kustomization(path: str, template: str, **values: Any) -> RenderedFile:
    """Render a kustomization template; parse it back and check its kind and fields."""
    text = render_text(f"kustomize/{template}", **values)
    fast = load_all_fast(text)  # the C loader's result, faster (None: let it say why)
    try:
        docs = fast[0] if fast is not None else list(yaml.load_all(text, Loader=_Loader))
        doc = docs[0] if len(docs) == 1 else None
    except yaml.YAMLError as exc:
        raise InternalError(f"template kustomize/{template} rendered invalid YAML: {exc}") from None
    if not isinstance(doc, dict) or _KINDS.get(doc.get("apiVersion", "")) != doc.get("kind"):
        raise InternalError(f"template kustomize/{template} rendered no Kustomization/Component")
    old = sorted(DEPRECATED_FIELDS & set(doc))
    if old:
        raise InternalError(f"template kustomize/{template} uses deprecated fields: {old}")
    return RenderedFile(path, text)


def _object_folders(files: Sequence[RenderedFile]) -> dict[str, list[str]]:
    """folder -> its files that hold Kubernetes objects (CLI tests excluded)."""
    folders: dict[str, list[str]] = {}
    for f in files:
        p = PurePosixPath(f.path)
        if f.objects and p.parts[0] != ROOT and "tests" not in p.parts:
            folders.setdefault(str(p.parent), []).append(p.name)
    return {d: sorted(names) for d, names in sorted(folders.items())}


def _legacy_validate_rules(files: Sequence[RenderedFile]) -> dict[str, dict[str, int]]:
    """name -> cluster -> rule count of every kyverno-legacy validate ClusterPolicy."""
    out: dict[str, dict[str, int]] = {}
    for f in files:
        cluster = _cluster_of(str(PurePosixPath(f.path).parent))
        for o in f.objects:
            labels = o.get("metadata", {}).get("labels", {})
            if o.get("kind") == "ClusterPolicy" and labels.get(ROLE_LABEL) == "validate":
                rules = len(o["spec"]["rules"])
                out.setdefault(o["metadata"]["name"], {})[cluster or ""] = rules
    return out


def _legacy_action_patches(rules: Mapping[str, Mapping[str, int]], action: str) -> list[Any]:
    """One patch per ClusterPolicy setting every rule's validate.failureAction (the
    per-rule field; spec.validationFailureAction is deprecated). A policy with other rules
    in another cluster gets a patch per cluster, selected by the overlay's cluster label."""
    out: list[Any] = []
    selector = f"{_MANAGED},{ROLE_LABEL}=validate"
    for name, by_cluster in sorted(rules.items()):
        counts = set(by_cluster.values())
        plan = [("", counts.pop())] if len(counts) == 1 else sorted(by_cluster.items())
        for cluster, n in plan:
            where = f",{CLUSTER_LABEL}={cluster}" if cluster else ""
            ops = [
                {"op": "add", "path": f"/spec/rules/{i}/validate/failureAction", "value": action}
                for i in range(n)
            ]
            # the name is topogen-<group>-validate: a DNS label, no regex metacharacters
            out.append({"name": f"^{name}$", "selector": selector + where, "ops": ops})
    return out


def _gatekeeper_action(
    component: str, cfg: TopogenConfig
) -> tuple[str, list[dict[str, Any]] | None]:
    """A Component's enforcementAction for Gatekeeper's Constraints, as render gives it,
    and scopedEnforcementActions when scoped (audit: audit and gator only, unless
    gatekeeper.auditAtAdmission)."""
    action = "Enforce" if component == "enforce" else "Audit"
    return enforcement(action, cfg.audit_at_admission_for("gatekeeper"))


def _cluster_of(folder: str) -> str | None:
    """policies/<cluster>/<engine>, monitoring/<cluster>, ...: the cluster part."""
    parts = PurePosixPath(folder).parts
    return parts[1] if len(parts) > 1 else None


def _intents(ca: PlannedCluster, cfg: TopogenConfig) -> list[AdmissionIntent]:
    action = cfg.validation_action_for(cfg.cluster(ca.cluster))
    vap = cfg.kyverno.generate_validating_admission_policy
    return [
        intent_for(
            p, action, api_server_validation=vap, audit_at_admission=cfg.kyverno.audit_at_admission
        )
        for p in ca.plans
        if p.enforceable and not p.refused
    ]


def _patch_file(p: WorkloadPatch, taken: set[str]) -> str:
    stem = f"{p.namespace or 'default'}.{p.kind.lower()}.{p.name}"
    name, n = f"{stem}.yaml", 1
    while name in taken:  # e.g. batch/v1 Job and batch.volcano.sh/v1alpha1 Job of one name
        n += 1
        name = f"{stem}-{n}.yaml"
    taken.add(name)
    return name


def _workload_patches(
    cluster: str, intents: Sequence[AdmissionIntent], report: PlannedReport
) -> list[RenderedFile]:
    folder = f"{ROOT}/components/workload-patches/{cluster}"
    patches: list[WorkloadPatch] = []
    skipped: list[str] = []
    if intents:  # against the manifests as the analysis read them
        patches, skipped = workload_patches(report.read.objects, report.read.workloads, intents)
    out: list[RenderedFile] = []
    entries: list[dict[str, Any]] = []
    taken: set[str] = {KUSTOMIZATION}
    for p in patches:
        name = _patch_file(p, taken)
        out.append(RenderedFile(f"{folder}/{name}", to_yaml(list(p.ops)) + "\n"))
        entries.append({"path": name, "target": p.target})
    out.append(
        _kustomization(
            f"{folder}/{KUSTOMIZATION}",
            "workload-patches.yaml.j2",
            cluster=cluster,
            patches=entries,
            skipped=skipped,
        )
    )
    return out


def _overlay(cluster: str, folders: Sequence[str]) -> RenderedFile:
    up = "../../../"
    return _kustomization(
        f"{ROOT}/overlays/{cluster}/{KUSTOMIZATION}",
        "overlay.yaml.j2",
        cluster=cluster,
        resources=[up + d for d in folders if _cluster_of(d) == cluster],
        components=["../../base"],
        labels=[{"pairs": {CLUSTER_LABEL: cluster}, "includeSelectors": False}],
    )


def workload_patch_files(
    ca: PlannedCluster, report: PlannedReport, cfg: TopogenConfig
) -> list[RenderedFile]:
    """kustomize/components/workload-patches/<cluster>/: the mutation as manifest patches."""
    return _workload_patches(ca.cluster, _intents(ca, cfg), report)


def kustomize_files(
    files: Sequence[RenderedFile],
    report: PlannedReport,
    cfg: TopogenConfig,
    patches: Mapping[str, list[RenderedFile]],
) -> list[RenderedFile]:
    """The kustomize/ tree (and a kustomization.yaml per folder of objects) for `files`;
    `patches`: each cluster's workload_patch_files."""
    folders = _object_folders(files)
    out = [
        _kustomization(f"{d}/{KUSTOMIZATION}", "resources.yaml.j2", resources=names)
        for d, names in folders.items()
    ]
    out.append(_kustomization(f"{ROOT}/base/{KUSTOMIZATION}", "base.yaml.j2", waves=SYNC_WAVES))
    legacy = _legacy_validate_rules(files)
    for name, actions in sorted(_ACTIONS.items()):
        constraint_action, scoped = _gatekeeper_action(name, cfg)
        actions = {**actions, "gatekeeper": constraint_action}
        out.append(
            _kustomization(
                f"{ROOT}/components/{name}/{KUSTOMIZATION}",
                "validation-action.yaml.j2",
                legacy=_legacy_action_patches(legacy, actions["kyverno_legacy"]),
                **actions,
                api_server=name == "enforce",
                at_admission=name == "enforce" or cfg.kyverno.audit_at_admission,
                gatekeeper_scoped=scoped,
                api_server_selector="app.kubernetes.io/managed-by=topogen,"
                + "=".join(API_SERVER_LABEL),
            )
        )
    for ca in sorted(report.clusters, key=lambda c: c.cluster):
        out.append(_overlay(ca.cluster, list(folders)))
        out += patches[ca.cluster]
    gatekeeper = any(
        "gatekeeper" in cfg.engines_for(cfg.cluster(c.cluster)) for c in report.clusters
    )
    if gatekeeper and cfg.gatekeeper.failure_policy == "Fail":
        out.append(
            _kustomization(
                f"{ROOT}/components/gatekeeper-fail-closed/{KUSTOMIZATION}",
                "gatekeeper-fail-closed.yaml.j2",
                webhooks=GATEKEEPER_WEBHOOKS,
                failure_policy="Fail",
            )
        )
    return out
