"""Fail closed: what a render that refuses a group would have taken away.

When a group is refused, `topogen render` writes nothing (unless asked for a partial
render): the tree keeps the group's policies, and an Argo CD sync of it prunes none.
This names those policies, so the message says what a partial render would remove.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from topogen.render.vocabulary import GROUP_LABEL

__all__ = ["policies_of"]

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def policies_of(out: Path, refused: Iterable[tuple[str, str]]) -> list[str]:
    """`kind name` of every object of the refused (cluster, group)s in the tree at `out`
    (policies/<cluster>/, the objects labelled with the group; CLI tests aside)."""
    found: set[str] = set()
    for cluster, group in refused:
        root = out / "policies" / cluster
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "tests")
            for name in sorted(filenames):
                if name.endswith((".yaml", ".yml")):
                    found.update(_objects(Path(dirpath) / name, group))
    return sorted(found)


def _objects(path: Path, group: str) -> list[str]:
    try:
        docs = list(yaml.load_all(path.read_text(encoding="utf-8"), Loader=_Loader))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []
    out = []
    for d in docs:
        meta = d.get("metadata") if isinstance(d, dict) else None
        if not isinstance(meta, dict):
            continue
        labels = meta.get("labels")
        if isinstance(labels, dict) and labels.get(GROUP_LABEL) == group:
            out.append(f"{d.get('kind')} {meta.get('name')}")
    return out
