"""OPA Gatekeeper: a ConstraintTemplate (the checks in CEL for its K8sNativeValidation
engine, which Gatekeeper runs by default, and in Rego v1, which it runs with native
validation off) and Constraint for the checks, and mutators (mutations.gatekeeper.sh/v1
Assign, AssignMetadata, ModifySet) for the rest.

Same behaviour as the Kyverno policies wherever Gatekeeper's mutation model can say it;
where it cannot, the closest faithful encoding, each listed in DIFFERENCES (and held to
it, case by case, by tests/engines):

- tolerations: a ModifySet merge adds each wanted toleration unless an identical one is
  there (compared as the API server stores tolerations, empty fields absent); one that
  merely covers it (`operator: Exists`, no key ...) does not stop it;
- the worker's affinity to its coordinator cannot carry the pod's own job name (a
  mutator assigns constants only): the term names the job label in `matchLabelKeys`,
  which the API server turns into `<job label> In (<the pod's value>)` at creation
  (Kubernetes 1.31+, so older clusters are refused); added by ModifySet merge unless
  that exact term is there; the checks accept that form as the coordinator term;
- the identity label: AssignMetadata only adds a missing label, never replaces one,
  so a pod claiming another zone keeps its claim and the check reports it;
- mutators cannot match annotations or scheduling gates: a pod marked for Kueue TAS only
  by annotation, or by Kueue's gate alone, is mutated (the checks still skip it);
- the zone requirement is ANDed into every existing node-selector term by a glob over
  the terms and a keyed `matchExpressions[key: <zone label>]` element with a
  MustNotExist path test: exactly the reference, except that the list key is the
  expression's key alone, so a term that already names the zone label with NotIn,
  Exists or DoesNotExist is left as is (the reference ANDs the domain in; the checks
  then find the coordinator unpinned).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from topogen.config import engine_version_problem
from topogen.errors import InputError
from topogen.model import LabelSelector
from topogen.render import cel
from topogen.render.base import RenderedFile, render_documents
from topogen.render.cel import toleration_dicts
from topogen.render.intent import (
    MUTATE,
    AdmissionIntent,
    Bucket,
    Exclusion,
    anti_affinity_term,
    buckets,
    description,
    intent_summary,
    named_jobs,
    policy_metadata,
)
from topogen.render.requirements import (
    Req,
    disjunctive,
    requirements,
    selector,
    union,
)
from topogen.render.vocabulary import (
    DESCRIPTION,
    NODE_AFFINITY,
    POD_AFFINITY,
    POD_ANTI_AFFINITY,
    enforcement,
    required_field,
)

__all__ = [
    "DIFFERENCES",
    "cel_source",
    "constraint_kind",
    "coordinator_term",
    "gatekeeper_policies",
    "location_key",
    "parameters",
]

NODE_REQ = required_field(NODE_AFFINITY)
POD_REQ = required_field(POD_AFFINITY)
ANTI_REQ = required_field(POD_ANTI_AFFINITY)

DIFFERENCES: dict[str, str] = {
    "covered-toleration-added": (
        "a wanted toleration is added unless an identical one exists; the reference skips "
        "it when an existing toleration already tolerates the taint (redundant, same "
        "scheduling)"
    ),
    "coordinator-term-match-label-keys": (
        "the worker's coordinator term selects the job with matchLabelKeys (the API server "
        "adds `<job label> In (<value>)` at creation) instead of matchLabels"
    ),
    "equivalent-term-not-recognised": (
        "the worker already has an equivalent coordinator term of its own; the mutator "
        "still adds its matchLabelKeys term (redundant, same scheduling)"
    ),
    "zone-term-other-operator-kept": (
        "a node-selector term that names the zone label with NotIn, Exists or DoesNotExist is "
        "left as is: a mutator keys list elements by one field (the expression's key), so it "
        "cannot add an `In` beside another operator on the same key"
    ),
    "identity-label-kept": (
        "AssignMetadata never replaces a label: a claimed identity is kept, not corrected, "
        "and the identity check reports it"
    ),
    "kueue-annotation-mutated": (
        "mutators cannot match annotations: a pod marked for Kueue TAS only by annotation "
        "is mutated like any role pod (the checks still skip it)"
    ),
    "kueue-gate-mutated": (
        "mutators cannot match scheduling gates: a pod Kueue's TAS places (its gate "
        "kueue.x-k8s.io/topology) is mutated like any role pod unless a label marks it (the "
        "checks still skip it)"
    ),
    "match-label-keys-term-accepted": (
        "the checks accept a coordinator term naming the job label in matchLabelKeys (the "
        "form the mutator writes); the reference wants matchLabels"
    ),
}


# --- names and paths ---------------------------------------------------------------------


def constraint_kind(intent: AdmissionIntent) -> str:
    """The group's constraint kind: readable, and unique even where CamelCase is not."""
    camel = "".join(p.capitalize() for p in re.split(r"[^A-Za-z0-9]+", intent.group) if p)
    digest = hashlib.sha256(intent.group.encode()).hexdigest()[:6]
    return f"Topogen{camel[:40]}{digest.capitalize()}"


