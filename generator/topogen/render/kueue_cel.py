"""CEL for the job policies of a KueueIntent: Kyverno's MutatingPolicy and ValidatingPolicy
and the native admission policies share them, as the pod policies share cel.py.

The mutation walks every pod template Kueue makes a PodSet of (a map of replica specs:
each key; a list of ReplicatedJobs: each index) and returns one JSONPatch list for all:
per template, the zones ANDed into each required node-selector term (a term without one),
podset-required-topology at the intent's level unless the template asks a topology of
its own, and the intent's podset-group-name on a job of exactly two PodSets that Kueue
can group (one of a single pod, none asking another topology: what Kueue's own job
webhooks accept). Values enter as JSON literals (cel.lit), keys of the job through the
JSON Pointer escape.
"""

from __future__ import annotations

from topogen.kueue.vocabulary import (
    GROUP_NAME,
    PREFERRED_TOPOLOGY,
    QUEUE_LABEL,
    REQUIRED_TOPOLOGY,
    SLICE_REQUIRED_TOPOLOGY,
    SLICE_SIZE,
    TAS_ANNOTATIONS,
    UNCONSTRAINED_TOPOLOGY,
)
from topogen.render.cel import NAMESPACE, escape_pointer, lit, pinned_term
from topogen.render.kueue_intent import KueueIntent
from topogen.render.vocabulary import REQUIRED

__all__ = ["match_conditions", "mutation", "validations", "variables"]

_QUEUE = (
    f"(has(object.metadata.labels) && {lit(QUEUE_LABEL)} in object.metadata.labels ? "
    f"object.metadata.labels[{lit(QUEUE_LABEL)}] : 'default')"
)


def match_conditions(ki: KueueIntent) -> list[dict[str, str]]:
    return [
        {"name": "in-group-namespaces", "expression": f"{NAMESPACE} in {lit(list(ki.namespaces))}"},
        {
            "name": "queued-to-tas",
            "expression": f"({NAMESPACE} + '/' + {_QUEUE}) in {lit(list(ki.queues))}",
        },
    ]


def _field(ki: KueueIntent) -> str:
    return f"object.spec.{ki.kind.field}"


def _templates(ki: KueueIntent) -> tuple[str, str, str]:
    """(what to iterate, the template of iteration variable `v`, its JSON Pointer)."""
    f, field = _field(ki), escape_pointer(ki.kind.field)
    inner = "".join(f".{p}" for p in ki.kind.template)
    inner_ptr = "".join(f"/{escape_pointer(p)}" for p in ki.kind.template)
    if ki.kind.keyed:
        key = "v.replace('~', '~0').replace('/', '~1')"
        return f, f"{f}[v]{inner}", f"'/spec/{field}/' + {key} + {lit(inner_ptr)}"
    return (
        f"lists.range(size({f}))",
        f"{f}[v]{inner}",
        f"'/spec/{field}/' + string(v) + {lit(inner_ptr)}",
    )


def _count(ki: KueueIntent, e: str) -> str:
    """The pods of one entry (a replica spec, a ReplicatedJob)."""
    replicas = f"(has({e}.replicas) ? {e}.replicas : 1)"
    if ki.kind.keyed:
        return replicas
    return f"{replicas} * (has({e}.template.spec.parallelism) ? {e}.template.spec.parallelism : 1)"


def _annotations(t: str) -> tuple[str, str]:
    """(the template has annotations, them)."""
    return f"(has({t}.metadata) && has({t}.metadata.annotations))", f"{t}.metadata.annotations"


def _groupable(ki: KueueIntent, t: str) -> str:
    """Template `t` may join the job's group: it asks no topology but the intent's."""
    has, ann = _annotations(t)
    others = " || ".join(
        f"{lit(k)} in {ann}"
        for k in (PREFERRED_TOPOLOGY, UNCONSTRAINED_TOPOLOGY, SLICE_REQUIRED_TOPOLOGY, SLICE_SIZE)
    )
    return (
        f"(!{has} || (!({others}) && (!({lit(REQUIRED_TOPOLOGY)} in {ann}) || "
        f"{ann}[{lit(REQUIRED_TOPOLOGY)}] == {lit(ki.level)})))"
    )


def variables(ki: KueueIntent) -> list[dict[str, str]]:
    f = _field(ki)
    one = (
        f"{f}.exists(v, {_count(ki, f + '[v]')} == 1)"
        if ki.kind.keyed
        else f"{f}.exists(r, {_count(ki, 'r')} == 1)"
    )
    template = _templates(ki)[1]
    every = (
        f"{f}.all(v, {_groupable(ki, template)})"
        if ki.kind.keyed
        else f"lists.range(size({f})).all(v, {_groupable(ki, template)})"
    )
    return [
        {
            "name": "zoneRequirement",
            "expression": lit({"key": ki.zone_label, "operator": "In", "values": list(ki.zones)}),
        },
        # Kueue groups exactly two PodSets, one of a single pod, asking one topology
        {
            "name": "groupable",
            "expression": f"has({f}) && size({f}) == 2 && {one} && {every}",
        },
    ]


