"""Every engine's limits on what topogen names, checked on the rendered objects.

An object an engine refuses or skips (Kyverno ignores a policy whose name is over 63
bytes: the name becomes a label key of its reports) would leave a group without the
policy it was rendered for, silently. So the render stops and says which group name is
too long, and by how much.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

from topogen.errors import InputError
from topogen.names import label_key_problem, label_value_problem, name_limit, object_name_problem
from topogen.render.base import RenderedFile
from topogen.render.vocabulary import GROUP_LABEL

__all__ = ["check_limits"]

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def check_limits(files: Iterable[RenderedFile], config: str) -> None:
    for f in files:
        for obj in f.objects:
            _check(obj, f.path, config)
        # the spellings of U+0085 topogen's writers produce: YAML's \N, JSON's \u0085, raw
        if f.path.endswith(".yaml") and any(s in f.text for s in ("\\N", "\\u0085", "\x85")):
            _no_nel(f, config)


def _no_nel(f: RenderedFile, config: str) -> None:
    """U+0085 survives topogen's YAML (escaped) but not kustomize, which writes it raw for
    kubectl to read as a space (tests/emit/test_yaml_readers.py): refuse it."""
    docs = f.objects or tuple(yaml.load_all(f.text, Loader=_Loader))
    for obj in docs:
        stack: list[Any] = [obj]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
            elif isinstance(item, str) and "\x85" in item:
                raise InputError(
                    f"{f.path}: a value holds U+0085 (next line), which kustomize writes raw "
                    f"and kubectl reads as a space: remove it from the input it comes from "
                    f"({item[:40]!r})",
                    path=config,
                )


def _check(obj: dict[str, Any], path: str, config: str) -> None:
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    labels = meta.get("labels") or {}
    group = labels.get(GROUP_LABEL)
    limit, whose = name_limit(str(obj.get("apiVersion", "")))
    size = len(name.encode())
    if size > limit:
        engine = path.split("/")[2] if path.startswith("policies/") else "topogen"
        shorter = (
            f"use a group name of at most {len(group) - (size - limit)} characters"
            if group and group in name
            else "use shorter names"
        )
        raise InputError(
            f"groups.{group or '?'}: engine {engine} names a {obj.get('kind')} {name} "
            f"({size} bytes; {whose} allows {limit}): {shorter}",
            path=config,
        )
    problem = object_name_problem(name, strict=True)
    for key, value in labels.items():
        problem = problem or label_key_problem(str(key)) or label_value_problem(str(value))
    if problem:
        raise InputError(f"a rendered {obj.get('kind')} {name}: {problem}", path=config)
