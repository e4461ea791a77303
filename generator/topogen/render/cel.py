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
from topogen.render.requirements import expressions
from topogen.render.vocabulary import (
    NODE_AFFINITY,
    POD_AFFINITY,
    REQUIRED,
    required_field,
    required_pointer,
)

__all__ = [
    "ENSURE_AFFINITY",
    "LABELS",
    "affinity_field_patch",
    "escape_pointer",
    "lit",
    "match_role",
    "mutation_identity_patch",
    "mutation_node_affinity_patch",
    "mutation_pod_affinity_patch",
    "mutation_tolerations_patch",
    "toleration_dicts",
]

LABELS = "(has(object.metadata.labels) ? object.metadata.labels : {})"
NAMESPACE = (
    "(has(object.metadata.namespace) && object.metadata.namespace != '' ? "
    "object.metadata.namespace : request.namespace)"
)
NODE_REQ = required_field(NODE_AFFINITY, "object.spec")
POD_REQ = required_field(POD_AFFINITY, "object.spec")
NODE_REQ_PATH = required_pointer(NODE_AFFINITY)
POD_REQ_PATH = required_pointer(POD_AFFINITY)


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
    return f"{NAMESPACE} in {lit(list(namespaces))}"


def not_kueue(intent: AdmissionIntent) -> str:
    annotations = "(has(object.metadata.annotations) ? object.metadata.annotations : {})"
    gated = (
        "has(object.spec.schedulingGates) && "
        f"object.spec.schedulingGates.exists(g, g.name == {lit(intent.skip_gate)})"
    )
    keys = [f"!({lit(k)} in {LABELS}) && !({lit(k)} in {annotations})" for k in intent.skip_keys]
    return " && ".join([*keys, f"!({gated})"])


def is_member(intent: AdmissionIntent) -> str:
    """The pod carries the job label, or is a detached pod of a job (KubeRay's submitter)."""
    member = f"{lit(intent.job_label)} in {LABELS}"
    if intent.detached:
        member = f"({member} || {any_selector(intent.detached)})"
    return member


def is_coordinator(intent: AdmissionIntent) -> str:
    coordinator = any_selector(intent.coordinator)
    if not intent.detached:
        return coordinator
    job = f"{lit(intent.job_label)} in {LABELS}"
    return f"(({job} && {coordinator}) || (!({job}) && {any_selector(intent.detached)}))"


def is_worker(intent: AdmissionIntent) -> str:
    worker = f"!{any_selector(intent.coordinator)} && {any_selector(intent.worker)}"
    if intent.detached:
        worker = f"{lit(intent.job_label)} in {LABELS} && {worker}"
    return worker


def match_role(intent: AdmissionIntent, role: str | None) -> list[dict[str, str]]:
    """matchConditions: the group's namespaces, the job label, the role, not Kueue TAS.
    role coordinator or worker: that role; another (the mutation of both) or None (the
    validation): either role; None also: a CREATE, or an UPDATE that relabels."""
    conds = [
        {"name": "in-group-namespaces", "expression": namespace_in(intent.namespaces)},
        {"name": "is-training-pod", "expression": is_member(intent)},
        {"name": "not-placed-by-kueue-tas", "expression": not_kueue(intent)},
    ]
    if role == "coordinator":
        conds.append({"name": "is-coordinator", "expression": is_coordinator(intent)})
    elif role == "worker":
        conds.append({"name": "is-worker", "expression": is_worker(intent)})
    else:
        conds.append(
            {
                "name": "has-role",
                "expression": f"{is_coordinator(intent)} || {any_selector(intent.worker)}",
            }
        )
    if role is None:
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
    if intent.per_job:
        return cel_map(
            [
                ("key", lit(intent.zone_label)),
                ("operator", lit("In")),
                ("values", "variables.jobZones"),
            ]
        )
    return lit({"key": intent.zone_label, "operator": "In", "values": list(intent.zones)})


