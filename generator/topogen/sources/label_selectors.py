"""Label selectors and node selector requirements as manifests write them: the one reader
every source uses (NetworkPolicy, Cilium's policies, pod affinity, node affinity), with
the rules the API server applies to them (k8s.io/apimachinery's ValidateLabelSelector,
core/v1's ValidateNodeSelectorRequirement): known fields only, a known operator, string
values, values for In and NotIn, none for Exists and DoesNotExist, one for Gt and Lt;
every key a qualified name (a label key) and every value a label value. A Cilium
selector's key may carry a source (`k8s:`, `any:`, `reserved:`: letters and digits
before one ':'), as Cilium's agent allows (pkg/labels IsValidCiliumLabelKey); keys are
kept as written (the prefix is the caller's).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from topogen.errors import InputError
from topogen.manifest import KubeObject, as_list, as_map, check_fields, string_map
from topogen.model import LabelSelector, NodeSelectorRequirement, Requirement
from topogen.names import label_key_problem, label_value_problem

__all__ = [
    "NODE_OPERATORS",
    "SELECTOR_OPERATORS",
    "key_problem",
    "read_label_selector",
    "read_requirements",
]

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_OPERATORS = (*SELECTOR_OPERATORS, "Gt", "Lt")
_SELECTOR_FIELDS = {"matchLabels", "matchExpressions"}
_REQUIREMENT_FIELDS = {"key", "operator", "values"}
_CILIUM_SOURCE = re.compile(r"^[A-Za-z0-9]+$")
Keys = Literal["kubernetes", "cilium"]


def key_problem(key: str, keys: Keys = "kubernetes") -> str | None:
    """Why `key` is no selector key: a label key, after a Cilium source where `keys` is
    "cilium"."""
    if keys == "cilium" and ":" in key:
        source, _, rest = key.partition(":")
        if ":" in rest:
            return f"label key {key!r}: Cilium takes one ':' (a source before it)"
        if not _CILIUM_SOURCE.match(source):
            return f"label key {key!r}: its source before ':' must be letters and digits"
        key = rest
    return label_key_problem(key)


def _check(key: str, values: list[str], what: str, obj: KubeObject, keys: Keys) -> None:
    problem = key_problem(key, keys)
    if problem is None:
        problem = next((p for p in map(label_value_problem, values) if p), None)
    if problem:
        raise InputError(f"{obj.where()}: {what}: {problem}", path=obj.path)


def _requirement(
    raw: Any, what: str, obj: KubeObject, operators: tuple[str, ...], keys: Keys = "kubernetes"
) -> tuple[str, str, list[str]]:
    """(key, operator, values) of one requirement, checked."""
    e = as_map(raw, what, obj)
    check_fields(e, _REQUIREMENT_FIELDS, what, obj)
    op, key = e.get("operator"), e.get("key")
    if op not in operators or not isinstance(key, str) or not key:
        raise InputError(
            f"{obj.where()}: {what} needs a key and an operator in {', '.join(operators)}, "
            f"got {op!r}",
            path=obj.path,
        )
    values = as_list(e.get("values"), f"{what}.values", obj)
    if any(not isinstance(v, str) for v in values):
        raise InputError(
            f"{obj.where()}: {what}.values must be strings", path=obj.path, hint="quote them"
        )
    if op in ("In", "NotIn") and not values:
        raise InputError(f"{obj.where()}: {what} ({op}) needs values", path=obj.path)
    if op in ("Exists", "DoesNotExist") and values:
        raise InputError(f"{obj.where()}: {what} ({op}) takes no values", path=obj.path)
    if op in ("Gt", "Lt") and len(values) != 1:
        raise InputError(f"{obj.where()}: {what} ({op}) takes one value", path=obj.path)
    _check(key, values, what, obj, keys)
    return key, op, values


def read_label_selector(
    raw: Any, what: str, obj: KubeObject, keys: Keys = "kubernetes"
) -> LabelSelector:
    """A label selector (matchLabels, matchExpressions), its values sorted and unique."""
    data = as_map(raw, what, obj)
    check_fields(data, _SELECTOR_FIELDS, what, obj)
    labels = string_map(data.get("matchLabels"), f"{what}.matchLabels", obj)
    for key, value in labels.items():
        _check(key, [value], f"{what}.matchLabels", obj, keys)
    exprs = []
    for i, raw_expr in enumerate(
        as_list(data.get("matchExpressions"), f"{what}.matchExpressions", obj)
    ):
        key, op, values = _requirement(
            raw_expr, f"{what}.matchExpressions[{i}]", obj, SELECTOR_OPERATORS, keys
        )
        exprs.append(Requirement(key, op, tuple(sorted(set(values)))))
    return LabelSelector(tuple(sorted(labels.items())), tuple(sorted(exprs)))


def read_requirements(raw: Any, what: str, obj: KubeObject) -> list[NodeSelectorRequirement]:
    """A node selector term's matchExpressions, values in their order."""
    out = []
    for j, e in enumerate(as_list(raw, what, obj)):
        key, op, values = _requirement(e, f"{what}[{j}]", obj, NODE_OPERATORS)
        out.append(NodeSelectorRequirement(key, op, tuple(values)))
    return out
