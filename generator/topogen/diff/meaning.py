"""What a change to a generated object means, in the terms of the domain.

Two sources, both engine-neutral:
- the intent summary topogen writes into its policies' annotations
  (topogen.io/zones, topogen.io/tolerations, topogen.io/identity,
  topogen.io/denied-zone-pairs);
- Kubernetes shapes found anywhere in an object: tolerations lists, label and
  node selector requirements (key, operator, values), nodeSelector maps, and
  the validation action fields of Kyverno, ValidatingAdmissionPolicy and
  Gatekeeper. These cover engines that write no annotations and the CLI test
  resources, and they need no knowledge of where an engine keeps them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from topogen.render.vocabulary import (
    DENIED_ZONE_PAIRS,
    GROUP_LABEL,
    IDENTITY,
    ROLE_LABEL,
    TOLERATIONS,
    ZONES,
)

__all__ = ["actions_of", "added_notes", "changed_notes", "removed_notes", "subject"]

DENIED = DENIED_ZONE_PAIRS
_ROLE_NAMES = {"validate": "validation", "worker": "workers", "mutate": "mutation"}


def subject(obj: Any, fallback: str) -> str:
    """`coordinator of ml-training` for topogen's policies, else the object's kind and name."""
    labels = _meta(obj, "labels")
    group, role = labels.get(GROUP_LABEL), labels.get(ROLE_LABEL)
    if isinstance(group, str) and isinstance(role, str) and group and role:
        return f"{_ROLE_NAMES.get(role, role)} of {group}"
    return fallback


def added_notes(obj: Any) -> tuple[str, ...]:
    return _intent_summary(obj, "added")


def removed_notes(obj: Any) -> tuple[str, ...]:
    return _intent_summary(obj, "removed")


def changed_notes(old: Any, new: Any) -> tuple[str, ...]:
    notes = [
        *_annotation_notes(
            _meta(old, "annotations"), _meta(new, "annotations"), bool(_actions(new) & REFUSING)
        ),
        *_action_notes(old, new),
        *_toleration_notes(old, new),
        *_requirement_notes(old, new),
        *_node_selector_notes(old, new),
    ]
    return tuple(dict.fromkeys(notes))  # once each, in order


def _meta(obj: Any, what: str) -> dict[str, Any]:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    value = meta.get(what) if isinstance(meta, dict) else None
    return value if isinstance(value, dict) else {}


def _intent_summary(obj: Any, verb: str) -> tuple[str, ...]:
    ann = _meta(obj, "annotations")
    if not isinstance(ann.get(ZONES), str):
        return ()
    parts = [f"node affinity zones {_list(_split(ann[ZONES]))}"]
    if isinstance(ann.get(TOLERATIONS), str):
        tols = _split(ann[TOLERATIONS])
        parts.append(f"tolerations {_list(tols)}" if tols else "no tolerations")
    if isinstance(ann.get(IDENTITY), str):
        parts.append(f"identity {ann[IDENTITY]}" if ann[IDENTITY] else "no identity label")
    actions = _actions(obj)
    if isinstance(ann.get(DENIED), str) and ann[DENIED]:
        pairs = ", ".join(_pair(p) for p in _split(ann[DENIED]))
        verb = "refuses" if actions & REFUSING else "reports"
        parts.append(f"{verb} pods spanning {pairs}")
    if actions:
        parts.append(f"validation {'/'.join(sorted(actions))}")
    return (f"policy {verb} ({'; '.join(parts)})",)


def _split(value: str) -> list[str]:
    return sorted({v.strip() for v in value.split(",") if v.strip()})


def _pair(pair: str) -> str:
    return " and ".join(pair.split("/", 1))


def _list(values: list[str] | tuple[str, ...]) -> str:
    return "[" + ", ".join(values) + "]"


def _annotation_notes(
    old: dict[str, Any], new: dict[str, Any], refuses: bool = False
) -> Iterator[str]:
    if not (isinstance(old.get(ZONES), str) and isinstance(new.get(ZONES), str)):
        return  # one side predates the intent summary: the field changes say the rest
    oz, nz = _split(old[ZONES]), _split(new[ZONES])
    if oz != nz:
        yield f"node affinity zones {_list(oz)} -> {_list(nz)}"
    ot, nt = old.get(TOLERATIONS), new.get(TOLERATIONS)
    if isinstance(ot, str) or isinstance(nt, str):
        before, after = set(_split(ot or "")), set(_split(nt or ""))
        for t in sorted(after - before):
            yield f"toleration {t} added"
        for t in sorted(before - after):
            yield f"toleration {t} removed"
    od, nd = old.get(DENIED), new.get(DENIED)
    if isinstance(od, str) or isinstance(nd, str):
        before, after = set(_split(od or "")), set(_split(nd or ""))
        verb = "refuses" if refuses else "reports (Audit refuses nothing)"
        for pair in sorted(after - before):
            yield f"now {verb} pods spanning {_pair(pair)} (their traffic is denied)"
        for pair in sorted(before - after):
            yield f"no longer checks pods spanning {_pair(pair)}"
    oi, ni = old.get(IDENTITY), new.get(IDENTITY)
    if isinstance(oi, str) and isinstance(ni, str) and oi != ni:
        if oi and ni:
            yield f"identity label {oi} -> {ni}"
        elif ni:
            yield f"identity label {ni} now set"
        else:
            yield f"identity label {oi} no longer set"


# Validation action fields, named in each field's own words: validationActions says Deny
# (Kyverno CEL, ValidatingAdmissionPolicyBinding), failureAction and the deprecated
# validationFailureAction say Enforce (Kyverno ClusterPolicy), enforcementAction says
# deny/dryrun/warn (Gatekeeper).
_ACTION_FIELDS = (
    "validationActions",
    "validationFailureAction",
    "failureAction",
    "enforcementAction",
)


def _actions(obj: Any) -> frozenset[str]:
    found: set[str] = set()
    for _, key, value in _walk(obj):
        if key not in _ACTION_FIELDS:
            continue
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str):
                found.add(v)
    return frozenset(found)


def actions_of(obj: Any) -> frozenset[str]:
    """The validation actions an object's fields name, in each field's own words."""
    return _actions(obj)


# what each action value does, in its field's words
ACTION_WORDS = {
    "Audit": "reports",
    "Deny": "refuses",
    "Warn": "warns",
    "Enforce": "refuses",
    "deny": "refuses",
    "dryrun": "reports",
    "warn": "warns",
    "scoped": "depends on the enforcement point",
}
REFUSING = frozenset(k for k, v in ACTION_WORDS.items() if v == "refuses")


def _words(actions: frozenset[str]) -> str:
    return ", ".join(
        f"{a} {ACTION_WORDS.get(a, 'is not known to topogen')}" for a in sorted(actions)
    )


def _action_notes(old: Any, new: Any) -> Iterator[str]:
    before, after = _actions(old), _actions(new)
    if before != after and before and after:
        yield (
            f"validation {'/'.join(sorted(before))} -> {'/'.join(sorted(after))} "
            f"({_words(before | after)})"
        )


def _walk(obj: Any, path: str = "") -> Iterator[tuple[str, str, Any]]:
    """(path of the containing mapping without list indices, key, value) for every mapping entry."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield path, str(k), v
            yield from _walk(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for v in obj:
            yield from _walk(v, f"{path}[]")


def toleration_text(t: dict[str, Any]) -> str:
    key, op = str(t.get("key") or ""), str(t.get("operator") or "Equal")
    value = f"={t.get('value') or ''}" if op == "Equal" else ""
    effect = f":{t['effect']}" if t.get("effect") else ""
    return f"{key or '*'}{value}{effect}"


def _tolerations(obj: Any) -> set[str]:
    return {
        toleration_text(t)
        for _, key, value in _walk(obj)
        if key == "tolerations" and isinstance(value, list)
        for t in value
        if isinstance(t, dict)
    }


def _toleration_notes(old: Any, new: Any) -> Iterator[str]:
    before, after = _tolerations(old), _tolerations(new)
    for t in sorted(after - before):
        yield f"toleration {t} added"
    for t in sorted(before - after):
        yield f"toleration {t} removed"


def _context(path: str) -> str:
    for marker, words in (
        ("podAntiAffinity", "pod anti-affinity"),
        ("podAffinity", "pod affinity"),
        ("nodeAffinity", "node affinity"),
        ("nodeSelectorTerms", "node affinity"),
    ):
        if marker in path:
            return words
    return "selector"


def _requirements(obj: Any) -> dict[tuple[str, str, str], frozenset[str]]:
    """(context, key, operator) -> values, for every matchExpressions requirement."""
    out: dict[tuple[str, str, str], set[str]] = {}
    for path, key, value in _walk(obj):
        if key != "matchExpressions" or not isinstance(value, list):
            continue
        for req in value:
            if isinstance(req, dict) and isinstance(req.get("key"), str):
                raw = req.get("values")
                values: list[Any] = raw if isinstance(raw, list) else []
                slot = out.setdefault((_context(path), req["key"], str(req.get("operator"))), set())
                slot.update(str(v) for v in values)
    return {k: frozenset(v) for k, v in out.items()}


def _requirement_notes(old: Any, new: Any) -> Iterator[str]:
    before, after = _requirements(old), _requirements(new)
    for ctx, key, op in sorted(before.keys() | after.keys()):
        b, a = before.get((ctx, key, op)), after.get((ctx, key, op))
        if b == a:
            continue
        what = f"{ctx} {key} {op}"
        if b is None:
            yield f"{what} {_list(sorted(a or ()))} added"
        elif a is None:
            yield f"{what} {_list(sorted(b))} removed"
        else:
            yield f"{what} {_list(sorted(b))} -> {_list(sorted(a))}"


def _node_selectors(obj: Any) -> dict[str, str]:
    return {
        str(k): str(v)
        for _, key, value in _walk(obj)
        if key == "nodeSelector" and isinstance(value, dict)
        for k, v in value.items()
    }


def _node_selector_notes(old: Any, new: Any) -> Iterator[str]:
    before, after = _node_selectors(old), _node_selectors(new)
    for k in sorted(before.keys() | after.keys()):
        b, a = before.get(k), after.get(k)
        if b == a:
            continue
        if b is None:
            yield f"node selector {k}={a} added"
        elif a is None:
            yield f"node selector {k}={b} removed"
        else:
            yield f"node selector {k}={b} -> {k}={a}"
