"""Workload manifests into Workloads: one per group of pods of one template, with the labels
its pods get.

Which kinds are workloads, and the pods each creates, is the operators' knowledge
(operators/registry.py); this module checks the counts and parses the templates.
"""

from __future__ import annotations

from collections.abc import Iterable

from topogen.errors import InputError
from topogen.kueue.vocabulary import QUEUE_LABEL
from topogen.manifest import KubeObject, check_name, labels_of
from topogen.model import Namespace, Workload
from topogen.operators.base import ObjectIndex, PodSet
from topogen.operators.registry import operator_for
from topogen.sources.kueue import is_kueue_object
from topogen.sources.podspec import parse_pod_template
from topogen.sources.scope import namespace_of

__all__ = ["read_namespaces", "read_workloads"]

# objects that are no workload but shape one (a TrainJob's runtime): read, not reported
_INPUTS = ("Namespace", "TrainingRuntime", "ClusterTrainingRuntime")


def read_workloads(
    objects: Iterable[KubeObject], skipped: list[str], warnings: list[str] | None = None
) -> list[Workload]:
    objs = list(objects)
    inputs = ObjectIndex(objs, warnings)
    out: list[Workload] = []
    for obj in objs:
        operator = operator_for(obj.api_version, obj.kind)
        if operator is None:
            if obj.kind not in _INPUTS and not is_kueue_object(obj):
                skipped.append(f"{obj.path}: {obj.where()} ({obj.api_version}) is not a workload")
            continue
        check_name(obj)
        out.extend(_workload(obj, pods) for pods in operator.pods(obj, inputs))
    return out


def read_namespaces(objects: Iterable[KubeObject]) -> list[Namespace]:
    out = []
    for obj in objects:
        if obj.kind == "Namespace" and obj.api_version == "v1":
            check_name(obj)
            labels = labels_of(obj)
            labels.setdefault("kubernetes.io/metadata.name", obj.name)
            out.append(Namespace(obj.name, labels))
    return out


def _workload(obj: KubeObject, pods: PodSet) -> Workload:
    what, replicas = pods.where, pods.replicas
    if replicas is None:
        replicas = 1
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
        raise InputError(
            f"{obj.where()}: {what} replicas must be a non-negative integer", path=obj.path
        )
    if pods.template is None:
        raise InputError(f"{obj.where()}: {what} has no pod template", path=obj.path)
    return Workload(
        obj.kind,
        obj.api_version,
        namespace_of(obj),
        obj.name,
        pods.replica,
        replicas,
        parse_pod_template(pods.template, what, obj, pods.labels, pods.annotations),
        obj.path,
        pods.at,
        pods.indexed,
        pods.late,
        labels_of(obj).get(QUEUE_LABEL, ""),
    )
