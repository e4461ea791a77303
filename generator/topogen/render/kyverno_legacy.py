"""Kyverno legacy policies (kyverno.io/v1 ClusterPolicy) for clusters on older Kyverno.

Same behaviour as the CEL policies of render/kyverno.py (checked pod for pod with the
real CLI in tests/kyverno_legacy), written in ClusterPolicy terms: match/exclude
blocks as narrow as cel.match_role, JMESPath for the conditions, JSON patches for
the lists (a strategic merge would replace them), one rule per check. Kyverno's
defaults are rendered explicitly (allowExistingViolations: true, the default, keeps
UPDATEs of pods admitted before the policy, e.g. the Job controller removing its
finalizer, from being rejected; the CEL policy judges an UPDATE only when it
changes the pod's labels).

How values stay data:
- label keys enter JMESPath as quoted identifiers (`labels."app.kubernetes.io/name"`)
  and static values as JSON literals (backticks), both built with json.dumps;
- the pod's own label values never become JMESPath text, with one exception:
  the identity check compares terms' zones with the pod's identity label through
  a nested `'{{ ... }}'`: validating admission and background scans only see objects
  that passed API validation, whose label values are `[A-Za-z0-9._-]`;
- values inserted into patches (`{{ element }}`, `{{ coordinatorTerm }}`) are maps,
  which Kyverno writes as JSON; the coordinator term is a context variable whose
  job-label value is substituted as a whole string (typed, not text).
Kyverno substitutes `{{ ... }}` anywhere in a rule, so no value may contain braces.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from typing import Any

import yaml

from topogen.errors import InputError, InternalError
from topogen.model import LabelSelector, Requirement
from topogen.render import cel
from topogen.render.base import RenderedFile, render_documents
from topogen.render.intent import (
    MUTATE,
    AdmissionIntent,
    Bucket,
    anti_affinity_term,
    buckets,
    kyverno_library_annotations,
    named_jobs,
    policy_metadata,
)
from topogen.render.requirements import selector
from topogen.render.vocabulary import (
    NODE_AFFINITY,
    POD_AFFINITY,
    POD_ANTI_AFFINITY,
    required_field,
    required_pointer,
)

__all__ = ["kyverno_legacy_policies"]

OBJ = "request.object"
NODE_REQ = required_field(NODE_AFFINITY, f"{OBJ}.spec")
NODE_TERMS = f"{NODE_REQ}.nodeSelectorTerms"
POD_REQ = required_field(POD_AFFINITY, f"{OBJ}.spec")
ANTI_REQ = required_field(POD_ANTI_AFFINITY, f"{OBJ}.spec")
NODE_REQ_PATH = required_pointer(NODE_AFFINITY)
POD_REQ_PATH = required_pointer(POD_AFFINITY)
ANTI_REQ_PATH = required_pointer(POD_ANTI_AFFINITY)
AUTOGEN = "pod-policies.kyverno.io/autogen-controllers"
_KYVERNO_VAR = re.compile(r"\{\{.*?\}\}")


# --- JMESPath ----------------------------------------------------------------------------


def lit(value: Any) -> str:
    """A JMESPath JSON literal."""
    return "`" + json.dumps(value, sort_keys=True, ensure_ascii=False).replace("`", "\\`") + "`"


def ident(key: str) -> str:
    """A JMESPath quoted identifier: label keys carry dots and slashes."""
    return json.dumps(key, ensure_ascii=False)


def label(key: str) -> str:
    return f"{OBJ}.metadata.labels.{ident(key)}"


def var(expression: str) -> str:
    return "{{ " + expression + " }}"


def _condition(expression: str, value: bool) -> dict[str, Any]:
    return {"key": var(expression), "operator": "Equals", "value": value}


def _terms() -> str:
    return f"({NODE_TERMS} || `[]`)"


def _selector_zone(intent: AdmissionIntent) -> str:
    return f"{OBJ}.spec.nodeSelector.{ident(intent.zone_label)}"


def _zone_in(intent: AdmissionIntent) -> str:
    """Filter predicate on a node selector requirement: `<zone label> In (...)`."""
    return f'key == {lit(intent.zone_label)} && operator == `"In"`'


def _terms_pinned(intent: AdmissionIntent) -> str:
    """Some required term exists and every one has a `<zone label> In` requirement."""
    t = _terms()
    return f"(length({t}) > `0` && length({t}[?!(matchExpressions[?{_zone_in(intent)}])]) == `0`)"


def _every_term_has(intent: AdmissionIntent, values_test: str) -> str:
    """Some term exists and each has a `<zone label> In` requirement whose values pass."""
    t = _terms()
    return (
        f"(length({t}) > `0` && length({t}[?!(matchExpressions[?{_zone_in(intent)} && "
        f"{values_test}])]) == `0`)"
    )


def _tolerates(w: dict[str, str]) -> str:
    """Filter predicate on an existing toleration: does it tolerate the taint `w` is for?

    The same rule as cel._tolerates, with the wanted toleration as literals.
    """
    effect = f'(effect == `null` || effect == `""` || effect == {lit(w["effect"])})'
    exists = f'(key == `null` || key == `""` || key == {lit(w["key"])})'
    if w["operator"] == "Exists":
        equal = "`false`"
    else:
        equal = (
            f'((key || `""`) == {lit(w["key"])} && (value || `""`) == {lit(w.get("value", ""))})'
        )
    return (
        f'{effect} && ((operator == `"Exists"` && {exists}) || (operator != `"Exists"` && {equal}))'
    )


def missing_tolerations(intent: AdmissionIntent) -> str:
    """A foreach list: each wanted toleration, or null (skipped) when one already covers it.

    Every entry is judged against the pod as admitted (Kyverno updates request.object
    only after the whole foreach), as the CEL filter does.
    """
    items = [
        f"(length({OBJ}.spec.tolerations[?{_tolerates(w)}] || `[]`) == `0` && {lit(w)}) || `null`"
        for w in cel.toleration_dicts(intent.tolerations)
    ]
    return "[" + ", ".join(items) + "]"


def has_coordinator_term(intent: AdmissionIntent) -> str:
    """A required pod affinity term on the topology key naming this pod's job value."""
    job = intent.job_label
    values = (
        f"({POD_REQ}[?topologyKey == {lit(intent.topology_key)}]"
        f".labelSelector.matchLabels.{ident(job)} || `[]`)"
    )
    return f"contains({values}, {label(job)})"