def _name(intent: AdmissionIntent, suffix: str) -> str:
    name = f"{intent.name}-{suffix}"
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: 62 - len(digest)]}-{digest}"


def location_key(key: str) -> str:
    """A key in a Gatekeeper location (quoted: label keys carry dots and slashes)."""
    return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


# --- which pods --------------------------------------------------------------------------


def _worker_variants(intent: AdmissionIntent) -> list[tuple[list[list[Req]], LabelSelector]]:
    """Per worker selector: the workers it decides (it, and no coordinator selector nor an
    earlier worker selector), in disjunctive form, with the anchor of its term."""
    variants = intent.worker_anchors
    return [
        (disjunctive(requirements(w), [*intent.coordinator, *(v for v, _ in variants[:i])]), a)
        for i, (w, a) in enumerate(variants)
    ]


def _label_selector(
    intent: AdmissionIntent, role: Sequence[Req], detached: bool = False
) -> dict[str, Any]:
    """The role's pods: with the job label (a detached pod: without it), not Kueue TAS.
    The job label's `Exists` is left out where the role's requirements hold an `In` on it
    (the same pods, one key fewer for Gatekeeper to parse per mutator and pass)."""
    job = "DoesNotExist" if detached else "Exists"
    implied = any(r["key"] == intent.job_label and r["operator"] == "In" for r in role)
    group: list[Req] = (
        [] if implied and not detached else [{"key": intent.job_label, "operator": job}]
    )
    group += [{"key": k, "operator": "DoesNotExist"} for k in intent.skip_keys]
    return {"matchExpressions": group + list(role)}


# --- mutators ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Mutator:
    kind: str
    name: str
    label_selector: dict[str, Any]
    location: str
    parameters: dict[str, Any]
    annotations: dict[str, str]
    namespaces: tuple[str, ...] = ()  # () : the group's namespaces


def coordinator_term(intent: AdmissionIntent, sel: LabelSelector | None = None) -> dict[str, Any]:
    """A worker's pod-affinity term as a constant: the job (and its scope) come from
    matchLabelKeys. `sel`: the anchor (default: the first worker selector's)."""
    sel = intent.worker_anchors[0][1] if sel is None else sel
    keys = {k for k, _ in sel.match_labels} | {r.key for r in sel.match_expressions}
    own = [intent.job_label, *intent.scope]
    if keys & set(own):
        raise InputError(
            f"group {intent.group}: the coordinator selector uses the job label "
            f"{intent.job_label}, which Gatekeeper's coordinator term must leave to matchLabelKeys"
        )
    return {
        "labelSelector": selector(sel),
        "matchLabelKeys": own,
        "topologyKey": intent.topology_key,
    }