def pinned_term(zone_label: str) -> str:
    """A node selector term `t` with variables.zoneRequirement ANDed in (unless it has an
    `In` on the zone label already).

    dyn() everywhere: the branches mix typed pod fields and literals.
    """
    zl = lit(zone_label)
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


def affinity_field_patch(field: str, value: str, ensured: bool) -> str:
    """The first branches of a patch adding spec.affinity.<field> = value where it is
    missing. `ensured`: an earlier patch of the same JSONPatch list adds /spec/affinity
    where the pod has none, so this one adds only its field (the expression still sees
    the pod as sent)."""
    add_field = f"[JSONPatch{{op: 'add', path: '/spec/affinity/{field}', value: {value}}}]"
    if ensured:
        return f"!has(object.spec.affinity) || !has(object.spec.affinity.{field}) ? {add_field} : "
    return (
        f"!has(object.spec.affinity) ? [JSONPatch{{op: 'add', path: '/spec/affinity', value: "
        f"{{'{field}': {value}}}}}] : !has(object.spec.affinity.{field}) ? {add_field} : "
    )


ENSURE_AFFINITY = (
    "has(object.spec.affinity) ? [] : [JSONPatch{op: 'add', path: '/spec/affinity', value: {}}]"
)


def mutation_node_affinity_patch(intent: AdmissionIntent, ensured: bool = False) -> str:
    """Always adds where the pod has no affinity: a join led by ENSURE_AFFINITY that holds
    this patch never leaves an empty affinity."""
    term = "{'nodeSelectorTerms': [{'matchExpressions': [variables.zoneRequirement]}]}"
    required = f"{{'{REQUIRED}': " + term + "}"
    return (
        affinity_field_patch(NODE_AFFINITY, required, ensured)
        + f"!has({NODE_REQ}) ? [JSONPatch{{op: 'add', path: '{NODE_REQ_PATH}', value: {term}}}] : "
        f"[JSONPatch{{op: 'replace', path: '{NODE_REQ_PATH}/nodeSelectorTerms', value: "
        f"{NODE_REQ}.nodeSelectorTerms.map(t, {pinned_term(intent.zone_label)})}}]"
    )


def cel_map(entries: Sequence[tuple[str, str]]) -> str:
    """A map literal from (key, CEL expression) pairs; values dyn() so types may mix."""
    return "{" + ", ".join(f"{json.dumps(k)}: dyn({v})" for k, v in entries) + "}"


def _term(intent: AdmissionIntent, sel: LabelSelector) -> str:
    """A worker's co-location term: its own job (and scope) labels plus `sel`."""
    own = [(k, f"object.metadata.labels[{lit(k)}]") for k in (intent.job_label, *intent.scope)]
    labels = cel_map([*own, *((k, lit(v)) for k, v in sel.match_labels)])
    exprs = expressions(sel)
    entries = [("matchLabels", labels)]
    if exprs:
        entries.append(("matchExpressions", lit(exprs)))
    return cel_map([("labelSelector", cel_map(entries)), ("topologyKey", lit(intent.topology_key))])


def coordinator_term(intent: AdmissionIntent) -> str:
    """The term of the first worker selector the pod matches (the last one: the default)."""
    variants = intent.worker_anchors
    out = _term(intent, variants[-1][1])
    for w, anchor in reversed(variants[:-1]):
        out = f"({selector(w)}) ? dyn({_term(intent, anchor)}) : dyn({out})"
    return out


def has_coordinator_term(intent: AdmissionIntent, label_keys: bool = False) -> str:
    """A required pod-affinity term on the topology key selecting the pod's own job by
    matchLabels; `label_keys`: or naming the job label in matchLabelKeys (the form
    Gatekeeper's mutator writes: the API server turns it into `<job label> In (<value>)`)."""
    job = lit(intent.job_label)
    own = (
        f"has(t.labelSelector.matchLabels) && {job} in t.labelSelector.matchLabels && "
        f"t.labelSelector.matchLabels[{job}] == object.metadata.labels[{job}]"
    )
    if label_keys:
        own = f"(({own}) || (has(t.matchLabelKeys) && {job} in t.matchLabelKeys))"
    return (
        f"has(object.spec.affinity) && has(object.spec.affinity.podAffinity) && "
        f"has({POD_REQ}) && {POD_REQ}.exists(t, t.topologyKey == {lit(intent.topology_key)}"
        f" && has(t.labelSelector) && {own})"
    )