def missing_exclusions(intent: AdmissionIntent, bucket: Bucket) -> str:
    """A foreach list: each of the bucket's anti-affinity terms, or null (skipped) when an
    existing term already says it (reference.same_exclusion)."""
    items = []
    for e in bucket.excludes:
        t = anti_affinity_term(intent, e)
        same = (
            f"topologyKey == {lit(t['topologyKey'])} && namespaces == {lit(t['namespaces'])} "
            f"&& labelSelector.matchExpressions == {lit(t['labelSelector']['matchExpressions'])}"
        )
        items.append(f"(length({ANTI_REQ}[?{same}] || `[]`) == `0` && {lit(t)}) || `null`")
    return "[" + ", ".join(items) + "]"


def _pod_name() -> str:
    return var(f"{OBJ}.metadata.name || 'being created'")


# --- match blocks ------------------------------------------------------------------------


def _match(
    intent: AdmissionIntent,
    selectors: Sequence[LabelSelector],
    operations: Sequence[str],
    detached: Sequence[LabelSelector] = (),
    bucket: Bucket | None = None,
) -> dict[str, Any]:
    """Pods of the group's namespaces with the job label and one of the role's selectors
    (of the bucket's namespace and jobs, when given one), or, for `detached`, without the
    job label and one of those."""
    job = [Requirement(intent.job_label, "Exists")]
    no_job = [Requirement(intent.job_label, "DoesNotExist")]
    namespaces = list(intent.namespaces)
    if bucket is not None:
        namespaces = [bucket.namespace]
        named = named_jobs(intent, bucket.namespace)
        if bucket.jobs is not None:
            job = [Requirement(intent.job_label, "In", bucket.jobs)]
        elif named:  # NotIn alone would match pods without the label too
            job.append(Requirement(intent.job_label, "NotIn", named))

    def one(sel: LabelSelector, extra: Sequence[Requirement]) -> dict[str, Any]:
        return {
            "resources": {
                "kinds": ["Pod"],
                "namespaces": list(namespaces),
                "operations": list(operations),
                "selector": selector(sel, extra),
            }
        }

    return {"any": [*(one(s, job) for s in selectors), *(one(d, no_job) for d in detached)]}


