"""Workload patches: topogen's admission mutation written into the training manifests.

For teams that run no admission controller. Every pod template of every training
object that topogen.yaml's `workloads` name is mutated with the reference semantics
(render/reference.py `mutate()`, exactly what the generated policies do at
admission), and the difference becomes an RFC 6902 JSON patch with a Kustomize
target: group, version, kind, and the object's exact name and namespace.

Kustomize cannot "add if absent": a JSON patch is unconditional, and a strategic
merge patch replaces lists (tolerations, nodeSelectorTerms, podAffinity terms) and
knows no schema for the operators' CRDs. So the condition is decided here, at
render time, against the manifest as read:

- a field the template lacks is added whole (`add`);
- a list the template has is extended with `/-` appends, after a `test` op that
  pins its current value;
- a value that must change (a static identity label naming another zone) is
  `test`ed, then replaced.

If a manifest changes after the render, a pinned value no longer matches and
`kustomize build` fails ("testing value ... failed") instead of patching the wrong
thing: render again. What a `test` cannot pin is absence: a field added whole would
overwrite one the manifest gained since the render. Objects topogen was not given
are not patched at all.

A patch must be computed against the manifests' raw bodies, not against the parsed
model: sources read them (the objects and the Workloads made of them) and the pipeline
hands them in. Where each pod template is in its manifest is the operators' knowledge
(Workload.template_at, operators/).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from topogen.manifest import KubeObject
from topogen.model import Workload
from topogen.operators.base import ObjectIndex
from topogen.operators.registry import operator_for
from topogen.plaindata import copy_plain
from topogen.render.intent import AdmissionIntent
from topogen.render.reference import mutate_own, role_of

__all__ = ["WorkloadPatch", "json_patch_ops", "workload_patches"]

Json = dict[str, Any]
_TRAINJOB = ("trainer.kubeflow.org", "TrainJob")
_TRAINJOB_NODE = "node"  # the replicated job of Trainer v2 runtimes that runs the training
_MANAGER = "topogen.io/co-location"  # topogen's runtimePatches entry (listMapKey manager)
_REPLICATED_JOB = "jobset.sigs.k8s.io/replicatedjob-name"


@dataclass(frozen=True)
class WorkloadPatch:
    """One JSON patch for one object, with the Kustomize target that selects it."""

    api_version: str
    kind: str
    namespace: str  # "" when the manifest names none
    name: str
    ops: tuple[Json, ...]

    @property
    def target(self) -> dict[str, str]:
        group, _, version = self.api_version.rpartition("/")
        target = {
            "group": _literal(group),
            "version": _literal(version),
            "kind": _literal(self.kind),
            "name": _exact(self.name),
        }
        if self.namespace:
            target["namespace"] = _exact(self.namespace)
        return target


_RE2_META = re.compile(r"([\\.+*?()|\[\]{}^$])")


def _literal(text: str) -> str:
    """Go's regexp.QuoteMeta: kustomize compiles every target field (group, version, kind,
    name, namespace) as an anchored regular expression."""
    return _RE2_META.sub(r"\\\1", text)


def _exact(name: str) -> str:
    return "^" + _literal(name) + "$"


def pointer(parts: Iterable[str | int]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def json_patch_ops(before: Any, after: Any, path: str = "") -> list[Json]:
    """RFC 6902 ops turning `before` into `after`, where `after` only adds to `before`."""
    if before == after:
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        ops: list[Json] = []
        for key in sorted(after):
            sub = path + pointer([key])
            if key not in before:
                ops.append({"op": "add", "path": sub, "value": after[key]})
            else:
                ops += json_patch_ops(before[key], after[key], sub)
        return ops
    if isinstance(before, list) and isinstance(after, list):
        n = len(before)
        if len(after) >= n and after[:n] == before:
            pin = {"op": "test", "path": path, "value": before}
            return [pin, *({"op": "add", "path": f"{path}/-", "value": v} for v in after[n:])]
        if len(after) == n:
            return [
                op for i in range(n) for op in json_patch_ops(before[i], after[i], f"{path}/{i}")
            ]
    return [
        {"op": "test", "path": path, "value": before},
        {"op": "replace", "path": path, "value": after},
    ]


def _get(body: Any, parts: Sequence[str | int]) -> Any:
    for p in parts:
        if isinstance(body, dict) and isinstance(p, str):
            body = body.get(p)
        elif isinstance(body, list) and isinstance(p, int) and p < len(body):
            body = body[p]
        else:
            return None
    return body


def _admitted(template: Json, w: Workload, intents: Sequence[AdmissionIntent]) -> Json:
    """`template` with what admission would add to a pod of workload `w`."""
    labels = dict(w.template.labels)  # with the labels the operator adds to its pods
    pod: Json = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": w.namespace,
            "labels": dict(labels),
            "annotations": dict(w.template.annotations),
        },
        "spec": copy_plain(template.get("spec") or {}),
    }
    for intent in intents:  # the pod is this function's own: changed in place
        pod = mutate_own(pod, intent)
    # the template but its spec copied (the spec is the admitted pod's)
    out = {k: v if k == "spec" else copy_plain(v) for k, v in template.items()}
    out["spec"] = pod["spec"]
    added = {k: v for k, v in pod["metadata"]["labels"].items() if labels.get(k) != v}
    if added:
        meta = out.get("metadata")
        out["metadata"] = meta = dict(meta) if isinstance(meta, dict) else {}
        meta["labels"] = {**(meta.get("labels") or {}), **added}
    return out


def _pod_templates(obj: KubeObject, inputs: ObjectIndex) -> dict[str, Json]:
    """The raw pod template of each of `obj`'s PodSets, as its operator makes them."""
    op = operator_for(obj.api_version, obj.kind)
    if op is None:
        return {}
    return {ps.replica: copy_plain(ps.template) for ps in op.pods(obj, inputs) if ps.template}


