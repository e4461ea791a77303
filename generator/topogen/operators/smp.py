"""Kubernetes strategic merge patch, as far as pod templates and JobSet specs need it.

The Trainer merges a TrainJob's overrides and runtime patches into its runtime with
k8s.io/apimachinery's strategicpatch.StrategicMergePatch, whose rules come from the Go
types' struct tags (k8s.io/api core/v1 types.go; JobSet v0.12 tags replicatedJobs):
mappings merge key by key (null deletes), a list with a merge key merges item by item
(an item of the patch replaces the fields it sets of the base item with the same key,
new keys are appended), and every other list (tolerations, node selector terms, pod
affinity terms, args) is replaced whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from topogen.errors import InputError

__all__ = ["MERGE_KEYS", "copy_plain", "strategic_merge"]

# field name -> the merge key of its list (k8s.io/api@v0.36.3 core/v1 patchMergeKey tags;
# JobSet v0.12 api/jobset/v1alpha2 JobSetSpec.replicatedJobs)
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "ports": "containerPort",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "volumes": "name",
    "imagePullSecrets": "name",
    "schedulingGates": "name",
    "resourceClaims": "name",
    "replicatedJobs": "name",
}


def copy_plain(value: Any) -> Any:
    """A deep copy of plain data (mappings, lists, scalars), as YAML holds it."""
    if isinstance(value, Mapping):
        return {k: copy_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_plain(v) for v in value]
    return value


def strategic_merge(base: Any, patch: Any, where: str, path: str) -> Any:
    """`patch` merged into `base` (neither is changed); `where` names the patch in errors."""
    if isinstance(patch, Mapping) and isinstance(base, Mapping):
        out = dict(copy_plain(base))
        for key, value in patch.items():
            if isinstance(key, str) and key.startswith("$"):
                raise InputError(f"{where}: the patch directive {key} is not supported", path=path)
            if value is None:
                out.pop(key, None)
            elif key in MERGE_KEYS and isinstance(value, list) and isinstance(out.get(key), list):
                out[key] = _merge_list(out[key], value, MERGE_KEYS[key], f"{where}.{key}", path)
            elif key in out:
                out[key] = strategic_merge(out[key], value, f"{where}.{key}", path)
            else:
                out[key] = copy_plain(value)
        return out
    return copy_plain(patch)


def _merge_list(base: list[Any], patch: list[Any], key: str, where: str, path: str) -> list[Any]:
    out = [copy_plain(item) for item in base]
    at = {item.get(key): i for i, item in enumerate(out) if isinstance(item, Mapping)}
    for i, item in enumerate(patch):
        if not isinstance(item, Mapping) or key not in item:
            raise InputError(f"{where}[{i}] needs its {key}", path=path)
        if item[key] in at:
            j = at[item[key]]
            out[j] = strategic_merge(out[j], item, f"{where}[{i}]", path)
        else:
            at[item[key]] = len(out)
            out.append(copy_plain(dict(item)))
    return out
