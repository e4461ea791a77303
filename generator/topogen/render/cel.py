"""CEL expressions for the admission policies, built from an AdmissionIntent.

Every value enters an expression as a JSON literal (a valid CEL literal), so a
hostile label value cannot change the expression's structure. The same
expressions serve Kyverno's CEL policies and Kubernetes' native admission policies.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from topogen.model import LabelSelector, Toleration
from topogen.render.intent import AdmissionIntent

__all__ = [
    "LABELS",
    "escape_pointer",
    "lit",
    "match_role",
    "mutation_affinity_patch",
    "mutation_identity_patch",
    "mutation_tolerations_patch",
    "toleration_dicts",
]

LABELS = "(has(object.metadata.labels) ? object.metadata.labels : {})"
NODE_REQ = "object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
POD_REQ = "object.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution"
NODE_REQ_PATH = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"
POD_REQ_PATH = "/spec/affinity/podAffinity/requiredDuringSchedulingIgnoredDuringExecution"


def lit(value: Any) -> str:
    """A CEL literal for a JSON-compatible value.

    Map values are wrapped in dyn(): CEL infers a map literal's value type from
    its entries and rejects mixed ones (strings beside lists).
    """
    if isinstance(value, dict):
        items = ", ".join(f"{json.dumps(str(k))}: dyn({lit(v)})" for k, v in sorted(value.items()))
        return "{" + items + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(lit(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=True)


def escape_pointer(key: str) -> str:
    """A JSON Pointer segment (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def selector(sel: LabelSelector, labels: str = LABELS) -> str:
    parts = [
        f"({lit(k)} in {labels} && {labels}[{lit(k)}] == {lit(v)})" for k, v in sel.match_labels
    ]
    for r in sel.match_expressions:
        k = lit(r.key)
        vals = lit(list(r.values))
        parts.append(
            {
                "In": f"({k} in {labels} && {labels}[{k}] in {vals})",
                "NotIn": f"(!({k} in {labels}) || !({labels}[{k}] in {vals}))",
                "Exists": f"({k} in {labels})",
                "DoesNotExist": f"!({k} in {labels})",
            }[r.operator]
        )
    return " && ".join(parts) or "true"


def any_selector(sels: Sequence[LabelSelector]) -> str:
    return "(" + " || ".join(f"({selector(s)})" for s in sels) + ")"


def namespace_in(namespaces: Sequence[str]) -> str:
    ns = (
        "(has(object.metadata.namespace) && object.metadata.namespace != '' ? "
        "object.metadata.namespace : request.namespace)"
    )
    return f"{ns} in {lit(list(namespaces))}"


def not_kueue(intent: AdmissionIntent) -> str:
    annotations = "(has(object.metadata.annotations) ? object.metadata.annotations : {})"
    return " && ".join(
        f"!({lit(k)} in {LABELS}) && !({lit(k)} in {annotations})" for k in intent.skip_keys
    )


def match_role(intent: AdmissionIntent, role: str | None) -> list[dict[str, str]]:
    """matchConditions: the group's namespaces, the job label, the role, not Kueue TAS."""
    conds = [
        {"name": "in-group-namespaces", "expression": namespace_in(intent.namespaces)},
        {"name": "is-training-pod", "expression": f"{lit(intent.job_label)} in {LABELS}"},
        {"name": "not-placed-by-kueue-tas", "expression": not_kueue(intent)},
    ]
    if role == "coordinator":
        conds.append({"name": "is-coordinator", "expression": any_selector(intent.coordinator)})
    elif role == "worker":
        conds.append(
            {
                "name": "is-worker",
                "expression": f"!{any_selector(intent.coordinator)}"
                f" && {any_selector(intent.worker)}",
            }
        )
    else:
        conds.append(
            {
                "name": "has-role",
                "expression": f"{any_selector(intent.coordinator)} || {any_selector(intent.worker)}",
            }
        )
        # an UPDATE is judged only when it changes labels: pods admitted before the policy
        # (e.g. the Job controller removing a finalizer) must stay updatable
        conds.append(
            {
                "name": "create-or-relabel",
                "expression": "request.operation != 'UPDATE' || "
                "(has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}) != "
                f"{LABELS}",
            }
        )
    return conds


def toleration_dicts(tolerations: Sequence[Toleration]) -> list[dict[str, str]]:
    out = []
    for t in tolerations:
        d = {"key": t.key, "operator": t.operator, "effect": t.effect}
        if t.operator == "Equal":
            d["value"] = t.value
        out.append(d)
    return out


def _tolerates(t: str, w: str) -> str:
    """Does existing toleration `t` already tolerate the taint that wanted toleration `w` is for?"""
    return (
        f"((!has({t}.effect) || {t}.effect == '' || {t}.effect == {w}.effect) && "
        f"((has({t}.operator) && {t}.operator == 'Exists') ? "
        f"(!has({t}.key) || {t}.key == '' || {t}.key == {w}.key) : "
        f"((has({t}.key) ? {t}.key : '') == {w}.key && "
        f"(has({t}.value) ? {t}.value : '') == ({w}.operator == 'Exists' ? '' : {w}.value) "
        f"&& {w}.operator != 'Exists')))"
    )


def missing_tolerations(tolerations: Sequence[Toleration]) -> str:
    wanted = lit(toleration_dicts(tolerations))
    return (
        f"{wanted}.filter(w, !(has(object.spec.tolerations) && "
        f"object.spec.tolerations.exists(t, {_tolerates('t', 'w')})))"
    )


def mutation_tolerations_patch() -> str:
    return (
        "size(variables.missingTolerations) == 0 ? [] : has(object.spec.tolerations) ? "
        "variables.missingTolerations.map(w, JSONPatch{op: 'add', path: "
        "'/spec/tolerations/-', value: w}) : [JSONPatch{op: 'add', path: "
        "'/spec/tolerations', value: variables.missingTolerations}]"
    )


def zone_requirement(intent: AdmissionIntent) -> str:
    return lit({"key": intent.zone_label, "operator": "In", "values": list(intent.zones)})


def _pinned_term(intent: AdmissionIntent) -> str:
    """A node selector term with the zone requirement ANDed in (unless it has one already).

    dyn() everywhere: the branches mix typed pod fields and literals.
    """
    zl = lit(intent.zone_label)
    exprs = "(has(t.matchExpressions) ? dyn(t.matchExpressions) : dyn([]))"
    with_zone = f"dyn({exprs} + [variables.zoneRequirement])"
    # only an `In` on the zone label pins a term; NotIn/Exists still get the domain ANDed in
    has_zone = (
        f"(has(t.matchExpressions) && t.matchExpressions.exists(e, e.key == {zl} && "
        f"e.operator == 'In'))"
    )
    keep = (
        "(has(t.matchFields) ? dyn({'matchExpressions': " + exprs + ", 'matchFields': "
        "dyn(t.matchFields)}) : dyn({'matchExpressions': " + exprs + "}))"
    )
    add = (
        "(has(t.matchFields) ? dyn({'matchExpressions': " + with_zone + ", 'matchFields': "
        "dyn(t.matchFields)}) : dyn({'matchExpressions': " + with_zone + "}))"
    )
    return f"({has_zone} ? {keep} : {add})"


def mutation_node_affinity_patch(intent: AdmissionIntent) -> str:
    term = "{'nodeSelectorTerms': [{'matchExpressions': [variables.zoneRequirement]}]}"
    return (
        "!has(object.spec.affinity) ? [JSONPatch{op: 'add', path: '/spec/affinity', value: "
        "{'nodeAffinity': {'requiredDuringSchedulingIgnoredDuringExecution': " + term + "}}}] : "
        "!has(object.spec.affinity.nodeAffinity) ? [JSONPatch{op: 'add', path: "
        "'/spec/affinity/nodeAffinity', value: {'requiredDuringSchedulingIgnoredDuringExecution':"
        " " + term + "}}] : "
        f"!has({NODE_REQ}) ? [JSONPatch{{op: 'add', path: '{NODE_REQ_PATH}', value: {term}}}] : "
        f"[JSONPatch{{op: 'replace', path: '{NODE_REQ_PATH}/nodeSelectorTerms', value: "
        f"{NODE_REQ}.nodeSelectorTerms.map(t, {_pinned_term(intent)})}}]"
    )


def cel_map(entries: Sequence[tuple[str, str]]) -> str:
    """A map literal from (key, CEL expression) pairs; values dyn() so types may mix."""
    return "{" + ", ".join(f"{json.dumps(k)}: dyn({v})" for k, v in entries) + "}"


def coordinator_term(intent: AdmissionIntent) -> str:
    sel = intent.coordinator_selector
    job = lit(intent.job_label)
    labels = cel_map(
        [
            (intent.job_label, f"object.metadata.labels[{job}]"),
            *((k, lit(v)) for k, v in sel.match_labels),
        ]
    )
    exprs = [
        {"key": r.key, "operator": r.operator, "values": list(r.values)}
        if r.values
        else {"key": r.key, "operator": r.operator}
        for r in sel.match_expressions
    ]
    entries = [("matchLabels", labels)]
    if exprs:
        entries.append(("matchExpressions", lit(exprs)))
    return cel_map([("labelSelector", cel_map(entries)), ("topologyKey", lit(intent.topology_key))])


def has_coordinator_term(intent: AdmissionIntent) -> str:
    job = lit(intent.job_label)
    return (
        f"has(object.spec.affinity) && has(object.spec.affinity.podAffinity) && "
        f"has({POD_REQ}) && {POD_REQ}.exists(t, t.topologyKey == {lit(intent.topology_key)}"
        f" && has(t.labelSelector) && has(t.labelSelector.matchLabels) && "
        f"{job} in t.labelSelector.matchLabels && "
        f"t.labelSelector.matchLabels[{job}] == object.metadata.labels[{job}])"
    )


def mutation_pod_affinity_patch() -> str:
    return (
        "variables.hasCoordinatorTerm ? [] : "
        "!has(object.spec.affinity) ? [JSONPatch{op: 'add', path: '/spec/affinity', value: "
        "{'podAffinity': {'requiredDuringSchedulingIgnoredDuringExecution': "
        "[variables.coordinatorTerm]}}}] : "
        "!has(object.spec.affinity.podAffinity) ? [JSONPatch{op: 'add', path: "
        "'/spec/affinity/podAffinity', value: {'requiredDuringSchedulingIgnoredDuringExecution':"
        " [variables.coordinatorTerm]}}] : "
        f"!has({POD_REQ}) ? [JSONPatch{{op: 'add', path: '{POD_REQ_PATH}', value: "
        "[variables.coordinatorTerm]}] : "
        f"[JSONPatch{{op: 'add', path: '{POD_REQ_PATH}/-', value: variables.coordinatorTerm}}]"
    )


def mutation_identity_patch(intent: AdmissionIntent) -> str:
    assert intent.identity is not None
    key, zone = intent.identity
    path = "/metadata/labels/" + escape_pointer(key)
    return (
        f"{lit(key)} in object.metadata.labels && object.metadata.labels[{lit(key)}] == "
        f"{lit(zone)} ? [] : [JSONPatch{{op: 'add', path: {lit(path)}, value: {lit(zone)}}}]"
    )


def mutation_affinity_patch(intent: AdmissionIntent) -> str:
    return mutation_node_affinity_patch(intent)


# --- validation --------------------------------------------------------------------------


def validation_variables(intent: AdmissionIntent) -> list[dict[str, str]]:
    zl = lit(intent.zone_label)
    zone_in = f"(e.key == {zl} && e.operator == 'In')"
    has_req = (
        f"has(object.spec.affinity) && has(object.spec.affinity.nodeAffinity) && "
        f"has({NODE_REQ}) && size({NODE_REQ}.nodeSelectorTerms) > 0"
    )
    return [
        {"name": "isCoordinator", "expression": any_selector(intent.coordinator)},
        {
            "name": "selectorZone",
            "expression": f"has(object.spec.nodeSelector) && {zl} in object.spec.nodeSelector ? "
            f"[object.spec.nodeSelector[{zl}]] : []",
        },
        {"name": "terms", "expression": f"{has_req} ? {NODE_REQ}.nodeSelectorTerms : []"},
        {
            "name": "termsPinned",
            "expression": f"size(variables.terms) > 0 && variables.terms.all(t, has(t.matchExpressions) && "
            f"t.matchExpressions.exists(e, {zone_in}))",
        },
        {
            "name": "pinned",
            "expression": "size(variables.selectorZone) > 0 || variables.termsPinned",
        },
        # may the pod land in zone z? (only meaningful when pinned)
        {
            "name": "pinnedWithinDomain",
            # a nodeSelector zone decides when present (the scheduler needs it and the terms)
            "expression": f"size(variables.selectorZone) > 0 ? variables.selectorZone[0] in "
            f"{lit(list(intent.zones))} : (variables.termsPinned && variables.terms.all(t, "
            f"t.matchExpressions.exists(e, {zone_in} && e.values.all(v, v in "
            f"{lit(list(intent.zones))}))))",
        },
        {"name": "hasCoordinatorTerm", "expression": has_coordinator_term(intent)},
        *_span_variables(intent),
    ]


# Up to this many denied zone pairs, each is a validation of its own (one line in a policy
# report per pair); beyond, one validation looks the pod's zones up in a table of them. A
# validation per pair grows with the square of the zones: at 60 zones 1,770 of them make a
# 2 MB policy (over etcd's 1.5 MiB object limit) that admission evaluates pair by pair.
PAIRS_INLINE = 3


def _span_variables(intent: AdmissionIntent) -> list[dict[str, str]]:
    """The denied zone pairs as tables, and the zones a pinned pod may land in.

    Pairs denied by the same policies among every two zones of a set (a zone fence) are
    that set (a clique); the rest are a table source zone -> destination zone -> policies.
    """
    pairs = intent.denied_zone_pairs
    if len(pairs) <= PAIRS_INLINE:
        return []
    cliques, table = _denied_tables(pairs)
    names = sorted(
        {text for _, text in cliques} | {text for ps in table.values() for text in ps.values()}
    )
    index = {text: k for k, text in enumerate(names)}
    zones = sorted({z for za, zb, _ in pairs for z in (za, zb)})
    zl = lit(intent.zone_label)
    may_land = (
        "size(variables.selectorZone) > 0 ? variables.selectorZone[0] == z : "
        "(variables.termsPinned && variables.terms.exists(t, t.matchExpressions.exists(e, "
        f"e.key == {zl} && e.operator == 'In' && z in e.values)))"
    )
    out = [
        {"name": "deniedBy", "expression": lit(names)},
        # the zones of the pairs the pod may land in (only meaningful when pinned)
        {"name": "landing", "expression": f"{lit(zones)}.filter(z, {may_land})"},
    ]
    tests = []
    if cliques:
        # every two zones of a set: [zones, index of the policies denying their paths]
        entries = ", ".join(f"[dyn({lit(list(zs))}), dyn({index[text]})]" for zs, text in cliques)
        out.append({"name": "deniedSets", "expression": f"[{entries}]"})
        tests.append("variables.deniedSets.exists(s, a in s[0] && b in s[0])")
    if table:
        # source zone -> destination zone -> index of the policies denying that path
        rows = ", ".join(
            f"{json.dumps(za)}: {{"
            + ", ".join(f"{json.dumps(zb)}: {index[text]}" for zb, text in sorted(ps.items()))
            + "}"
            for za, ps in sorted(table.items())
        )
        out.append({"name": "deniedPairs", "expression": "{" + rows + "}"})
        tests.append("(a in variables.deniedPairs && b in variables.deniedPairs[a])")
    denied = " || ".join(tests)
    in_sets = "variables.deniedSets.filter(s, a in s[0] && b in s[0])[0][1]"
    in_table = "variables.deniedPairs[a][b]"
    if cliques and table:
        policy = (
            f"a in variables.deniedPairs && b in variables.deniedPairs[a] ? {in_table} : {in_sets}"
        )
    else:
        policy = in_sets if cliques else in_table
    return [
        *out,
        {
            "name": "spanFrom",
            "expression": "variables.landing.filter(a, variables.landing.exists(b, a < b && "
            f"({denied})))",
        },
        {
            "name": "spanTo",
            "expression": "size(variables.spanFrom) == 0 ? '' : [variables.spanFrom[0]].map(a, "
            f"variables.landing.filter(b, a < b && ({denied}))[0])[0]",
        },
        {
            "name": "spanBy",
            "expression": "size(variables.spanFrom) == 0 ? '' : [[variables.spanFrom[0], "
            f"variables.spanTo]].map(p, [p[0]].map(a, [p[1]].map(b, variables.deniedBy[{policy}])"
            "[0])[0])[0]",
        },
    ]


def _denied_tables(
    pairs: Sequence[tuple[str, str, tuple[str, ...]]],
) -> tuple[list[tuple[tuple[str, ...], str]], dict[str, dict[str, str]]]:
    """(cliques: zone sets whose every pair is denied by the same policies, the other pairs
    as source -> destination -> policies)."""
    by_text: dict[str, list[tuple[str, str]]] = {}
    for za, zb, policies in pairs:
        by_text.setdefault(", ".join(policies), []).append((za, zb))
    cliques: list[tuple[tuple[str, ...], str]] = []
    table: dict[str, dict[str, str]] = {}
    for text, group in sorted(by_text.items()):
        zones = sorted({z for pair in group for z in pair})
        if len(group) == len(zones) * (len(zones) - 1) // 2:
            cliques.append((tuple(zones), text))
            continue
        for za, zb in group:
            table.setdefault(za, {})[zb] = text
    return cliques, table


def _may_land(zone: str, intent: AdmissionIntent) -> str:
    zl = lit(intent.zone_label)
    z = lit(zone)
    return (
        f"((size(variables.selectorZone) > 0 && variables.selectorZone[0] == {z}) || "
        f"(size(variables.selectorZone) == 0 && variables.termsPinned && "
        f"variables.terms.exists(t, t.matchExpressions.exists(e, e.key == {zl} && "
        f"e.operator == 'In' && {z} in e.values))))"
    )


def validations(intent: AdmissionIntent) -> list[dict[str, str]]:
    name = "object.metadata.name"
    pod = f"'pod ' + ({name} != '' ? {name} : 'being created') + "
    zones = ", ".join(intent.zones)
    out = [
        {
            "expression": "!variables.isCoordinator || variables.pinnedWithinDomain",
            "messageExpression": pod
            + lit(
                f": the coordinator of group {intent.group} must be pinned to "
                f"{intent.zone_label} in [{zones}] (topogen co-location)"
            ),
            "reason": "Forbidden",
        },
        {
            "expression": "variables.isCoordinator || variables.hasCoordinatorTerm",
            "messageExpression": pod
            + lit(
                f": a worker of group {intent.group} must require pod affinity to its coordinator "
                f"on {intent.topology_key} (topogen co-location)"
            ),
            "reason": "Forbidden",
        },
    ]
    if intent.identity_label:
        il = lit(intent.identity_label)
        value = f"object.metadata.labels[{il}]"
        out.append(
            {
                "expression": f"!({il} in {LABELS}) || (variables.pinned && "
                f"(size(variables.selectorZone) > 0 ? variables.selectorZone[0] == "
                f"{value} : variables.terms.all(t, t.matchExpressions.exists(e, "
                f"e.key == {lit(intent.zone_label)} && e.operator == 'In' && "
                f"e.values.all(v, v == {value})))))",
                "messageExpression": pod
                + lit(f": identity label {intent.identity_label}=")
                + f" + {value} + "
                + lit(" claims a zone the pod is not pinned to"),
                "reason": "Forbidden",
            }
        )
    if len(intent.denied_zone_pairs) > PAIRS_INLINE:
        out.append(
            {
                # the first denied pair the pod spans, as the per-pair validations report it
                "expression": "size(variables.spanFrom) == 0",
                "messageExpression": pod
                + "': node affinity spans ' + variables.spanFrom[0] + ' and ' + "
                "variables.spanTo + ', whose traffic is denied by ' + variables.spanBy",
                "reason": "Forbidden",
            }
        )
        return out
    for za, zb, policies in intent.denied_zone_pairs:
        out.append(
            {
                "expression": f"!({_may_land(za, intent)} && {_may_land(zb, intent)})",
                "messageExpression": pod
                + lit(
                    f": node affinity spans {za} and {zb}, whose traffic is denied by "
                    f"{', '.join(policies)}"
                ),
                "reason": "Forbidden",
            }
        )
    return out