def _trainjob_ops(
    obj: KubeObject,
    members: Sequence[Workload],
    intents: Sequence[AdmissionIntent],
    inputs: ObjectIndex,
) -> list[Json] | str:
    """A TrainJob has no pod template: append an entry to its patches field.

    runtimePatches (Trainer v2.2+; also when it sets none): an entry of topogen's own
    manager patching each member replicated job's pod template with what admission adds
    (strategic merge: the tolerations and affinity whole, the labels added).
    podTemplateOverrides (v2.1): an entry for `node`; its rank 0 and the other nodes
    share it, so it carries what both roles get (the workers' term names rank 0, which
    rank 0 matches itself). podSpecOverrides (v2.0) cannot say affinity: reported.
    """
    spec = _get(obj.body, ("spec",)) or {}
    if "podSpecOverrides" in spec:
        return "uses podSpecOverrides (Trainer v2.0), which cannot set affinity: use runtimePatches"
    if "podTemplateOverrides" in spec:
        return _template_override_ops(spec, members, intents)
    templates = _pod_templates(obj, inputs)
    by_job: dict[str, list[Workload]] = {}
    for w in members:
        by_job.setdefault(w.template.labels.get(_REPLICATED_JOB, ""), []).append(w)
    jobs: list[Json] = []
    for name in sorted(by_job):
        before = templates.get(by_job[name][0].replica_name) or {"spec": {}}
        after = before
        for w in by_job[name]:
            after = _admitted(after, w, intents)
        changed = {k: v for k, v in after["spec"].items() if before["spec"].get(k) != v}
        pod: Json = {"spec": changed} if changed else {}
        labels = (after.get("metadata") or {}).get("labels") or {}
        old = (before.get("metadata") or {}).get("labels") or {}
        added = {k: v for k, v in labels.items() if old.get(k) != v}
        if added:
            pod["metadata"] = {"labels": added}
        if pod:
            jobs.append({"name": name, "template": {"spec": {"template": pod}}})
    if not jobs:
        return []
    entry = {
        "manager": _MANAGER,
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": jobs}}},
    }
    patches = spec.get("runtimePatches")
    if patches is None:
        return [{"op": "add", "path": "/spec/runtimePatches", "value": [entry]}]
    return [
        {"op": "test", "path": "/spec/runtimePatches", "value": patches},
        {"op": "add", "path": "/spec/runtimePatches/-", "value": entry},
    ]


