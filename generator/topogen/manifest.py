"""Shared vocabulary: a Kubernetes manifest as read, and the shape checks its readers use.

KubeObject is what sources hand the readers of manifests (sources/, operators/) and what
render/ patches; the checks raise InputError naming the object and its file.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from topogen.errors import InputError
from topogen.names import check_labels, dns_label_problem, object_name_problem

__all__ = [
    "KubeObject",
    "as_bool",
    "as_list",
    "as_map",
    "as_str",
    "check_fields",
    "check_name",
    "labels_of",
    "string_map",
]


@dataclass(frozen=True)
class KubeObject:
    api_version: str
    kind: str
    namespace: str
    name: str
    body: Mapping[str, Any]
    path: str
    # where a namespaced object without metadata.namespace applies: the namespace kubectl
    # would use (`default`, or topogen.yaml's defaultNamespace / --namespace)
    default_namespace: str = "default"

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0] if "/" in self.api_version else ""

    @property
    def applied_namespace(self) -> str:
        """The namespace a namespaced object applies in: its own, else the default."""
        return self.namespace or self.default_namespace

    def where(self) -> str:
        ns = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {ns}{self.name}"


def as_map(value: Any, what: str, obj: KubeObject) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(
            f"{obj.where()}: {what} must be a mapping, got {type(value).__name__}", path=obj.path
        )
    return value


def as_list(value: Any, what: str, obj: KubeObject) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(
            f"{obj.where()}: {what} must be a list, got {type(value).__name__}", path=obj.path
        )
    return value


def string_map(value: Any, what: str, obj: KubeObject) -> dict[str, str]:
    """A label/selector map; every value must be a string (as Kubernetes requires)."""
    out: dict[str, str] = {}
    for key, val in as_map(value, what, obj).items():
        if not isinstance(key, str):
            raise InputError(f"{obj.where()}: {what} key {key!r} is not a string", path=obj.path)
        if val is None:
            val = ""
        if not isinstance(val, str):
            shown = str(val).lower() if isinstance(val, bool) else _as_written(val)
            raise InputError(
                f"{obj.where()}: {what}.{key} must be a string, got {type(val).__name__} {shown}",
                path=obj.path,
                hint=f'quote it: {key}: "{shown}"',
            )
        out[key] = val
    return out


def _as_written(val: Any) -> str:
    """A scalar roughly as the YAML spelt it (2024-01-01, 1.5), anything else as repr."""
    if isinstance(val, int | float | datetime.date):
        return str(val)
    return repr(val)


def as_bool(value: Any, what: str, obj: KubeObject, default: bool = False) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InputError(
            f"{obj.where()}: {what} must be true or false, got {value!r}",
            path=obj.path,
            hint="write it unquoted",
        )
    return value


def as_str(value: Any, what: str, obj: KubeObject) -> str:
    """An optional string field ("" when absent)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f"{obj.where()}: {what} must be a string, got {value!r}", path=obj.path)
    return value


def labels_of(obj: KubeObject) -> dict[str, str]:
    """The object's labels, each key and value checked as the API server checks them."""
    labels = string_map(
        as_map(obj.body.get("metadata"), "metadata", obj).get("labels"), "metadata.labels", obj
    )
    check_labels(labels, f"{obj.where()}: metadata.labels", obj.path)
    return labels


def check_name(obj: KubeObject) -> None:
    """The name of an object topogen reads (a Node, Namespace, workload or network policy)
    is a DNS subdomain, as the API server requires: it may become a file name, a pattern
    or a label value in the output."""
    problem = object_name_problem(obj.name, strict=True)
    if problem is None and obj.kind == "Namespace":
        problem = dns_label_problem(obj.name)
    if problem:
        raise InputError(f"{obj.where()}: metadata.name {problem}", path=obj.path)


def check_fields(data: Mapping[str, Any], allowed: set[str], what: str, obj: KubeObject) -> None:
    """kubectl applies with strict field validation: an unknown field is refused."""
    unknown = sorted(k for k in data if k not in allowed)
    if unknown:
        raise InputError(
            f"{obj.where()}: {what} has unknown field {unknown[0]!r}",
            path=obj.path,
            hint="the API server refuses fields its schema does not define",
        )
