"""Workload manifests into Workloads: one per pod template, with the labels its pods get.

Which kinds are workloads, and the pods each creates, is the operators' knowledge
(operators/registry.py); this module checks the counts and parses the templates.
"""

from __future__ import annotations

from collections.abc import Iterable

from topogen.errors import InputError
from topogen.manifest import KubeObject, check_name, labels_of
from topogen.model import Namespace, Workload
from topogen.operators.base import PodSet
from topogen.operators.registry import operator_for_kind
from topogen.sources.podspec import parse_pod_template
from topogen.sources.scope import namespace_of

__all__ = ["read_namespaces", "read_workloads"]


def read_workloads(objects: Iterable[KubeObject], skipped: list[str]) -> list[Workload]:
    out: list[Workload] = []
    for obj in objects:
        operator = operator_for_kind(obj.group, obj.kind)
        if operator is None:
            if obj.kind != "Namespace":
                skipped.append(f"{obj.path}: {obj.where()} ({obj.api_version}) is not a workload")
            continue
        check_name(obj)
        out.extend(_workload(obj, pods) for pods in operator.pods(obj))
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
        parse_pod_template(pods.template, what, obj, pods.labels),
        obj.path,
        pods.at,
    )
