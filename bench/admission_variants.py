"""Two configurations of the Kyverno admission measure (bench/admission.py) that split the
generated set's cost over the reference into its parts.

- STATIC: one MutatingPolicy without matchConditions or variables whose literal JSONPatch
  gives each kind of pod (by its label keys) exactly the fields Kyverno's admission
  controller gave it under the generated policies: the cost of the bigger pod alone (the
  API server's decode, defaulting, validation, managedFields and etcd write, Kyverno's
  patch and diff), without the generated policies' CEL.
- ONE_WEBHOOK: the two role MutatingPolicies as one (their shared matchConditions, the
  role conditions or-ed, one mutation choosing the role's patches), so the API server
  evaluates one webhook's matchConditions per pod instead of two (it converts the pod to
  unstructured once per webhook with matchConditions, k8s.io/apiserver
  pkg/admission/plugin/cel newActivation). The bench checks it admits pods exactly as
  the generated set does before it measures it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from typing import Any

STATIC = "reference, the generated fields as literals"
ONE_WEBHOOK = "generated, one webhook for both roles"
DESCRIPTIONS = {
    STATIC: (
        "one MutatingPolicy, no matchConditions or variables, whose literal patch gives each "
        "kind of pod the labels, tolerations, affinity and nodeSelector Kyverno gave it "
        "under the generated policies: what the bigger pod costs without their CEL"
    ),
    ONE_WEBHOOK: (
        "the two role MutatingPolicies as one, its matchConditions theirs with the role "
        "conditions or-ed and one mutation choosing the role's patches: one webhook whose "
        "matchConditions the API server evaluates per pod instead of two; checked to admit "
        "the first pods exactly as the generated set does"
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
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "MutatingPolicy",
        "metadata": {"name": "reference-static"},
        "spec": {
            "autogen": {"podControllers": {"controllers": []}},
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods"],
                    }
                ]
            },
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": expr}}],
        },
    }


def one_webhook(generated: Sequence[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The generated set with its coordinator and worker MutatingPolicies joined; None when
    they cannot be (other shapes than one mutation each over the same constraints)."""
    by_role = {
        p["metadata"]["labels"].get("topogen.io/role"): p
        for p in generated
        if p["kind"] == "MutatingPolicy"
    }
    coord, worker = by_role.get("coordinator"), by_role.get("worker")
    if coord is None or worker is None or len(by_role) != 2:
        return None
    c, w = coord["spec"], worker["spec"]
    if c["matchConstraints"] != w["matchConstraints"] or {
        len(c["mutations"]),
        len(w["mutations"]),
    } != {1}:
        return None
    n = 0
    while n < min(len(c["matchConditions"]), len(w["matchConditions"])) and (
        c["matchConditions"][n] == w["matchConditions"][n]
    ):
        n += 1
    variables: dict[str, str] = {}
    for v in (*c.get("variables", []), *w.get("variables", [])):
        if variables.setdefault(v["name"], v["expression"]) != v["expression"]:
            return None

    def role(spec: dict[str, Any]) -> str:
        return " && ".join(f"({m['expression']})" for m in spec["matchConditions"][n:]) or "true"

    joined = copy.deepcopy(coord)
    joined["metadata"]["name"] = coord["metadata"]["name"].removesuffix("-coordinator") + "-roles"
    joined["metadata"]["labels"].pop("topogen.io/role", None)
    spec = joined["spec"]
    spec["matchConditions"] = [
        *c["matchConditions"][:n],
        {"name": "has-role", "expression": f"({role(c)}) || ({role(w)})"},
    ]
    spec["variables"] = [
        {"name": "benchIsCoordinator", "expression": role(c)},
        *({"name": k, "expression": e} for k, e in variables.items()),
    ]
    patch = [m["jsonPatch"]["expression"] for m in (c["mutations"][0], w["mutations"][0])]
    spec["mutations"] = [{"patchType": "JSONPatch", "jsonPatch": {
        "expression": f"variables.benchIsCoordinator ? ({patch[0]}) : ({patch[1]})"}}]  # fmt: skip
    return [joined, *(p for p in generated if p["kind"] != "MutatingPolicy")]