def _why(text: str) -> dict[str, str]:
    return {DESCRIPTION: text}


def _coordinator_selectors(intent: AdmissionIntent) -> list[tuple[str, list[Req], bool]]:
    """(name, requirements, detached) of each coordinator selector, then each detached one."""
    out = [(f"coordinator-{n}", requirements(c), False) for n, c in enumerate(intent.coordinator)]
    out += [(f"detached-{n}", requirements(d), True) for n, d in enumerate(intent.detached)]
    return out


def _role_pods(intent: AdmissionIntent) -> list[tuple[str, list[Req], bool]]:
    """(name, requirements, detached): as few selectors as match exactly the pods of every
    role selector (pinning is the same for every role: one mutator per field each), then
    as few for the detached pods."""
    roles = [requirements(s) for s in (*intent.coordinator, *intent.worker)]
    out = [(f"roles-{n}", reqs, False) for n, reqs in enumerate(union(roles))]
    detached = union([requirements(d) for d in intent.detached])
    out += [(f"detached-{n}", reqs, True) for n, reqs in enumerate(detached)]
    return out


def _tolerations(intent: AdmissionIntent) -> list[_Mutator]:
    # as the API server stores a toleration: without empty fields (its typed Pod drops
    # them, so at admission an `effect: ""` never reaches a mutator and a value holding
    # one would never be identical to a toleration already there)
    wanted = [{k: v for k, v in t.items() if v != ""} for t in toleration_dicts(intent.tolerations)]
    return [
        _Mutator(
            "ModifySet",
            _name(intent, f"{name}-tolerations"),
            _label_selector(intent, reqs, detached),
            "spec.tolerations",
            {"operation": "merge", "values": {"fromList": wanted}},
            _why("the coordinator tolerates the taints of the group's GPU nodes"),
        )
        for name, reqs, detached in _coordinator_selectors(intent)
    ]


def _pod_affinity(intent: AdmissionIntent) -> list[_Mutator]:
    variants = _worker_variants(intent)
    out = []
    n = 0
    for forms, anchor in variants:
        for reqs in forms:
            out.append(
                _Mutator(
                    "ModifySet",
                    _name(intent, f"worker-{n}-pod-affinity"),
                    _label_selector(intent, reqs),
                    POD_REQ,
                    {
                        "operation": "merge",
                        "values": {"fromList": [coordinator_term(intent, anchor)]},
                    },
                    _why("a worker requires its coordinator's topology domain"),
                )
            )
            n += 1
    return out


def _job_buckets(intent: AdmissionIntent) -> list[tuple[str, list[Req], Bucket]]:
    """Per bucket of jobs (zones per job): its name, and the job label In the bucket's
    jobs, or NotIn the named ones."""
    out = []
    for k, b in enumerate(buckets(intent)):
        named = named_jobs(intent, b.namespace)
        job: list[Req] = (
            [{"key": intent.job_label, "operator": "In", "values": list(b.jobs)}]
            if b.jobs is not None
            else [{"key": intent.job_label, "operator": "NotIn", "values": list(named)}]
            if named
            else []
        )
        out.append((str(k + 1), job, b))
    return out


def _pinning(
    intent: AdmissionIntent, name: str, reqs: Sequence[Req], detached: bool
) -> list[_Mutator]:
    """Node affinity to the domain and the identity label: once, or per bucket of jobs
    when zones are per job (never with detached pods: they carry no job label to bucket
    by)."""
    if not intent.per_job:
        selector = _label_selector(intent, reqs, detached)
        return _pin(intent, name, selector, intent.zones, intent.identity)
    out = []
    named: dict[str, list[_Mutator]] = {}  # per namespace: its named buckets' mutators
    count: dict[str, int] = {}
    for k, job, b in _job_buckets(intent):
        role = f"{name}-{k}"
        selector = _label_selector(intent, [*reqs, *job])
        pins = _pin(intent, role, selector, b.zones, b.identity, (b.namespace,))
        if b.jobs is not None:
            named.setdefault(b.namespace, []).extend(pins)
            count[b.namespace] = count.get(b.namespace, 0) + 1
        elif job:  # the rest, NotIn the named jobs
            loose = _pin(
                intent, role, _label_selector(intent, reqs), b.zones, b.identity, (b.namespace,)
            )
            ahead = named.get(b.namespace, [])
            n = count.get(b.namespace, 0)
            pins = [
                lo if _runs_after(lo, ahead, n) else p for p, lo in zip(pins, loose, strict=True)
            ]
        out += pins
    return out


