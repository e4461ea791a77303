"""Kubeflow Trainer v2: a TrainJob merged into its runtime, as the trainer controller does.

The result is the JobSet spec the controller would apply (read from
github.com/kubeflow/trainer/v2@v2.0.0..v2.3.0 pkg/runtime/core/trainingruntime.go and
pkg/runtime/framework/plugins): the runtime's template spec, the TrainJob's patches
merged in (podSpecOverrides in v2.0, podTemplateOverrides in v2.1, runtimePatches from
v2.2), the pod counts of the ML policy and trainer.numNodes, and the trainer fields on
the container `node` of the trainer job (the replicated job labelled
trainer.kubeflow.org/trainjob-ancestor-step: trainer).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from topogen.errors import InputError
from topogen.operators.smp import copy_plain, strategic_merge

__all__ = [
    "ANCESTOR",
    "PATCH_FIELDS",
    "RUNTIME_KINDS",
    "TRAINER_PORT",
    "TrainerJobSet",
    "runtime_ref",
    "trainjob_jobset",
]

ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER, NODE, LAUNCHER = "trainer", "node", "launcher"
INITIALIZERS = ("dataset-initializer", "model-initializer")
TRAINER_PORT = 29500  # pkg/constants ContainerTrainerPort, upserted on the node container
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"  # coscheduling plugin's pod label
RUNTIME_KINDS = ("ClusterTrainingRuntime", "TrainingRuntime")
# the TrainJob fields that patch the runtime, newest first, with the release using each
PATCH_FIELDS = (
    ("runtimePatches", "Trainer v2.2 and newer"),
    ("podTemplateOverrides", "Trainer v2.1"),
    ("podSpecOverrides", "Trainer v2.0"),
)


@dataclass(frozen=True)
class TrainerJobSet:
    """The JobSet a TrainJob becomes."""

    spec: dict[str, Any]  # JobSet spec; each replicated job's parallelism = its pod count
    trainer: str  # the trainer job's name ("" when the runtime has none)
    initializers: tuple[str, ...]  # the initializer jobs, which finish before the trainer
    pod_labels: dict[str, str]  # labels the trainer's plugins add to every pod


def runtime_ref(spec: Mapping[str, Any], where: str, path: str) -> tuple[str, str]:
    """(kind, name) of spec.runtimeRef; kind defaults to ClusterTrainingRuntime."""
    ref = _map(spec.get("runtimeRef"), f"{where}: spec.runtimeRef", path)
    name, kind = ref.get("name"), ref.get("kind") or "ClusterTrainingRuntime"
    group = ref.get("apiGroup") or "trainer.kubeflow.org"
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}: spec.runtimeRef.name is required", path=path)
    if group != "trainer.kubeflow.org" or kind not in RUNTIME_KINDS:
        raise InputError(
            f"{where}: spec.runtimeRef names {group}/{kind}; topogen reads "
            f"{' and '.join(RUNTIME_KINDS)} of trainer.kubeflow.org",
            path=path,
        )
    return str(kind), name


def trainjob_jobset(
    trainjob: Mapping[str, Any], runtime: Mapping[str, Any], where: str, path: str
) -> TrainerJobSet:
    """The JobSet spec `trainjob` (its whole body) makes of `runtime` (its whole body)."""
    spec = _map(trainjob.get("spec"), f"{where}: spec", path)
    rspec = _map(runtime.get("spec"), f"{where}: the runtime's spec", path)
    template = _map(rspec.get("template"), f"{where}: the runtime's spec.template", path)
    jobset = copy_plain(dict(_map(template.get("spec"), f"{where}: runtime template spec", path)))
    jobs = _jobs(jobset, where, path)
    used = [f for f, _ in PATCH_FIELDS if spec.get(f)]
    if len(used) > 1:
        raise InputError(
            f"{where}: sets {' and '.join(used)}; a Trainer release reads only one of them "
            f"({'; '.join(f'{f}: {r}' for f, r in PATCH_FIELDS)})",
            path=path,
        )
    flavour = used[0] if used else ""
    if flavour == "runtimePatches":
        _runtime_patches(jobs, spec, where, path)
    elif flavour:
        _overrides(jobs, spec, flavour, where, path)
    policy = _map(rspec.get("mlPolicy"), f"{where}: the runtime's mlPolicy", path)
    trainer_spec = _map(spec.get("trainer"), f"{where}: spec.trainer", path)
    trainer = _counts(jobs, rspec, policy, trainer_spec, where, path)
    _trainer_fields(jobs, trainer, policy, trainer_spec, flavour, where, path)
    labels: dict[str, str] = {}
    group_policy = _map(rspec.get("podGroupPolicy"), f"{where}: podGroupPolicy", path)
    if group_policy.get("coscheduling") is not None:
        labels[POD_GROUP_LABEL] = str(_map(trainjob.get("metadata"), "metadata", path)["name"])
    initializers = tuple(j["name"] for j in jobs if _ancestor(j) in INITIALIZERS)
    return TrainerJobSet(jobset, trainer, initializers, labels)


def _map(value: Any, what: str, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{what} must be a mapping", path=path)
    return value


def _jobs(jobset: dict[str, Any], where: str, path: str) -> list[dict[str, Any]]:
    jobs = jobset.get("replicatedJobs")
    if not isinstance(jobs, list) or not all(isinstance(j, dict) for j in jobs):
        raise InputError(f"{where}: the runtime has no replicatedJobs list", path=path)
    for j in jobs:
        if not isinstance(j.get("name"), str):
            raise InputError(f"{where}: a replicated job of the runtime has no name", path=path)
        jt = j.setdefault("template", {})
        if not isinstance(jt, dict) or not isinstance(jt.setdefault("spec", {}), dict):
            raise InputError(f"{where}: replicated job {j['name']} has no Job template", path=path)
        if not isinstance(jt["spec"].setdefault("template", {}), dict):
            raise InputError(f"{where}: replicated job {j['name']} has no pod template", path=path)
    return jobs


def _ancestor(job: Mapping[str, Any]) -> str:
    meta = (job.get("template") or {}).get("metadata") or {}
    return str((meta.get("labels") or {}).get(ANCESTOR, ""))


def _pod_template(job: dict[str, Any]) -> dict[str, Any]:
    jt = job.setdefault("template", {})
    js = jt.setdefault("spec", {})
    out: dict[str, Any] = js.setdefault("template", {})
    return out


def _runtime_patches(
    jobs: list[dict[str, Any]], spec: Mapping[str, Any], where: str, path: str
) -> None:
    """v2.2+: each replicated job patch strategic-merged into that job's Job template."""
    by_name = {j["name"]: j for j in jobs}
    patches = spec.get("runtimePatches")
    if not isinstance(patches, list):
        raise InputError(f"{where}: spec.runtimePatches must be a list", path=path)
    for i, p in enumerate(patches):
        pw = f"{where}: spec.runtimePatches[{i}]"
        rts = _map(_map(p, pw, path).get("trainingRuntimeSpec"), f"{pw}.trainingRuntimeSpec", path)
        tmpl = _map(rts.get("template"), f"{pw}.trainingRuntimeSpec.template", path)
        for k, rj in enumerate(
            (_map(tmpl.get("spec"), f"{pw}...template.spec", path)).get("replicatedJobs") or []
        ):
            rw = f"{pw}.trainingRuntimeSpec.template.spec.replicatedJobs[{k}]"
            rjm = _map(rj, rw, path)
            job = by_name.get(rjm.get("name"))
            if job is None:
                raise InputError(
                    f"{rw}: the runtime has no replicated job {rjm.get('name')!r}", path=path
                )
            if rjm.get("template") is not None:
                job["template"] = strategic_merge(
                    job.get("template") or {}, rjm["template"], rw, path
                )