def _exclude(intent: AdmissionIntent, selectors: Sequence[LabelSelector] = ()) -> dict[str, Any]:
    """Kueue TAS pods (label or annotation; the gate: `_ungated`), and pods of `selectors`
    (other roles)."""
    filters: list[dict[str, Any]] = [
        {"resources": {"kinds": ["Pod"], "selector": selector(s)}} for s in selectors
    ]
    for key in intent.skip_keys:
        filters.append(
            {
                "resources": {
                    "kinds": ["Pod"],
                    "selector": {"matchExpressions": [{"key": key, "operator": "Exists"}]},
                }
            }
        )
        filters.append({"resources": {"kinds": ["Pod"], "annotations": {key: "*"}}})
    return {"any": filters}


def _role_scope(
    intent: AdmissionIntent,
    role: str | None,
    operations: Sequence[str],
    workers: Sequence[LabelSelector] | None = None,
    not_workers: Sequence[LabelSelector] = (),
) -> dict[str, Any]:
    """match/exclude exactly as narrow as cel.match_role (`workers`: some of the worker
    selectors only, and not `not_workers`, the ones before them)."""
    ungated = {"preconditions": [_ungated(intent)]}
    if role == "coordinator":
        return {
            "match": _match(intent, intent.coordinator, operations, intent.detached),
            "exclude": _exclude(intent),
            **ungated,
        }
    if role == "worker":
        return {
            "match": _match(intent, intent.worker if workers is None else workers, operations),
            "exclude": _exclude(intent, (*intent.coordinator, *not_workers)),
            **ungated,
        }
    return {
        "match": _match(intent, (*intent.coordinator, *intent.worker), operations, intent.detached),
        "exclude": _exclude(intent),
        **ungated,
    }


def _ungated(intent: AdmissionIntent) -> dict[str, Any]:
    """Not gated by Kueue's TAS (match/exclude cannot see a scheduling gate: a precondition)."""
    gates = f"{OBJ}.spec.schedulingGates[].name || `[]`"
    return _condition(f"contains({gates}, {lit(intent.skip_gate)})", False)


# --- policies ----------------------------------------------------------------------------


def _meta(intent: AdmissionIntent, what: str) -> dict[str, Any]:
    return policy_metadata(
        intent,
        what,
        {
            AUTOGEN: "none",  # pods only, as the CEL policies (autogen controllers: [])
            **kyverno_library_annotations(
                intent,
                f"topogen {what} co-location for {intent.group}",
                "for Kyverno before 1.17 (ClusterPolicy)",
            ),
        },
        summary=False,
    )


def _coordinator_term(intent: AdmissionIntent, sel: LabelSelector) -> dict[str, Any]:
    """A worker's pod affinity term, with this pod's job (and scope) values (Kyverno
    variables)."""
    own = {k: var(label(k)) for k in (intent.job_label, *intent.scope)}
    label_selector: dict[str, Any] = {"matchLabels": {**own, **dict(sel.match_labels)}}
    exprs = selector(LabelSelector((), sel.match_expressions)).get("matchExpressions")
    if exprs:
        label_selector["matchExpressions"] = exprs
    return {"labelSelector": label_selector, "topologyKey": intent.topology_key}


