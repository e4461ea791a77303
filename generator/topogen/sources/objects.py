"""Kubernetes objects from YAML documents: lists flattened, shapes checked, duplicates refused."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from fractions import Fraction
from typing import Any

from topogen.errors import InputError
from topogen.manifest import KubeObject
from topogen.sources.yamlio import Document

__all__ = ["flatten", "parse_quantity"]

SNAPSHOT_KIND = "TopogenSnapshot"


def flatten(docs: Iterable[Document]) -> Iterator[KubeObject]:
    """Every object of every document; `kind: List`, `*List` and snapshots are expanded."""
    seen: dict[tuple[str, str, str, str], str] = {}
    for doc in docs:
        for body in _expand(doc.data, doc.path):
            obj = _to_object(body, doc.path)
            key = (obj.group, obj.kind, obj.namespace, obj.name)
            if key in seen:
                first = seen[key]
                also = f" (first in {first})" if first != obj.path else ""
                raise InputError(
                    f"duplicate object {obj.where()}{also}",
                    path=obj.path,
                    hint="each object may appear once across all inputs",
                )
            seen[key] = obj.path
            yield obj


def _expand(data: Any, path: str) -> Iterator[Mapping[str, Any]]:
    if not isinstance(data, dict):
        raise InputError(
            f"expected a Kubernetes object (a mapping), got {type(data).__name__}", path=path
        )
    kind = data.get("kind")
    if isinstance(kind, str) and (kind == "List" or kind.endswith("List") or kind == SNAPSHOT_KIND):
        items = data.get("items") or []
        if not isinstance(items, list):
            raise InputError(f"{kind}.items must be a list", path=path)
        for item in items:
            yield from _expand(item, path)
        return
    yield data


def _to_object(body: Mapping[str, Any], path: str) -> KubeObject:
    api_version, kind = body.get("apiVersion"), body.get("kind")
    if not isinstance(api_version, str) or not api_version:
        raise InputError("object has no apiVersion", path=path)
    if not isinstance(kind, str) or not kind:
        raise InputError("object has no kind", path=path)
    meta = body.get("metadata") or {}
    if not isinstance(meta, dict):
        raise InputError(f"{kind}: metadata must be a mapping", path=path)
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"{kind} without metadata.name", path=path)
    namespace = meta.get("namespace", "")
    if not isinstance(namespace, str):
        raise InputError(f"{kind} {name}: metadata.namespace must be a string", path=path)
    return KubeObject(api_version, kind, namespace, name, body, path)


_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+|[KMGTPE]i?|[mkunM]?)$")
_SUFFIX: dict[str, Fraction | int] = {
    "": 1,
    "m": Fraction(1, 1000),
    "u": Fraction(1, 10**6),
    "n": Fraction(1, 10**9),
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}


def parse_quantity(value: Any, what: str, obj: KubeObject) -> Fraction:
    """A Kubernetes resource quantity ("500m", "32Gi", 4) as an exact number."""
    if type(value) is str:  # a fleet repeats a few quantities thousands of times
        hit = _QUANTITIES.get(value)
        if hit is not None:
            return hit
    if isinstance(value, bool):
        raise InputError(f"{obj.where()}: {what} is not a quantity: {value}", path=obj.path)
    if isinstance(value, int):
        return Fraction(value)
    quantity = _parse_text(str(value).strip(), what, obj)
    if type(value) is str and len(_QUANTITIES) < 10_000:
        _QUANTITIES[value] = quantity  # Fractions are immutable
    return quantity


_QUANTITIES: dict[str, Fraction] = {}


def _parse_text(text: str, what: str, obj: KubeObject) -> Fraction:
    match = _QUANTITY.match(text)
    if not match:
        raise InputError(f"{obj.where()}: {what} is not a quantity: {text!r}", path=obj.path)
    number, suffix = match.groups()
    try:
        base = Fraction(number)
    except ValueError:
        raise InputError(
            f"{obj.where()}: {what} is not a quantity: {text!r}", path=obj.path
        ) from None
    if suffix[:1] in ("e", "E"):
        return base * Fraction(10) ** int(suffix[1:])
    return base * Fraction(_SUFFIX[suffix])
