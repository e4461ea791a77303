"""Field-level comparison of two versions of one document, with deepdiff.

Lists whose order carries no meaning (tolerations, selector values, match
expressions, ...) are compared as sets; every other list (rules, validations,
mutations, variables, containers, patches, ...) as a list, where items are matched by
what identifies them (a name, a JSON patch operation's op and path, a patch file's
path, a key: ITEM_KEYS), so an insertion or a reordering is reported as such.
"""

from __future__ import annotations

import re
from typing import Any

from deepdiff import DeepDiff
from deepdiff.helper import CannotCompare

from topogen.diff.changes import FieldChange

__all__ = ["ITEM_KEYS", "UNORDERED_KEYS", "compare", "format_path", "item_identity"]

# Lists, by the key that holds them, whose order the API ignores.
UNORDERED_KEYS = frozenset(
    {
        "tolerations",
        "taints",
        "values",  # matchExpressions[].values
        "matchExpressions",
        "matchFields",
        "nodeSelectorTerms",  # ORed
        "validationActions",
        "operations",
        "apiGroups",
        "apiVersions",
        "resources",
        "resourceNames",
        "scopes",
        "namespaces",
        "kinds",
        "finalizers",
        "controllers",
        "policyTypes",
        "topologyKeys",
        "matchLabelKeys",
        "mismatchLabelKeys",
    }
)

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def _unordered(level: Any) -> bool:
    path = level.path(output_format="list")
    return bool(path) and isinstance(path[-1], str) and path[-1] in UNORDERED_KEYS


# What identifies an item of an ordered list, tried in order: a name (rules, variables,
# containers), a JSON patch operation's op and path, a kustomize patch's file or target,
# a toleration's or requirement's key.
ITEM_KEYS: tuple[tuple[str, ...], ...] = (("name",), ("op", "path"), ("path",), ("key",))


def item_identity(item: Any) -> tuple[str, ...] | None:
    if not isinstance(item, dict):
        return None
    for keys in ITEM_KEYS:
        values = [item.get(k) for k in keys]
        if all(isinstance(v, str) and v for v in values):
            return (*keys, *(str(v) for v in values))
    return None


def _same_item(x: Any, y: Any, level: Any = None) -> bool:
    """Items of an ordered list are the same item when they carry the same identity
    (ITEM_KEYS), so an insertion is reported as one item added, not a shift of all."""
    ix, iy = item_identity(x), item_identity(y)
    if ix is not None and iy is not None:
        return ix == iy
    raise CannotCompare() from None


def compare(old: Any, new: Any) -> tuple[FieldChange, ...]:
    """Every field that differs, by path; empty when the two mean the same."""
    if old == new:
        return ()
    dd = DeepDiff(
        old,
        new,
        ignore_order_func=_unordered,
        iterable_compare_func=_same_item,
        threshold_to_diff_deeper=0,
        view="tree",
    )
    changes: dict[tuple[str, str], FieldChange] = {}
    for report_type, levels in dd.items():
        for level in levels:
            change = _field_change(report_type, level, old, new)
            if change is not None:
                changes.setdefault((change.path, change.op), change)
    return tuple(sorted(changes.values(), key=lambda c: (c.path, c.op)))


def _field_change(report_type: str, level: Any, old: Any, new: Any) -> FieldChange | None:
    if report_type in ("values_changed", "type_changes"):
        return FieldChange(
            format_path(_path(level, new_side=True), new), "changed", level.t1, level.t2
        )
    if report_type in ("dictionary_item_added", "iterable_item_added", "set_item_added"):
        return FieldChange(format_path(_path(level, new_side=True), new), "added", None, level.t2)
    if report_type in ("dictionary_item_removed", "iterable_item_removed", "set_item_removed"):
        return FieldChange(
            format_path(_path(level, new_side=False), old), "removed", level.t1, None
        )
    if report_type == "iterable_item_moved":
        if _same_relative_order(level):
            return None  # items inserted or removed around it: reported as such
        return FieldChange(format_path(_path(level, new_side=True)[:-1], new), "reordered")
    return None  # repetition changes and the like: not produced with these options


def _same_relative_order(level: Any) -> bool:
    """The items both versions of the list hold are in the same order in both."""
    up = level.up
    old, new = getattr(up, "t1", None), getattr(up, "t2", None)
    if not (isinstance(old, list) and isinstance(new, list)):
        return False
    a, b = [item_identity(i) for i in old], [item_identity(i) for i in new]
    if None in a or None in b:
        return False
    common = set(a) & set(b)
    return [i for i in a if i in common] == [i for i in b if i in common]


def _path(level: Any, *, new_side: bool) -> list[Any]:
    """The keys and indices from the root to a change, in the old or the new document.

    Read from each step's child relation: deepdiff's own `path()` mixes the old and
    the new index when items matched by name moved.
    """
    node = level
    while node.up is not None:
        node = node.up
    out: list[Any] = []
    while node.down is not None:
        first, second = (
            (node.t2_child_rel, node.t1_child_rel)
            if new_side
            else (node.t1_child_rel, node.t2_child_rel)
        )
        rel = first if first is not None else second
        out.append(rel.param)
        node = node.down
    return out


def format_path(path: list[Any], root: Any) -> str:
    """spec.variables[name=zoneRequirement].expression, metadata.labels["topogen.io/group"]."""
    out = ""
    node = root
    for part in path:
        if isinstance(part, int):
            item = node[part] if isinstance(node, list) and -len(node) <= part < len(node) else None
            out += f"[{_item_label(item, part)}]"
            node = item
        else:
            key = str(part)
            out += (("." if out else "") + key) if _IDENT.match(key) else f"[{_quote(key)}]"
            node = node.get(part) if isinstance(node, dict) else None
    return out


def _item_label(item: Any, index: int) -> str:
    identity = item_identity(item)
    if identity is None:
        return str(index)
    half = len(identity) // 2
    return " ".join(f"{k}={v}" for k, v in zip(identity[:half], identity[half:], strict=True))


def _quote(key: str) -> str:
    return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'