def _runs_after(m: _Mutator, ahead: Sequence[_Mutator], buckets: int) -> bool:
    """Can the rest's pinning mutator `m` leave out its `NotIn` on the named jobs? Yes
    where each of the namespace's `buckets` named buckets has a mutator of its kind at its
    location that Gatekeeper runs before it: Gatekeeper runs its mutators in order of kind,
    then name (pkg/mutation/ordered_ids.go), each pass in that order, and each pinning
    mutator writes only what is absent (a MustNotExist path test; AssignMetadata adds a
    missing label only), so on a named job's pod the named bucket's mutator writes first
    and the rest's then finds it written: the same pods, pinned the same, and one list of
    job names fewer for Gatekeeper to parse and validate per mutator and pass."""
    same = [a for a in ahead if (a.kind, a.location) == (m.kind, m.location)]
    return len(same) == buckets and all(a.name < m.name for a in same)


def _exclusions(intent: AdmissionIntent, role: str, reqs: Sequence[Req]) -> list[_Mutator]:
    """A queued job's anti-affinity terms, per role selector and bucket of jobs."""
    out = []
    for k, job, b in _job_buckets(intent):
        selector = _label_selector(intent, [*reqs, *job])
        out += _exclude(intent, f"{role}-{k}", selector, b.excludes, (b.namespace,))
    return out


def _exclude(
    intent: AdmissionIntent,
    role: str,
    selector: dict[str, Any],
    excludes: Sequence[Exclusion],
    namespaces: tuple[str, ...],
) -> list[_Mutator]:
    """A queued job: its anti-affinity terms, each added unless an identical one is there."""
    if not excludes:
        return []
    terms = [anti_affinity_term(intent, e) for e in excludes]
    return [
        _Mutator(
            "ModifySet",
            _name(intent, f"{role}-exclusions"),
            selector,
            ANTI_REQ,
            {"operation": "merge", "values": {"fromList": terms}},
            _why("a queued job never shares its domain with the jobs it would take GPUs from"),
            namespaces,
        )
    ]


def _pin(
    intent: AdmissionIntent,
    role: str,
    selector: dict[str, Any],
    zones: Sequence[str],
    identity: tuple[str, str] | None,
    namespaces: tuple[str, ...] = (),
) -> list[_Mutator]:
    zone_req = {"key": intent.zone_label, "operator": "In", "values": list(zones)}
    terms = (
        f"{NODE_REQ}.nodeSelectorTerms[matchExpressions: *]"
        f".matchExpressions[key: {location_key(intent.zone_label)}]"
    )
    out = [
        _Mutator(
            "Assign",
            _name(intent, f"{role}-node-affinity"),
            selector,
            NODE_REQ,
            {
                "pathTests": [{"subPath": NODE_REQ, "condition": "MustNotExist"}],
                "assign": {"value": {"nodeSelectorTerms": [{"matchExpressions": [zone_req]}]}},
            },
            _why("a pod without required node affinity gets the group's zones"),
            namespaces,
        ),
        _Mutator(
            "Assign",
            _name(intent, f"{role}-zone-terms"),
            selector,
            terms,
            {
                "pathTests": [
                    {"subPath": NODE_REQ, "condition": "MustExist"},
                    {"subPath": terms, "condition": "MustNotExist"},
                ],
                "assign": {"value": zone_req},
            },
            _why("every required node-selector term without a zone requirement gets one"),
            namespaces,
        ),
    ]
    if identity is not None:
        key, zone = identity
        out.append(
            _Mutator(
                "AssignMetadata",
                _name(intent, f"{role}-identity"),
                selector,
                f"metadata.labels.{location_key(key)}",
                {"assign": {"value": zone}},
                _why("the identity label names the zone the pod is pinned to"),
                namespaces,
            )
        )
    return out