def mutation_pod_affinity_patch(ensured: bool = False) -> str:
    required = f"{{'{REQUIRED}': [variables.coordinatorTerm]}}"
    return (
        "variables.hasCoordinatorTerm ? [] : "
        + affinity_field_patch("podAffinity", required, ensured)
        + f"!has({POD_REQ}) ? [JSONPatch{{op: 'add', path: '{POD_REQ_PATH}', value: "
        "[variables.coordinatorTerm]}] : "
        f"[JSONPatch{{op: 'add', path: '{POD_REQ_PATH}/-', value: variables.coordinatorTerm}}]"
    )


def has_identity(intent: AdmissionIntent) -> bool:
    """Does the mutation set an identity label (on some pods, when per job)?"""
    return intent.identity is not None or (intent.job_identity and bool(intent.identity_label))


def mutation_identity_patch(intent: AdmissionIntent) -> str:
    if intent.identity is not None:
        key, zone_lit = intent.identity[0], lit(intent.identity[1])
        only = ""
    else:  # per job: the job's zone, where its domain is one zone
        assert intent.identity_label is not None
        key, zone_lit = intent.identity_label, "string(variables.jobZones[0])"
        only = "size(variables.jobZones) != 1 ? [] : "
    path = "/metadata/labels/" + escape_pointer(key)
    return (
        f"{only}{lit(key)} in object.metadata.labels && object.metadata.labels[{lit(key)}] == "
        f"{zone_lit} ? [] : [JSONPatch{{op: 'add', path: {lit(path)}, value: {zone_lit}}}]"
    )


# --- validation --------------------------------------------------------------------------


def validation_variables(intent: AdmissionIntent, label_keys: bool = False) -> list[dict[str, str]]:
    """The validation's variables; `label_keys`: see has_coordinator_term."""
    zl = lit(intent.zone_label)
    zone_in = f"(e.key == {zl} && e.operator == 'In')"
    has_req = (
        f"has(object.spec.affinity) && has(object.spec.affinity.nodeAffinity) && "
        f"has({NODE_REQ}) && size({NODE_REQ}.nodeSelectorTerms) > 0"
    )
    return [
        {"name": "isCoordinator", "expression": is_coordinator(intent)},
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
        {"name": "hasCoordinatorTerm", "expression": has_coordinator_term(intent, label_keys)},
        *_span_variables(intent),
    ]


# Up to this many denied zone pairs, each is a validation of its own (one line in a policy
# report per pair); beyond, one validation looks the pod's zones up in a table of them. A
# validation per pair grows with the square of the zones: at 60 zones 1,770 of them make a
# 2 MB policy (over etcd's 1.5 MiB object limit) that admission evaluates pair by pair.
PAIRS_INLINE = 3


# Zone codes in the span table: one character each up to 62 zones, in ASCII order.
CODE_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def zone_codes(zones: Sequence[str]) -> dict[str, str]:
    """Sorted zones -> fixed-width codes that sort as the zones do."""
    width, n = 1, len(CODE_DIGITS)
    while n < len(zones):
        width, n = width + 1, n * len(CODE_DIGITS)
    out: dict[str, str] = {}
    for i, z in enumerate(sorted(zones)):
        code = ""
        for _ in range(width):
            i, d = divmod(i, len(CODE_DIGITS))
            code = CODE_DIGITS[d] + code
        out[z] = code
    return out