def _template_override_ops(
    spec: Json, members: Sequence[Workload], intents: Sequence[AdmissionIntent]
) -> list[Json]:
    overrides = spec.get("podTemplateOverrides")
    effective: Json = {}
    for o in overrides or []:
        targets = [t.get("name") for t in (o.get("targetJobs") or []) if isinstance(t, dict)]
        if targets and _TRAINJOB_NODE not in targets:
            continue
        for key in ("nodeSelector", "affinity", "tolerations"):
            if key in (o.get("spec") or {}):
                effective[key] = copy_plain(o["spec"][key])
    before: Json = {"spec": effective}
    after = before
    for w in members:
        after = _admitted(after, w, intents)
    changed = {k: v for k, v in after["spec"].items() if effective.get(k) != v}
    if not changed and not after.get("metadata"):
        return []
    entry: Json = {"targetJobs": [{"name": _TRAINJOB_NODE}], "spec": changed}
    if after.get("metadata"):
        entry["metadata"] = after["metadata"]
    if overrides is None:
        return [{"op": "add", "path": "/spec/podTemplateOverrides", "value": [entry]}]
    return [
        {"op": "test", "path": "/spec/podTemplateOverrides", "value": overrides},
        {"op": "add", "path": "/spec/podTemplateOverrides/-", "value": entry},
    ]


def _object_ops(
    obj: KubeObject,
    members: Sequence[Workload],
    intents: Sequence[AdmissionIntent],
    inputs: ObjectIndex,
) -> list[Json] | str:
    if (obj.group, obj.kind) == _TRAINJOB:
        return _trainjob_ops(obj, members, intents, inputs)
    sites: dict[tuple[str | int, ...], list[Workload]] = {}
    made: dict[tuple[str | int, ...], Json] = {}
    for w in members:
        at = w.template_at
        if at is None:
            if (obj.group, obj.kind) == ("ray.io", "RayJob") and w.replica_name == "submitter":
                # KubeRay's default submitter: written out in the field that replaces it
                at = ("spec", "submitterPodTemplate")
                made[at] = _pod_templates(obj, inputs)[w.replica_name]
            else:
                return f"no pod template in the manifest for {w.replica_name or 'its pods'}"
        sites.setdefault(at, []).append(w)
    ops: list[Json] = []
    for at in sorted(sites, key=lambda parts: pointer(parts)):
        if at in made:
            after = made[at]
            for w in sites[at]:
                after = _admitted(after, w, intents)
            ops.append({"op": "add", "path": pointer(at), "value": after})
            continue
        before = _get(obj.body, at)
        if not isinstance(before, dict):
            return f"the pod template at {pointer(at)} is not a mapping"
        after = before  # _admitted copies what it changes, never its template
        for w in sites[at]:
            after = _admitted(after, w, intents)
        ops += json_patch_ops(before, after, pointer(at))
    return ops


def workload_patches(
    objects: Sequence[KubeObject],
    workloads: Sequence[Workload],
    intents: Sequence[AdmissionIntent],
) -> tuple[list[WorkloadPatch], list[str]]:
    """JSON patches for the training objects among `objects` (whose Workloads, as sources
    read them, are `workloads`), and the ones left unpatched."""
    # an intent acts only in its namespaces (reference.role_of): look only at those
    by_namespace: dict[str, list[AdmissionIntent]] = {}
    for intent in intents:
        for ns in intent.namespaces:
            by_namespace.setdefault(ns, []).append(intent)
    members: dict[tuple[str, str, str, str], list[Workload]] = {}
    by_key = {(o.api_version, o.kind, o.applied_namespace, o.name): o for o in objects}
    for w in workloads:
        pod = {
            "metadata": {
                "namespace": w.namespace,
                "labels": dict(w.template.labels),
                "annotations": dict(w.template.annotations),
            }
        }
        if any(role_of(pod, i) for i in by_namespace.get(w.namespace, ())):
            members.setdefault((w.api_version, w.kind, w.namespace, w.name), []).append(w)
    patches: list[WorkloadPatch] = []
    skipped: list[str] = []
    inputs = ObjectIndex(objects)
    for key in sorted(members):
        obj = by_key[key]
        ops = _object_ops(obj, members[key], by_namespace.get(key[2], ()), inputs)
        if isinstance(ops, str):
            skipped.append(f"{obj.where()}: {ops}")
        elif ops:
            patches.append(
                WorkloadPatch(obj.api_version, obj.kind, obj.namespace, obj.name, tuple(ops))
            )
    return patches, skipped
