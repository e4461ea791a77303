"""The rendered objects as one stream (`render --stdout`, `render -o yaml|json`), meaning
what `kustomize build kustomize/overlays/<cluster>` means: each object with its cluster
label and its Argo CD sync wave, as the overlay's labels and kustomize/base add them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from topogen.render.base import RenderedFile
from topogen.render.kustomize import SYNC_WAVES
from topogen.render.vocabulary import CLUSTER_LABEL

__all__ = ["applied_objects", "stream_json"]

SYNC_WAVE = "argocd.argoproj.io/sync-wave"
_OBJECT_TOPS = ("policies", "monitoring")


def applied_objects(files: Sequence[RenderedFile]) -> list[dict[str, Any]]:
    """Every object of `files` (path order) as its cluster's overlay builds it."""
    out: list[dict[str, Any]] = []
    for f in sorted(files, key=lambda f: f.path):
        parts = PurePosixPath(f.path).parts
        cluster = parts[1] if len(parts) > 2 and parts[0] in _OBJECT_TOPS else None
        out += [_as_applied(o, cluster) for o in f.objects]
    return out


def _as_applied(obj: Mapping[str, Any], cluster: str | None) -> dict[str, Any]:
    doc = dict(obj)
    meta = dict(doc.get("metadata") or {})
    if cluster is not None:
        meta["labels"] = {**(meta.get("labels") or {}), CLUSTER_LABEL: cluster}
    wave = _wave(obj)
    if wave is not None:
        meta["annotations"] = {**(meta.get("annotations") or {}), SYNC_WAVE: wave}
    doc["metadata"] = meta
    return doc


def _wave(obj: Mapping[str, Any]) -> str | None:
    """The sync wave kustomize/base's patches give `obj` (their targets, matched here)."""
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for target, wave in SYNC_WAVES:
        key, _, value = target["labelSelector"].partition("=")
        if (
            target["group"] == group
            and target.get("kind", obj.get("kind")) == obj.get("kind")
            and labels.get(key) == value
        ):
            return wave
    return None


def stream_json(files: Sequence[RenderedFile]) -> str:
    """The objects `--stdout` prints, as one `kind: List` JSON document."""
    body = {"apiVersion": "v1", "kind": "List", "items": applied_objects(files)}
    return json.dumps(body, indent=2, ensure_ascii=False) + "\n"
