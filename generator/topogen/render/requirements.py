"""Label selectors as every backend writes them (the one writer: values for In and NotIn
only, as the API server wants them; sources/label_selectors.py is the one reader), and the
algebra Gatekeeper's mutators need: a label selector ANDs its requirements and cannot
negate a selector of several, so "a worker and no coordinator" is written in disjunctive
form."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from topogen.model import LabelSelector, Requirement

__all__ = ["Req", "disjunctive", "expressions", "requirement", "requirements", "selector"]

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