def _mutators(intent: AdmissionIntent) -> list[_Mutator]:
    """Coordinators: tolerations; workers: pod affinity; the pods of every role: pinning
    (a pod of both a coordinator and a worker selector is a coordinator, and pinned either
    way); a queued job's role pods: its exclusions."""
    out = _tolerations(intent) + _pod_affinity(intent)
    for name, reqs, detached in _role_pods(intent):
        out += _pinning(intent, name, reqs, detached)
    if intent.per_job:
        roles = _coordinator_selectors(intent)
        roles += [(f"worker-{n}", requirements(s), False) for n, s in enumerate(intent.worker)]
        for role, reqs, _ in roles:
            out += _exclusions(intent, role, reqs)
    return out


# --- the checks --------------------------------------------------------------------------


def _lookups(sel: LabelSelector) -> dict[str, Any]:
    """A selector as the Rego looks labels up in it: `in` and `notIn` value sets per key
    (two `In` on a key: the values both allow; two `NotIn`: either denies), keys that must
    exist and keys that must be absent (matchLabels: `in` of one value)."""
    out: dict[str, Any] = {"in": {}, "notIn": {}, "exists": [], "absent": []}
    for r in requirements(sel):
        key, op = r["key"], r["operator"]
        if op == "In":
            values = [v for v in r["values"] if key not in out["in"] or v in out["in"][key]]
            out["in"][key] = dict.fromkeys(values, True)
        elif op == "NotIn":
            out["notIn"].setdefault(key, {}).update(dict.fromkeys(r["values"], True))
        else:
            out["exists" if op == "Exists" else "absent"].append(key)
    return out


def parameters(intent: AdmissionIntent) -> dict[str, Any]:
    """The Constraint's parameters: the group's values, each in the form the Rego looks a
    pod up in (selectors as value sets, the zones as a set, the denied pairs by zone and
    zone), so a pod costs lookups, not walks of tables."""
    denied: dict[str, dict[str, list[str]]] = {}
    for a, b, policies in intent.denied_zone_pairs:
        denied.setdefault(a, {}).setdefault(b, []).append(", ".join(policies))
    return {
        "group": intent.group,
        "namespaces": list(intent.namespaces),
        "jobLabel": intent.job_label,
        "coordinators": [_lookups(s) for s in intent.coordinator],
        "workers": [_lookups(s) for s in intent.worker],
        **({"detached": [_lookups(s) for s in intent.detached]} if intent.detached else {}),
        "skipKeys": list(intent.skip_keys),
        "skipGate": intent.skip_gate,
        "zoneLabel": intent.zone_label,
        "zones": list(intent.zones),  # for the message
        "zoneSet": dict.fromkeys(intent.zones, True),
        "topologyKey": intent.topology_key,
        "identityLabel": intent.identity_label or "",
        "deniedPairs": denied,
    }


def _schema() -> dict[str, Any]:
    string: dict[str, Any] = {"type": "string"}
    strings: dict[str, Any] = {"type": "array", "items": string}
    value_sets = {
        "type": "object",
        "additionalProperties": {"type": "object", "additionalProperties": {"type": "boolean"}},
    }
    lookups = {
        "type": "object",
        "properties": {"in": value_sets, "notIn": value_sets, "exists": strings, "absent": strings},
    }
    selectors = {"type": "array", "items": lookups}
    return {
        "type": "object",
        "properties": {
            "group": string,
            "namespaces": strings,
            "jobLabel": string,
            "coordinators": selectors,
            "workers": selectors,
            "detached": selectors,
            "skipKeys": strings,
            "skipGate": string,
            "zoneLabel": string,
            "zones": strings,
            "zoneSet": {"type": "object", "additionalProperties": {"type": "boolean"}},
            "topologyKey": string,
            "identityLabel": string,
            "deniedPairs": {
                "type": "object",
                "additionalProperties": {"type": "object", "additionalProperties": strings},
            },
        },
    }