def _overrides(
    jobs: list[dict[str, Any]], spec: Mapping[str, Any], field: str, where: str, path: str
) -> None:
    """v2.1 podTemplateOverrides (metadata + spec) / v2.0 podSpecOverrides (pod spec)."""
    entries = spec.get(field)
    if not isinstance(entries, list):
        raise InputError(f"{where}: spec.{field} must be a list", path=path)
    for i, o in enumerate(entries):
        ow = f"{where}: spec.{field}[{i}]"
        om = _map(o, ow, path)
        targets = {
            _map(t, f"{ow}.targetJobs", path).get("name") for t in om.get("targetJobs") or []
        }
        for job in jobs:
            if job["name"] not in targets:
                continue
            pt = _pod_template(job)
            if field == "podSpecOverrides":
                spec_patch = {k: v for k, v in om.items() if k != "targetJobs"}
                pt["spec"] = strategic_merge(pt.get("spec") or {}, spec_patch, ow, path)
                continue
            meta = _map(om.get("metadata"), f"{ow}.metadata", path)
            patch: dict[str, Any] = {}
            kept = {k: meta[k] for k in ("labels", "annotations") if meta.get(k) is not None}
            if kept:
                patch["metadata"] = kept
            if om.get("spec") is not None:
                patch["spec"] = om["spec"]
            job["template"]["spec"]["template"] = strategic_merge(pt, patch, ow, path)