def _affinity_patch(ki: KueueIntent, t: str, p: str) -> str:
    terms = "{'nodeSelectorTerms': [{'matchExpressions': [variables.zoneRequirement]}]}"
    required = f"{{'{REQUIRED}': {terms}}}"
    na = f"{t}.spec.affinity.nodeAffinity"
    return (
        f"!has({t}.spec.affinity) ? [JSONPatch{{op: 'add', path: {p} + '/spec/affinity', "
        f"value: {{'nodeAffinity': {required}}}}}] : "
        f"!has({na}) ? [JSONPatch{{op: 'add', path: {p} + '/spec/affinity/nodeAffinity', "
        f"value: {required}}}] : "
        f"!has({na}.{REQUIRED}) ? [JSONPatch{{op: 'add', path: {p} + "
        f"'/spec/affinity/nodeAffinity/{REQUIRED}', value: {terms}}}] : "
        f"[JSONPatch{{op: 'replace', path: {p} + '/spec/affinity/nodeAffinity/{REQUIRED}"
        f"/nodeSelectorTerms', value: {na}.{REQUIRED}.nodeSelectorTerms.map(t, "
        f"{pinned_term(ki.zone_label)})}}]"
    )


def _annotation_patch(ki: KueueIntent, t: str, p: str) -> str:
    has, ann = _annotations(t)
    asks = " || ".join(f"{lit(k)} in {ann}" for k in TAS_ANNOTATIONS)
    need_level = f"!({has} && ({asks}))"
    need_group = f"(variables.groupable && !({has} && {lit(GROUP_NAME)} in {ann}))"
    r, g = lit(REQUIRED_TOPOLOGY), lit(GROUP_NAME)
    level, name = lit(ki.level), lit(ki.group_name)
    wanted = (
        f"(({need_level} && {need_group}) ? dyn({{{r}: {level}, {g}: {name}}}) : {need_level} "
        f"? dyn({{{r}: {level}}}) : {need_group} ? dyn({{{g}: {name}}}) : dyn({{}}))"
    )

    def add(path: str, value: str) -> str:
        return f"[JSONPatch{{op: 'add', path: {p} + {lit(path)}, value: {value}}}]"

    each = (
        f"({need_level} ? {add('/metadata/annotations/' + escape_pointer(REQUIRED_TOPOLOGY), level)}"
        f" : []) + ({need_group} ? "
        f"{add('/metadata/annotations/' + escape_pointer(GROUP_NAME), name)} : [])"
    )
    return (
        f"size({wanted}) == 0 ? [] : !has({t}.metadata) ? "
        f"{add('/metadata', '{' + lit('annotations') + ': ' + wanted + '}')} : "
        f"!has({t}.metadata.annotations) ? {add('/metadata/annotations', wanted)} : {each}"
    )


def mutation(ki: KueueIntent) -> str:
    """The one JSONPatch expression for every template of the job."""
    source, t, p = _templates(ki)
    per = f"({_affinity_patch(ki, t, p)}) + ({_annotation_patch(ki, t, p)})"
    return f"has({_field(ki)}) ? {source}.map(v, {per}).flatten() : []"


def _pinned(ki: KueueIntent, t: str) -> str:
    na = f"{t}.spec.affinity.nodeAffinity"
    return (
        f"(has({t}.spec.affinity) && has({na}) && has({na}.{REQUIRED}) && "
        f"size({na}.{REQUIRED}.nodeSelectorTerms) > 0 && {na}.{REQUIRED}.nodeSelectorTerms"
        f".all(t, has(t.matchExpressions) && t.matchExpressions.exists(e, e.key == "
        f"{lit(ki.zone_label)} && e.operator == 'In' && e.values.all(z, z in "
        f"{lit(list(ki.zones))}))))"
    )


def validations(ki: KueueIntent) -> list[dict[str, str]]:
    source, t, _ = _templates(ki)
    f = _field(ki)
    has, ann = _annotations(t)
    each = f"{source}.all(v, {{}})"
    job = "'job ' + (object.metadata.name != '' ? object.metadata.name : 'being created') + "
    queued = f"queued to Kueue TAS ({', '.join(ki.queues)})"
    grouped = (
        f"{source}.all(v, {has} && {lit(GROUP_NAME)} in {ann}) && {source}.all(v, "
        f"{source}.all(w, {ann}[{lit(GROUP_NAME)}] == {t.replace('[v]', '[w]')}.metadata"
        f".annotations[{lit(GROUP_NAME)}]))"
    )
    return [
        {
            "expression": f"!has({f}) || " + each.format(_pinned(ki, t)),
            "messageExpression": job
            + lit(
                f": every pod template of a job {queued} must require {ki.zone_label} in "
                f"[{', '.join(ki.zones)}] (topogen, group {ki.group})"
            ),
            "reason": "Forbidden",
        },
        {
            "expression": f"!has({f}) || "
            + each.format(
                f"{has} && ({' || '.join(f'{lit(k)} in {ann}' for k in TAS_ANNOTATIONS)})"
            ),
            "messageExpression": job
            + lit(
                f": every pod template of a job {queued} must ask a Kueue topology "
                f"(podset-required-topology {ki.level}; topogen, group {ki.group})"
            ),
            "reason": "Forbidden",
        },
        {
            "expression": f"!variables.groupable || ({grouped})",
            "messageExpression": job
            + lit(
                f": the two PodSets of a job {queued} must share one podset-group-name "
                f"(topogen, group {ki.group}: else Kueue may place them in different zones)"
            ),
            "reason": "Forbidden",
        },
    ]
