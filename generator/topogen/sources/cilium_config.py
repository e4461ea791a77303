"""The cluster's own Cilium settings: the cilium-config ConfigMap the agent reads.

The agent (cilium/cilium v1.20.2, pkg/option/config.go) reads the ConfigMap mounted as a
folder, one file per key, each value trimmed (ReadDirConfig), through viper:
`labels` is a string slice (spf13/cast: split on white space), the booleans go through
strconv.ParseBool (anything else reads as false: GetBool drops the error), `enable-policy`
is lower-cased. topogen reads the keys that change its verdicts, from a ConfigMap named
cilium-config among a cluster's input files (a file in the cluster folder, a topogen
snapshot) or the live cluster; topogen.yaml's clusters[].cilium keys override them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from topogen.cilium.labelfilter import LabelPrefixError, parse_prefix
from topogen.errors import InputError
from topogen.manifest import KubeObject
from topogen.names import dns_label_problem

__all__ = [
    "CILIUM_CONFIG",
    "CILIUM_KEYS",
    "ClusterCilium",
    "is_cilium_config",
    "read_cilium_config",
]

CILIUM_CONFIG = "cilium-config"  # the ConfigMap's name (in Cilium's namespace)
# the keys topogen reads -> the CiliumSettings field each sets
CILIUM_KEYS = {
    "labels": "identity_labels",
    "enable-host-firewall": "host_firewall",
    "enable-policy": "policy_enforcement",
    "cluster-name": "cluster_name",
    "enable-node-selector-labels": "node_selector_labels",
}
_TRUE = {"1", "t", "T", "TRUE", "true", "True"}  # Go's strconv.ParseBool
_POLICY_MODES = ("default", "always", "never")


@dataclass(frozen=True)
class ClusterCilium:
    """What the cluster's cilium-config sets (CiliumSettings fields), and where it was read."""

    values: Mapping[str, Any]
    source: str  # "FILE: ConfigMap NS/cilium-config"


def is_cilium_config(obj: KubeObject) -> bool:
    return obj.group == "" and obj.kind == "ConfigMap" and obj.name == CILIUM_CONFIG


def read_cilium_config(objects: Iterable[KubeObject]) -> ClusterCilium | None:
    """The cilium-config ConfigMap among `objects` (None: there is none); two in different
    namespaces are an error (which agent is this cluster's?)."""
    found = [o for o in objects if is_cilium_config(o)]
    first = {(o.applied_namespace): o for o in found}
    if len(first) > 1:
        a, b = sorted(first.values(), key=lambda o: o.applied_namespace)[:2]
        raise InputError(
            f"two cilium-config ConfigMaps ({a.applied_namespace} in {a.path}, "
            f"{b.applied_namespace} in {b.path}): give topogen the one of the cluster's agent",
            path=b.path,
        )
    if not found:
        return None
    obj = found[0]
    data = obj.body.get("data")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(f"{obj.where()}: data is not a mapping", path=obj.path)
    values: dict[str, Any] = {}
    for key, field in CILIUM_KEYS.items():
        if key not in data:
            continue
        raw = data[key]
        if not isinstance(raw, str):
            raise InputError(
                f"{obj.where()}: data.{key} is not a string (a ConfigMap's values are)",
                path=obj.path,
            )
        values[field] = _value(obj, key, raw.strip())
    return ClusterCilium(values, f"{obj.path}: {obj.where()}")


def _value(obj: KubeObject, key: str, text: str) -> Any:
    if key == "labels":
        prefixes = tuple(text.split())
        for p in prefixes:
            try:
                parse_prefix(p)
            except LabelPrefixError as exc:
                raise InputError(f"{obj.where()}: data.labels: {exc}", path=obj.path) from None
        return prefixes
    if key == "enable-policy":
        mode = text.lower()
        if mode not in _POLICY_MODES:
            raise InputError(
                f"{obj.where()}: data.enable-policy is {text!r}, not one of "
                f"{', '.join(_POLICY_MODES)} (the agent refuses to start)",
                path=obj.path,
            )
        return mode
    if key == "cluster-name":
        problem = dns_label_problem(text)
        if problem:
            raise InputError(f"{obj.where()}: data.cluster-name: {problem}", path=obj.path)
        return text
    return text in _TRUE  # anything but Go's true spellings reads as false