def _int(value: Any, what: str, path: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(f"{what} must be an integer of at least {minimum}", path=path)
    return value


def _counts(
    jobs: list[dict[str, Any]],
    rspec: Mapping[str, Any],
    policy: Mapping[str, Any],
    trainer: Mapping[str, Any],
    where: str,
    path: str,
) -> str:
    """Set each job's pod count (parallelism = completions) and replicas; the trainer's name."""
    has_policy = rspec.get("mlPolicy") is not None
    trainer_job = ""
    counts: dict[str, int] = {}
    for job in jobs:
        n = job["template"]["spec"].get("parallelism", 1)
        counts[job["name"]] = _int(n, f"{where}: replicated job {job['name']} parallelism", path)
        if _ancestor(job) == TRAINER and has_policy:
            counts[job["name"]] = _int(
                policy.get("numNodes", 1), f"{where}: the runtime's mlPolicy.numNodes", path, 1
            )
        if _ancestor(job) == TRAINER and not trainer_job:
            trainer_job = job["name"]
    nodes = trainer.get("numNodes")
    if nodes is not None:
        nodes = _int(nodes, f"{where}: spec.trainer.numNodes", path, 1)
        mpi = _map(policy.get("mpi"), f"{where}: mlPolicy.mpi", path) if "mpi" in policy else None
        if mpi is not None:  # the MPI plugin sets the `node` job, not the trainer job
            if NODE in counts:
                counts[NODE] = max(nodes - 1, 1) if mpi.get("runLauncherAsNode") else nodes
        elif trainer_job:
            counts[trainer_job] = nodes
    for job in jobs:
        js = job["template"]["spec"]
        js["parallelism"] = js["completions"] = counts[job["name"]]
        if _ancestor(job) in (TRAINER, *INITIALIZERS):
            job["replicas"] = 1
        else:
            job["replicas"] = _int(
                job.get("replicas", 1), f"{where}: replicas of {job['name']}", path
            )
    return trainer_job


def _trainer_fields(
    jobs: list[dict[str, Any]],
    trainer_job: str,
    policy: Mapping[str, Any],
    trainer: Mapping[str, Any],
    flavour: str,
    where: str,
    path: str,
) -> None:
    """image, command, args, env and resourcesPerNode on the container `node`."""
    mpi = policy.get("mpi") if isinstance(policy.get("mpi"), Mapping) else None
    as_node = bool(mpi and mpi.get("runLauncherAsNode"))
    resources = trainer.get("resourcesPerNode")
    for job in jobs:
        is_trainer = job["name"] == trainer_job
        # v2.3: with runLauncherAsNode the node job gets the resources too
        gets_resources = is_trainer or (
            as_node and job["name"] == NODE and flavour == "runtimePatches"
        )
        if not (is_trainer or gets_resources):
            continue
        for c in _pod_template(job).setdefault("spec", {}).get("containers") or []:
            if not isinstance(c, dict) or c.get("name") != NODE:
                continue
            if is_trainer:
                for key in ("image", "command", "args"):
                    if trainer.get(key) is not None:
                        c[key] = copy_plain(trainer[key])
                if trainer and any(policy.get(k) is not None for k in ("torch", "jax", "xgboost")):
                    ports = c.setdefault("ports", [])
                    if not any(
                        isinstance(p, dict) and p.get("containerPort") == TRAINER_PORT
                        for p in ports
                    ):
                        ports.append({"containerPort": TRAINER_PORT})
            if (
                gets_resources
                and isinstance(resources, Mapping)
                and (resources.get("limits") or resources.get("requests"))
            ):
                if flavour == "runtimePatches":  # v2.3 merges resource by resource
                    c["resources"] = strategic_merge(
                        c.get("resources") or {}, resources, where, path
                    )
                else:
                    c["resources"] = copy_plain(dict(resources))
