"""Profiles in detail: Trainer v2 rank 0, Kubeflow replica-type case, overrides, and the
workload kinds read (tests/operators/test_registry.py runs every operator through the
same cases)."""

from __future__ import annotations

from typing import Any

import pytest

from helpers import objects
from topogen.analysis.groups import find_groups
from topogen.config import GroupConfig
from topogen.model import TrainingGroup
from topogen.sources.workloads import read_workloads

from .samples import CPU_POD, JOBS, POD

MANIFESTS = JOBS


def _group(profile: str, **extra: Any) -> GroupConfig:
    data: dict[str, Any] = {"name": "g", "profile": profile, "namespaces": ["ml"], **extra}
    if profile == "custom":
        data.update(
            groupLabel="app",
            roleLabel="role",
            coordinatorRoles=["coordinator"],
            workerRoles=["gpu-worker"],
        )
    return GroupConfig.model_validate(data)


def _jobs(profile: str, text: str, **extra: Any) -> list[TrainingGroup]:
    skipped: list[str] = []
    return find_groups(_group(profile, **extra), read_workloads(objects(text), skipped))


def test_kubeflow_trainer_rank_0_is_the_coordinator() -> None:
    (job,) = _jobs("kubeflow-trainer", MANIFESTS["kubeflow-trainer"])
    (coord,) = [r for r in job.roles if r.name == "coordinator"]
    labels = coord.workloads[0].template.labels
    assert labels["batch.kubernetes.io/job-completion-index"] == "0"
    assert labels["jobset.sigs.k8s.io/replicatedjob-name"] == "node"
    assert coord.workloads[0].template.requests["nvidia.com/gpu"] == 1


@pytest.mark.parametrize("value", ["Master", "master"])
def test_kubeflow_replica_type_case_does_not_matter(value: str) -> None:
    text = f"""
    apiVersion: v1
    kind: Pod
    metadata:
      name: bert-master-0
      namespace: ml
      labels: {{training.kubeflow.org/job-name: bert, training.kubeflow.org/replica-type: {value}}}
    spec: {CPU_POD}
    ---
    apiVersion: v1
    kind: Pod
    metadata:
      name: bert-worker-0
      namespace: ml
      labels: {{training.kubeflow.org/job-name: bert, training.kubeflow.org/replica-type: Worker}}
    spec: {POD}
    """
    (job,) = _jobs("kubeflow-training-operator", text)
    assert {r.name: r.workloads[0].name for r in job.roles} == {
        "coordinator": "bert-master-0",
        "worker": "bert-worker-0",
    }


def test_profile_labels_can_be_overridden() -> None:
    text = MANIFESTS["volcano"].replace("name: master", "name: chief-0")
    (job,) = _jobs("volcano", text, coordinatorRoles=["chief-0"])
    assert {r.name for r in job.roles} == {"coordinator", "worker"}


def test_profile_ignores_other_namespaces_and_other_profiles_pods() -> None:
    assert (
        _jobs(
            "kubeflow-training-operator",
            MANIFESTS["kubeflow-training-operator"].replace("namespace: ml", "namespace: other"),
        )
        == []
    )
    assert _jobs("mpi-operator", MANIFESTS["volcano"]) == []


def test_non_workload_objects_are_skipped_and_listed() -> None:
    skipped: list[str] = []
    text = """
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: cfg, namespace: ml}
    ---
    apiVersion: v1
    kind: Namespace
    metadata: {name: ml}
    """
    assert read_workloads(objects(text), skipped) == []
    assert len(skipped) == 1 and "ConfigMap ml/cfg" in skipped[0]


@pytest.mark.parametrize(
    ("text", "kind", "replicas"),
    [
        (
            """
    apiVersion: apps/v1
    kind: StatefulSet
    metadata: {name: s, namespace: ml}
    spec: {replicas: 5, template: {metadata: {labels: {a: b}}, spec: {containers: []}}}
    """,
            "StatefulSet",
            5,
        ),
        (
            """
    apiVersion: batch/v1
    kind: CronJob
    metadata: {name: c, namespace: ml}
    spec:
      schedule: "* * * * *"
      jobTemplate: {spec: {parallelism: 2, template: {spec: {containers: []}}}}
    """,
            "CronJob",
            2,
        ),
        (
            """
    apiVersion: v1
    kind: Pod
    metadata: {name: p, namespace: ml, labels: {a: b}}
    spec: {containers: []}
    """,
            "Pod",
            1,
        ),
        (
            """
    apiVersion: kubeflow.org/v1
    kind: TFJob
    metadata: {name: t, namespace: ml}
    spec: {tfReplicaSpecs: {Chief: {replicas: 1, template: {spec: {containers: []}}}}}
    """,
            "TFJob",
            1,
        ),
    ],
)
def test_other_workload_kinds_are_read(text: str, kind: str, replicas: int) -> None:
    skipped: list[str] = []
    (w,) = read_workloads(objects(text), skipped)
    assert (w.kind, w.replicas, w.namespace) == (kind, replicas, "ml")