def _pinning(intent: AdmissionIntent, role: str) -> list[dict[str, Any]]:
    """The zone rules of one role: once, or per bucket of jobs when the zones are per job."""
    selectors = intent.coordinator if role == "coordinator" else intent.worker
    chosen: list[Bucket | None] = list(buckets(intent)) if intent.per_job else [None]
    out = []
    for k, b in enumerate(chosen):
        zones = intent.zones if b is None else b.zones
        req = {"key": intent.zone_label, "operator": "In", "values": list(zones)}
        identity = intent.identity if b is None else b.identity
        scope = _role_scope(intent, role, ["CREATE"])
        if b is not None:  # never with detached pods (intent.intent_for)
            scope["match"] = _match(intent, selectors, ["CREATE"], bucket=b)
        out.append(
            {
                "suffix": "" if b is None else f"-{k + 1}",
                **scope,
                "zone_requirement": req,
                "required": {"nodeSelectorTerms": [{"matchExpressions": [req]}]},
                "identity": dict([identity]) if identity else None,
                "exclusions": missing_exclusions(intent, b) if b and b.excludes else None,
            }
        )
    return out


def _role(intent: AdmissionIntent, role: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": role, **_role_scope(intent, role, ["CREATE"])}
    out["pinning"] = _pinning(intent, role)
    out["tolerations"] = (
        missing_tolerations(intent) if role == "coordinator" and intent.tolerations else None
    )
    out["terms"] = []
    if role == "worker":
        variants = intent.worker_anchors
        for i, (w, anchor) in enumerate(variants):
            # one rule per worker selector: its term, for the workers no earlier one took
            suffix = "" if len(variants) == 1 else f"-{i + 1}"
            scope = _role_scope(intent, "worker", ["CREATE"], [w], [v for v, _ in variants[:i]])
            out["terms"].append(
                {
                    "name": f"worker-coordinator-affinity{suffix}",
                    **scope,
                    "term": _coordinator_term(intent, anchor),
                    "lacks": [_condition(has_coordinator_term(intent), False)],
                }
            )
    return out


def mutate_policy(intent: AdmissionIntent) -> RenderedFile:
    name = f"{intent.name}-mutate"
    text, objs = render_documents(
        "kyverno-legacy/mutate-policy.yaml.j2",
        name=name,
        **_meta(intent, MUTATE),
        roles=[_role(intent, r) for r in intent.roles],
        lacks_required=[_condition(f"{NODE_REQ} == `null`", True)],
        term_lacks_zone=[
            _condition(
                f"length(element.matchExpressions[?key == {lit(intent.zone_label)} && operator == 'In'] || `[]`) == `0`",
                True,
            )
        ],
        terms_list=NODE_TERMS,
        tolerations_path="/spec/tolerations",
        pod_req_path=POD_REQ_PATH,
        anti_req_path=ANTI_REQ_PATH,
        node_req_path=NODE_REQ_PATH,
        term_path=NODE_REQ_PATH + "/nodeSelectorTerms/{{elementIndex}}/matchExpressions/-",
    )
    _check(objs)
    return RenderedFile(f"{name}.yaml", text, objs)


def _deny(
    intent: AdmissionIntent,
    name: str,
    role: str | None,
    message: str,
    deny_when: str,
    preconditions: str | None = None,
) -> dict[str, Any]:
    scope = _role_scope(intent, role, ["CREATE", "UPDATE"])
    if preconditions:
        scope["preconditions"] = [*scope["preconditions"], _condition(preconditions, True)]
    return {
        "name": name,
        **scope,
        "message": message,
        "deny": [_condition(deny_when, True)],
    }


def validation_rules(intent: AdmissionIntent) -> list[dict[str, Any]]:
    """The checks of cel.validations, one rule each."""
    pod = f"pod {_pod_name()}: "
    zones = lit(list(intent.zones))
    sz = _selector_zone(intent)
    # a nodeSelector zone decides when present (the scheduler needs it and the terms)
    every = _every_term_has(intent, f"length((values || `[]`)[?!contains({zones}, @)]) == `0`")
    within = f"({sz} != null && contains({zones}, {sz})) || ({sz} == null && ({every}))"
    rules = [
        _deny(
            intent,
            "coordinator-pinned-to-domain",
            "coordinator",
            pod + f"the coordinator of group {intent.group} must be pinned to "
            f"{intent.zone_label} in [{', '.join(intent.zones)}] (topogen co-location)",
            f"!({within})",
        ),
        _deny(
            intent,
            "worker-requires-coordinator-affinity",
            "worker",
            pod + f"a worker of group {intent.group} must require pod affinity to its "
            f"coordinator on {intent.topology_key} (topogen co-location)",
            f"!({has_coordinator_term(intent)})",
        ),
    ]
    if intent.identity_label:
        value = label(intent.identity_label)
        # the nested variable: see the module docstring
        same = f"length((values || `[]`)[?@ != '{var(value)}']) == `0`"
        agrees = (
            f"({sz} != `null` && {sz} == {value}) || "
            f"({sz} == `null` && {_every_term_has(intent, same)})"
        )
        rules.append(
            _deny(
                intent,
                "identity-label-matches-zone",
                None,
                pod + f"identity label {intent.identity_label}={var(value)} claims a zone the pod "
                "is not pinned to",
                f"!({agrees})",
                preconditions=f"{value} != `null`",
            )
        )
    for i, (za, zb, policies) in enumerate(intent.denied_zone_pairs):
        rules.append(
            _deny(
                intent,
                f"no-denied-zone-span-{i + 1}",
                None,
                pod + f"node affinity spans {za} and {zb}, whose traffic is denied by "
                f"{', '.join(policies)}",
                f"{_may_land(intent, za)} && {_may_land(intent, zb)}",
            )
        )
    return rules


def _may_land(intent: AdmissionIntent, zone: str) -> str:
    """As cel._may_land: the nodeSelector names the zone, or (without one) every term is
    zone-pinned and some term allows it."""
    sz = _selector_zone(intent)
    some = (
        f"length({_terms()}[?matchExpressions[?{_zone_in(intent)} && "
        f"contains(values || `[]`, {lit(zone)})]]) > `0`"
    )
    return f"(({sz} == {lit(zone)}) || ({sz} == `null` && {_terms_pinned(intent)} && {some}))"


def validate_policy(intent: AdmissionIntent) -> RenderedFile:
    name = f"{intent.name}-validate"
    text, objs = render_documents(
        "kyverno-legacy/validate-policy.yaml.j2",
        name=name,
        **_meta(intent, "validate"),
        action=intent.validation_action,
        rules=validation_rules(intent),
    )
    _check(objs)
    return RenderedFile(f"{name}.yaml", text, objs)


def kyverno_legacy_policies(intent: AdmissionIntent) -> list[RenderedFile]:
    _check_values(intent)
    return [mutate_policy(intent), validate_policy(intent)]


# --- checks ------------------------------------------------------------------------------


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def _check_values(intent: AdmissionIntent) -> None:
    """Kyverno would read `{{`/`}}` in any value as a variable: refuse braces."""
    for s in _strings(dataclasses.astuple(intent)):
        if "{" in s or "}" in s:
            raise InputError(
                f"group {intent.group}: value {s!r} contains a brace, which "
                "Kyverno would read as a variable; the kyverno-legacy engine "
                "cannot express it"
            )


def _check(objs: Sequence[dict[str, Any]]) -> None:
    """Every JSON patch text must parse as a list of operations (variables as placeholders)."""
    for obj in objs:
        for rule in obj["spec"]["rules"]:
            mutate = rule.get("mutate") or {}
            for patch in [
                mutate.get("patchesJson6902"),
                *(f.get("patchesJson6902") for f in mutate.get("foreach", [])),
            ]:
                if patch is None:
                    continue
                ops = yaml.safe_load(_KYVERNO_VAR.sub("null", patch))
                if not isinstance(ops, list) or not all(
                    isinstance(op, dict) and {"op", "path", "value"} <= op.keys() for op in ops
                ):
                    raise InternalError(
                        f"rule {rule['name']} of {obj['metadata']['name']} "
                        "rendered an invalid JSON patch"
                    )