def cel_source(intent: AdmissionIntent) -> dict[str, Any]:
    """The checks for Gatekeeper's K8sNativeValidation engine: the CEL of the native and
    Kyverno validations (render/cel.py) with the group's values as literals (the template
    is the group's own), judged by Gatekeeper's webhook itself (generateVAP false: no
    ValidatingAdmissionPolicy of its making). As the Rego: every operation Gatekeeper's
    webhook sends is judged, and the coordinator term may name the job label in
    matchLabelKeys."""
    return {
        "generateVAP": False,
        "failurePolicy": "Fail",
        "matchCondition": cel.match_role(intent, MUTATE),  # Gatekeeper's key: singular
        "variables": cel.validation_variables(intent, label_keys=True),
        "validations": [
            {k: v for k, v in check.items() if k != "reason"} for check in cel.validations(intent)
        ],
    }


def _meta(intent: AdmissionIntent, role: str) -> dict[str, Any]:
    return policy_metadata(intent, role, {DESCRIPTION: description(intent)}, summary=False)


def _check_version(kubernetes_version: str) -> None:
    """config.py refuses such a config; a caller that builds one itself is refused here."""
    problem = engine_version_problem("gatekeeper", kubernetes_version)
    if problem:
        raise InputError(problem, hint="use engine kyverno or native, or raise kubernetesVersion")


def gatekeeper_policies(
    intent: AdmissionIntent, kubernetes_version: str = "1.36"
) -> list[RenderedFile]:
    _check_version(kubernetes_version)
    kind = constraint_kind(intent)
    meta = _meta(intent, "validate")
    text, objs = render_documents(
        "gatekeeper/constraint-template.yaml.j2",
        name=kind.lower(),
        kind=kind,
        schema=_schema(),
        cel=cel_source(intent),
        **meta,
    )
    template = RenderedFile(f"{intent.name}-template.yaml", text, objs)
    action, scoped = enforcement(intent.validation_action, intent.audit_at_admission)
    constraint_meta = _meta(intent, "validate")
    # the whole group's intent, for `topogen diff` (the Constraint stands for the group)
    constraint_meta["annotations"].update(intent_summary(intent, tolerations=True, denied=True))
    # the Constraint's kind exists once the template is in: let Argo CD sync it after
    constraint_meta["annotations"]["argocd.argoproj.io/sync-options"] = (
        "SkipDryRunOnMissingResource=true"
    )
    text, objs = render_documents(
        "gatekeeper/constraint.yaml.j2",
        name=intent.name,
        kind=kind,
        enforcement_action=action,
        scoped_actions=scoped,
        namespaces=list(intent.namespaces),
        # detached pods lack the job label: then the Rego alone picks the group's pods
        label_selector=None
        if intent.detached
        else {"matchExpressions": [{"key": intent.job_label, "operator": "Exists"}]},
        parameters=parameters(intent),
        **constraint_meta,
    )
    constraint = RenderedFile(f"{intent.name}-constraint.yaml", text, objs)
    mutate_meta = _meta(intent, MUTATE)
    text, objs = render_documents(
        "gatekeeper/mutators.yaml.j2",
        mutators=_mutators(intent),
        namespaces=list(intent.namespaces),
        labels=mutate_meta["labels"],
    )
    mutators = RenderedFile(f"{intent.name}-mutators.yaml", text, objs)
    return [template, constraint, mutators]