def _span_table(intent: AdmissionIntent) -> dict[str, str]:
    """_table(intent), once per intent: its variables and its message both need it, and
    every engine renders one intent's policies one after another."""
    global _last_span
    if _last_span is None or _last_span[0] is not intent:
        _last_span = (intent, _table(intent))
    return _last_span[1]


_last_span: tuple[AdmissionIntent, dict[str, str]] | None = None


def _table(intent: AdmissionIntent) -> dict[str, str]:
    """The denied zone pairs as CEL text literals, and the zones a pinned pod may land in.

    The Kyverno CLI compiles a policy for every resource it evaluates: each expression
    (variable, validation, message) costs a fixed amount, and a literal in proportion to
    its size (a list or map, to its elements). So the 1,770 pairs of 60 zones are one text
    `pairs` of `|ab=k` entries, a and b the zones' codes (`zone_codes`, listed in `codes`
    and named in `zones`) and k the line of `lines` listing, as indexes into the lines of
    `names`, the policies that deny the pair; and only `landing` (the codes of the zones a
    pinned pod may land in) and `spanFrom` are variables.
    """
    pairs = intent.denied_zone_pairs
    names = sorted({name for _, _, policies in pairs for name in policies})
    name_at = {name: str(k) for k, name in enumerate(names)}
    lines = sorted({",".join(name_at[n] for n in policies) for _, _, policies in pairs})
    line_at = {line: k for k, line in enumerate(lines)}
    codes = zone_codes(sorted({z for za, zb, _ in pairs for z in (za, zb)}))
    table = "|" + "|".join(
        f"{codes[za]}{codes[zb]}={line_at[','.join(name_at[n] for n in p)]}" for za, zb, p in pairs
    )
    return {
        "pairs": lit(table),
        "lines": lit("\n".join(lines)),
        "names": lit("\n".join(names)),
        "codes": lit(" ".join(codes.values())),
        "zones": lit(" ".join(codes)),
        "width": str(len(next(iter(codes.values()))) + 1),
    }


def _span_variables(intent: AdmissionIntent) -> list[dict[str, str]]:
    if len(intent.denied_zone_pairs) <= PAIRS_INLINE:
        return []
    t = _span_table(intent)
    zl = lit(intent.zone_label)
    z = f"{t['zones']}.split(' ')[{t['codes']}.indexOf(c) / {t['width']}]"
    may_land = (
        f"size(variables.selectorZone) > 0 ? variables.selectorZone[0] == {z} : "
        "(variables.termsPinned && variables.terms.exists(t, t.matchExpressions.exists(e, "
        f"e.key == {zl} && e.operator == 'In' && {z} in e.values)))"
    )
    return [
        # the codes of the zones the pod may land in (only meaningful when pinned)
        {
            "name": "landing",
            "expression": f"{t['codes']}.split(' ').filter(c, {may_land})",
        },
        # the codes of the zones the pod may land in paired with a later one it may land in
        {
            "name": "spanFrom",
            "expression": "variables.landing.filter(a, variables.landing.exists(b, a < b && "
            f"{t['pairs']}.contains('|' + a + b + '=')))",
        },
    ]


def _span_message(intent: AdmissionIntent) -> str:
    """The first denied pair the pod spans, and the policies denying it, as a text."""
    t = _span_table(intent)

    def zone(c: str) -> str:
        return f"{t['zones']}.split(' ')[{t['codes']}.indexOf({c}) / {t['width']}]"

    by = (
        f"{t['lines']}.split('\\n')[int({t['pairs']}.split('|' + a + b + '=')[1].split('|')[0])]"
        f".split(',').map(k, {t['names']}.split('\\n')[int(k)]).join(', ')"
    )
    return (
        "[variables.spanFrom[0]].map(a, [variables.landing.filter(b, a < b && "
        f"{t['pairs']}.contains('|' + a + b + '='))[0]].map(b, ': node affinity spans ' + "
        f"{zone('a')} + ' and ' + {zone('b')} + ', whose traffic is denied by ' + {by})[0])[0]"
    )


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
                "messageExpression": pod + _span_message(intent),
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
