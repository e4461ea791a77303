"""A configuration of the Kyverno admission measure (bench/admission.py) that splits the
generated set's cost over the reference into its parts.

STATIC: one MutatingPolicy without matchConditions or variables whose literal JSONPatch
gives each kind of pod (see shapes) exactly the fields Kyverno's admission controller gave
it under the generated policies: the cost of the bigger pod alone (the API server's decode,
defaulting, validation, managedFields and etcd write, Kyverno's patch and diff), without
the generated policies' CEL.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from kyverno_pods import reference_policy

STATIC = "reference, the generated fields as literals"
DESCRIPTIONS = {
    STATIC: (
        "one MutatingPolicy, no matchConditions or variables, whose literal patch gives each "
        "kind of pod the labels, tolerations, affinity and nodeSelector Kyverno gave it "
        "under the generated policies: what the bigger pod costs without their CEL"
    ),
}
FIELDS: tuple[tuple[str, Callable[[dict[str, Any]], Any]], ...] = (
    ("/metadata/labels", lambda p: p["metadata"].get("labels")),
    ("/spec/tolerations", lambda p: p["spec"].get("tolerations")),
    ("/spec/affinity", lambda p: p["spec"].get("affinity")),
    ("/spec/nodeSelector", lambda p: p["spec"].get("nodeSelector")),
)
FEW = 4  # at most this many values across the pods: a label that tells kinds of pod apart
LABELS = "(has(object.metadata.labels) ? object.metadata.labels : {})"


def shapes(pods: Sequence[dict[str, Any]]) -> list[tuple[dict[str, str], dict[str, Any]]]:
    """The kinds of pod, each with its first pod: pods with the same label keys and the same
    values of the labels that take few values (a role's, not a job's name or an index)."""
    values: dict[str, set[str]] = {}
    for pod in pods:
        for k, v in (pod["metadata"].get("labels") or {}).items():
            values.setdefault(k, set()).add(v)
    few = {k for k, vs in values.items() if len(vs) <= FEW}
    seen: dict[tuple[tuple[str, str | None], ...], tuple[dict[str, str], dict[str, Any]]] = {}
    for pod in pods:
        labels = pod["metadata"].get("labels") or {}
        key = tuple(sorted((k, v if k in few else None) for k, v in labels.items()))
        seen.setdefault(key, ({k: v for k, v in labels.items() if k in few}, pod))
    return list(seen.values())


def cel_literal(value: Any) -> str:
    """A JSON value as a CEL literal (every member dyn, so mixed types type-check)."""
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(f"{json.dumps(k)}: dyn({cel_literal(v)})" for k, v in value.items())
            + "}"
        )
    if isinstance(value, list):
        return "[" + ", ".join(f"dyn({cel_literal(v)})" for v in value) + "]"
    return json.dumps(value)


def static_policy(
    samples: Sequence[tuple[dict[str, str], dict[str, Any], dict[str, Any]]],
) -> dict[str, Any]:
    """(telling labels, sent, admitted) per kind of pod (see shapes) -> the MutatingPolicy
    patching each kind as it was admitted."""
    expr = "[]"
    for telling, sent, admitted in reversed(samples):
        keys = sorted(sent["metadata"].get("labels") or {})
        cond = " && ".join([
            f"size({LABELS}) == {len(keys)}",
            *(f"{json.dumps(k)} in {LABELS}" for k in keys),
            *(f"{LABELS}[{json.dumps(k)}] == {json.dumps(v)}" for k, v in sorted(telling.items())),
        ])  # fmt: skip
        ops = [
            f"JSONPatch{{op: 'add', path: '{path}', value: {cel_literal(get(admitted))}}}"
            for path, get in FIELDS
            if get(admitted) is not None and get(admitted) != get(sent)
        ]
        expr = f"({cond}) ? [{', '.join(ops)}] : {expr}"
    return reference_policy("reference-static", expr)
