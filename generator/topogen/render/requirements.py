"""Label selectors as every backend writes them (the one writer: values for In and NotIn
only, as the API server wants them; sources/label_selectors.py is the one reader), and the
algebra Gatekeeper's mutators need: a label selector ANDs its requirements and cannot
negate a selector of several, so "a worker and no coordinator" is written in disjunctive
form, nor OR several, so the pods of several selectors take as few selectors as `union`
finds (each selector is one more mutator Gatekeeper matches every pod against)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from topogen.model import LabelSelector, Requirement

__all__ = [
    "Req",
    "disjunctive",
    "expressions",
    "requirement",
    "requirements",
    "selector",
    "union",
]

Req = dict[str, Any]  # a label selector requirement, as written in a selector


def requirement(r: Requirement) -> Req:
    """One requirement as written in a selector."""
    req: Req = {"key": r.key, "operator": r.operator}
    if r.operator in ("In", "NotIn"):
        req["values"] = list(r.values)
    return req


def expressions(sel: LabelSelector, extra: Sequence[Requirement] = ()) -> list[Req]:
    """matchExpressions: the selector's requirements, then `extra`."""
    return [requirement(r) for r in (*sel.match_expressions, *extra)]


def selector(sel: LabelSelector, extra: Sequence[Requirement] = ()) -> dict[str, Any]:
    """The selector as written: matchLabels and matchExpressions, each only when not empty."""
    out: dict[str, Any] = {}
    if sel.match_labels:
        out["matchLabels"] = dict(sel.match_labels)
    exprs = expressions(sel, extra)
    if exprs:
        out["matchExpressions"] = exprs
    return out


def requirements(sel: LabelSelector) -> list[Req]:
    """Every requirement of a selector, matchLabels as `In` of one value."""
    labels: list[Req] = [{"key": k, "operator": "In", "values": [v]} for k, v in sel.match_labels]
    return labels + expressions(sel)


_NEGATION = {"In": "NotIn", "NotIn": "In", "Exists": "DoesNotExist", "DoesNotExist": "Exists"}


def _negate(r: Req) -> Req:
    return {**r, "operator": _NEGATION[r["operator"]]}


def _implied(reqs: Sequence[Req], r: Req) -> bool | None:
    """Does an `In` requirement of reqs decide r? True: implied, False: contradicted."""
    for s in reqs:
        if s["key"] != r["key"] or s["operator"] != "In":
            continue
        have, other = set(s["values"]), set(r.get("values", ()))
        if r["operator"] == "Exists":
            return True
        if r["operator"] == "DoesNotExist":
            return False
        inside = have <= other
        disjoint = not have & other
        if r["operator"] == "In":
            return True if inside else (False if disjoint else None)
        return True if disjoint else (False if inside else None)
    return None


def disjunctive(base: list[Req], negated_selectors: Sequence[LabelSelector]) -> list[list[Req]]:
    """`base` AND none of `negated_selectors`, in disjunctive form (a label selector cannot
    negate a selector of several requirements)."""
    out: list[list[Req]] = []
    negated = [[_negate(r) for r in requirements(c)] for c in negated_selectors]
    for choice in itertools.product(*negated):
        reqs = list(base)
        for r in choice:
            verdict = _implied(reqs, r)
            if verdict is False:
                break
            if verdict is None and r not in reqs:
                reqs.append(r)
        else:
            if reqs not in out:
                out.append(reqs)
    return out


def _implies(have: Sequence[Req], r: Req) -> bool:
    """Does every set of labels that meets all of `have` meet r?"""
    if r in have:
        return True
    op, values = r["operator"], set(r.get("values", ()))
    for s in have:
        if s["key"] != r["key"]:
            continue
        held, vals = s["operator"], set(s.get("values", ()))
        if held == "In" and (
            op == "Exists"
            or (op == "In" and vals <= values)
            or (op == "NotIn" and not vals & values)
        ):
            return True
        if held == "NotIn" and op == "NotIn" and values <= vals:
            return True
        if held == op == "Exists" or (held == "DoesNotExist" and op in ("DoesNotExist", "NotIn")):
            return True
    return False


def _merged(a: list[Req], b: list[Req]) -> list[Req] | None:
    """One selector for a OR b where they differ only in the values of one `In` on a key."""
    only_a = [r for r in a if r not in b]
    only_b = [r for r in b if r not in a]
    if len(only_a) != 1 or len(only_b) != 1:
        return None
    ra, rb = only_a[0], only_b[0]
    if ra["key"] != rb["key"] or ra["operator"] != "In" or rb["operator"] != "In":
        return None
    values = ra["values"] + [v for v in rb["values"] if v not in ra["values"]]
    return [{**r, "values": values} if r is ra else r for r in a]


def union(selectors: Sequence[list[Req]]) -> list[list[Req]]:
    """Selectors (each a list of requirements, ANDed) that together match exactly what
    any of `selectors` matches: fewer where one selector's matches are another's, or two
    differ only in the values of one `In` on the same key (A, k In X | A, k In Y: A, k In
    X+Y). In order of first appearance."""
    out = [list(s) for s in selectors]
    while True:
        for i, j in itertools.permutations(range(len(out)), 2):
            if all(_implies(out[i], r) for r in out[j]):  # out[i] matches nothing more
                del out[i]
                break
            merged = _merged(out[i], out[j])
            if merged is not None:
                out[i] = merged
                del out[j]
                break
        else:
            return out
