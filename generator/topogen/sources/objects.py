"""Kubernetes objects from YAML documents: lists flattened, shapes checked, duplicates refused."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from fractions import Fraction
from typing import Any

from topogen.errors import InputError
from topogen.manifest import KubeObject
from topogen.names import dns_label_problem, object_name_problem
from topogen.sources.yamlio import Document

__all__ = ["MAX_QUANTITY", "flatten", "parse_quantity", "quantity_of", "typed_item"]

SNAPSHOT_KIND = "TopogenSnapshot"
# what stands for the 5 random characters the API server appends to a generateName
GENERATED_SUFFIX = "xxxxx"


def flatten(docs: Iterable[Document], default_namespace: str = "default") -> Iterator[KubeObject]:
    """Every object of every document; `kind: List`, `*List` and snapshots are expanded.

    The items of a typed list (`NamespaceList`, `PodList`, ...), as the API server returns
    them, carry no kind or apiVersion: they take the list's. Namespaced objects without a
    namespace apply in `default_namespace` (KubeObject.applied_namespace)."""
    seen: dict[tuple[str, str, str, str], str] = {}
    for doc in docs:
        top = f"document {doc.index + 1}"
        for body, where in _expand(doc.data, doc.path, top, doc.index):
            obj = _to_object(body, doc.path, where, default_namespace)
            key = (obj.group, obj.kind, obj.applied_namespace, obj.name)
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


def _expand(
    data: Any, path: str, where: str, index: int
) -> Iterator[tuple[Mapping[str, Any], str]]:
    """(object, where it is in its file: `document 2`, `items[3]`) for `data` and its items."""
    if not isinstance(data, dict):
        raise InputError(
            f"{where}: expected a Kubernetes object (a mapping), got {type(data).__name__}",
            path=path,
        )
    kind = data.get("kind")
    if isinstance(kind, str) and (kind == "List" or kind.endswith("List") or kind == SNAPSHOT_KIND):
        items = data.get("items") or []
        if not isinstance(items, list):
            raise InputError(f"{where}: {kind}.items must be a list", path=path)
        item_kind = kind.removesuffix("List") if kind not in ("List", SNAPSHOT_KIND) else ""
        api_version = data.get("apiVersion") if item_kind else None
        outer = "" if index == 0 and where.startswith("document ") else f"{where}, "
        for i, item in enumerate(items):
            at = f"{outer}items[{i}]"
            if item_kind and isinstance(item, dict):
                item = typed_item(item, item_kind, api_version)
            yield from _expand(item, path, at, 1)
        return
    yield data, where


def typed_item(item: Mapping[str, Any], kind: str, api_version: Any) -> Mapping[str, Any]:
    """A typed list's item with the list's kind and apiVersion where it names none."""
    if item.get("kind") and item.get("apiVersion"):
        return item
    filled = dict(item)
    if not filled.get("kind"):
        filled["kind"] = kind
    if not filled.get("apiVersion") and isinstance(api_version, str):
        filled["apiVersion"] = api_version
    return filled


def _to_object(
    body: Mapping[str, Any], path: str, where: str, default_namespace: str = "default"
) -> KubeObject:
    meta = body.get("metadata") or {}
    named = meta.get("name") if isinstance(meta, dict) else None
    label = f"{where} ({named})" if isinstance(named, str) and named else where
    api_version, kind = body.get("apiVersion"), body.get("kind")
    if not isinstance(api_version, str) or not api_version:
        raise InputError(f"{label}: object has no apiVersion", path=path)
    if not isinstance(kind, str) or not kind:
        raise InputError(f"{label}: object has no kind", path=path)
    if not isinstance(meta, dict):
        raise InputError(f"{label}: {kind}: metadata must be a mapping", path=path)
    name = meta.get("name")
    generated = meta.get("generateName")
    if (name is None or name == "") and isinstance(generated, str) and generated:
        name = generated + GENERATED_SUFFIX  # the API server's 5 random characters
    if not isinstance(name, str) or not name:
        raise InputError(
            f"{where}: {kind} without metadata.name or metadata.generateName", path=path
        )
    namespace = meta.get("namespace", "")
    if not isinstance(namespace, str):
        raise InputError(f"{kind} {name}: metadata.namespace must be a string", path=path)
    problem = object_name_problem(name, strict=False)
    if problem:
        raise InputError(f"{where}: {kind}: metadata.name {problem}", path=path)
    problem = dns_label_problem(namespace) if namespace else None
    if problem:
        raise InputError(f"{kind} {name}: metadata.namespace {problem}", path=path)
    return KubeObject(api_version, kind, namespace, name, body, path, default_namespace)


# The grammar of k8s.io/apimachinery/pkg/api/resource (quantity.go, suffix.go):
#   <quantity> ::= <signedNumber><suffix>      <number> ::= <digits>[.<digits>] | .<digits>
#   <suffix>   ::= <binarySI> | <decimalExponent> | <decimalSI>
#   <binarySI> ::= Ki | Mi | Gi | Ti | Pi | Ei  <decimalSI> ::= n | u | m | "" | k | M | G | T | P | E
#   <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>   (an integer exponent)
# parsed as ParseQuantity does (so "1E" is 10^18 and "16000K" is no quantity), rounded up to
# 1n and capped at 2^63-1 as Kubernetes documents, without ever computing 10^exponent.
_DECIMAL_SI = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SI = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DIGITS = frozenset("0123456789")
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_EXPONENT = re.compile(r"^[+-]?[0-9]+$")
MAX_QUANTITY = 2**63 - 1
_NANO = 10**9
_MAX_QUANTITY_TEXT = 200  # characters: longer is no resource quantity
# beyond this Kubernetes' int32 scale arithmetic wraps around (or takes unbounded time)
_MAX_EXPONENT = 10**6
# what Go's strings.TrimSpace removes (Quantity.UnmarshalJSON trims with it)
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def parse_quantity(value: Any, what: str, obj: KubeObject) -> Fraction:
    """A Kubernetes resource quantity ("500m", "32Gi", 4) as an exact number."""
    if type(value) is str:  # a fleet repeats a few quantities thousands of times
        hit = _QUANTITIES.get(value)
        if hit is not None:
            return hit
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InputError(f"{obj.where()}: {what} is not a quantity: {value!r}", path=obj.path)
    if isinstance(value, int):
        return Fraction(max(-MAX_QUANTITY, min(MAX_QUANTITY, value)))
    text = value.strip(_GO_SPACE) if isinstance(value, str) else repr(value)
    quantity = quantity_of(text)
    if quantity is None:
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise InputError(
            f"{obj.where()}: {what} is not a quantity: {shown!r}",
            path=obj.path,
            hint="Kubernetes quantities: 4, 500m, 1.5, 32Gi, 64k, 1e3 (suffixes n u m k M G T "
            "P E, Ki Mi Gi Ti Pi Ei)",
        )
    if type(value) is str and len(_QUANTITIES) < 10_000:
        _QUANTITIES[value] = quantity  # Fractions are immutable
    return quantity


_QUANTITIES: dict[str, Fraction] = {}


def quantity_of(text: str) -> Fraction | None:
    """The value of a quantity string, or None when it is none."""
    parts = _split_quantity(text) if 0 < len(text) <= _MAX_QUANTITY_TEXT else None
    if parts is None:
        return None
    positive, num, denom, suffix, digits_seen = parts
    if suffix in _DECIMAL_SI:
        base, exponent = 10, _DECIMAL_SI[suffix]
    elif suffix in _BINARY_SI:
        base, exponent = 2, _BINARY_SI[suffix]
    elif len(suffix) > 1 and suffix[0] in "eE" and _EXPONENT.match(suffix[1:]):
        base, exponent = 10, int(suffix[1:])
        if abs(exponent) >= _MAX_EXPONENT:
            return None
    else:
        return None
    if not digits_seen and not _fast_path(num, denom, base, exponent):
        return None  # Kubernetes' slow path needs a digit ("Pi", "e-10" are no quantities)
    nanos = _nanos(num + denom, len(denom), base, exponent)
    magnitude = Fraction(nanos, _NANO) if nanos <= MAX_QUANTITY * _NANO else Fraction(MAX_QUANTITY)
    return magnitude if positive else -magnitude


def _split_quantity(s: str) -> tuple[bool, str, str, str, bool] | None:
    """parseQuantityString: sign, numerator digits (leading zeros cut, "0" when none),
    denominator digits, suffix, and whether the number had any digit at all."""
    end, pos, positive = len(s), 0, True
    if s[0] in "+-":
        positive, pos = s[0] == "+", 1
    start = pos
    while pos < end and s[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "", "", pos > start
    zeros, start = pos > start, pos
    while pos < end and s[pos] in _DIGITS:
        pos += 1
    num, denom = s[start:pos] or "0", ""
    seen = zeros or pos > start
    if pos < end and s[pos] == ".":
        pos += 1
        start = pos
        while pos < end and s[pos] in _DIGITS:
            pos += 1
        denom = s[start:pos]
        seen = seen or bool(denom)
    suffix_start = pos
    while pos < end and s[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and s[pos] in "+-":
        pos += 1
    while pos < end and s[pos] in _DIGITS:
        pos += 1
    if pos < end:
        return None
    return positive, num, denom, s[suffix_start:], seen


def _fast_path(num: str, denom: str, base: int, exponent: int) -> bool:
    """Whether ParseQuantity takes its int64 path (which reads even a number of no digits)."""
    if base == 10:
        return len(num) + len(denom) <= 18 and exponent - len(denom) >= -9
    precision = 15 - len(num) - (exponent * 3) // 10 - 1
    return not denom and precision >= 0 and int(num) << exponent <= MAX_QUANTITY


def _nanos(digits: str, decimals: int, base: int, exponent: int) -> int:
    """ceil(int(digits) / 10^decimals * base^exponent * 10^9), or more than the cap when the
    value is beyond it (so no power is ever computed that the cap makes pointless)."""
    digits = digits.lstrip("0")
    if not digits:
        return 0
    if base == 2:  # exponent 10..60
        scaled: int = int(digits) * 2**exponent * _NANO
        divisor: int = 10**decimals
        return -(-scaled // divisor)
    scale = exponent - decimals + 9  # the value in nanos is int(digits) * 10^scale
    if len(digits) + scale > 29:  # at least 10^28 nanos: far beyond 2^63-1 units
        return (MAX_QUANTITY + 1) * _NANO
    if scale >= 0:
        exact: int = int(digits) * 10**scale
        return exact
    if -scale >= len(digits):  # under one nano: rounds up to it, as Kubernetes does
        return 1
    kept, rest = digits[:scale], digits[scale:]
    return int(kept) + (1 if rest.strip("0") else 0)
