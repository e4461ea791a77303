"""Label selectors and node selector requirements as manifests write them: the one reader
every source uses (NetworkPolicy, Cilium's policies, pod affinity, node affinity), with
the rules the API server applies to them (k8s.io/apimachinery's label selector
validation, core/v1's NodeSelectorRequirement): known fields only, a key, a known
operator, string values, values for In and NotIn, none for Exists and DoesNotExist, one
for Gt and Lt. Keys are kept as written (Cilium's `k8s:` prefix is the caller's).
"""

from __future__ import annotations

from typing import Any

from topogen.errors import InputError
from topogen.manifest import KubeObject, as_list, as_map, check_fields, string_map
from topogen.model import LabelSelector, NodeSelectorRequirement, Requirement

__all__ = ["NODE_OPERATORS", "SELECTOR_OPERATORS", "read_label_selector", "read_requirements"]

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_OPERATORS = (*SELECTOR_OPERATORS, "Gt", "Lt")
_SELECTOR_FIELDS = {"matchLabels", "matchExpressions"}
_REQUIREMENT_FIELDS = {"key", "operator", "values"}


def _requirement(
    raw: Any, what: str, obj: KubeObject, operators: tuple[str, ...]
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
    return key, op, values


def read_label_selector(raw: Any, what: str, obj: KubeObject) -> LabelSelector:
    """A label selector (matchLabels, matchExpressions), its values sorted and unique."""
    data = as_map(raw, what, obj)
    check_fields(data, _SELECTOR_FIELDS, what, obj)
    labels = string_map(data.get("matchLabels"), f"{what}.matchLabels", obj)
    exprs = []
    for i, raw_expr in enumerate(
        as_list(data.get("matchExpressions"), f"{what}.matchExpressions", obj)
    ):
        key, op, values = _requirement(
            raw_expr, f"{what}.matchExpressions[{i}]", obj, SELECTOR_OPERATORS
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
