"""What every admission backend enforces for one config group: engine-neutral, from the plan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from topogen.model import KUEUE_TAS_GATE, KUEUE_TAS_KEYS, LabelSelector, Toleration
from topogen.plan.group_plan import GroupPlan
from topogen.render.vocabulary import (
    DENIED_ZONE_PAIRS,
    GROUP_LABEL,
    IDENTITY,
    MANAGED_BY,
    ROLE_LABEL,
    TOLERATIONS,
    ZONES,
)

__all__ = [
    "MUTATE",
    "AdmissionIntent",
    "Bucket",
    "Exclusion",
    "anti_affinity_term",
    "buckets",
    "excludes_for",
    "identity_for",
    "intent_for",
    "intent_summary",
    "named_jobs",
    "policy_metadata",
    "zones_for",
]


@dataclass(frozen=True)
class Exclusion:
    """Pods of these jobs (`key` In `values`, in any of `namespaces`): a queued job's pods
    never share their domain with them (required pod anti-affinity on the topology key).
    One term for all of a job's exclusions that share the job label: the scheduler
    requeues a pod blocked by anti-affinity when a deleted pod matches all of its terms
    (kube-scheduler interpodaffinity isSchedulableAfterPodChange), so a job name of one
    namespace also excludes a job of that name in another of them (never fewer)."""

    namespaces: tuple[str, ...]
    key: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class AdmissionIntent:
    name: str  # base name of the generated policies
    cluster: str
    group: str
    namespaces: tuple[str, ...]
    job_label: str
    coordinator: tuple[LabelSelector, ...]  # ORed
    worker: tuple[LabelSelector, ...]  # ORed
    coordinator_selector: LabelSelector  # plus job_label=<the pod's job>: a worker's affinity
    zone_label: str
    zones: tuple[str, ...]
    topology_key: str
    tolerations: tuple[Toleration, ...]  # for the coordinator
    identity: tuple[str, str] | None  # (label, zone) set on every role
    identity_label: str | None
    denied_zone_pairs: tuple[tuple[str, str, tuple[str, ...]], ...]
    validation_action: str  # Audit | Enforce
    # pods placed by Kueue's TAS are left alone: these label or annotation keys, this gate
    skip_keys: tuple[str, ...] = KUEUE_TAS_KEYS
    skip_gate: str = KUEUE_TAS_GATE
    # spread: the zones each known job is pinned to ((namespace, job) -> zones); a job not
    # listed gets fallback_zones. Empty: every job gets `zones` (which, spread or not,
    # is every zone the group may use, and what the checks hold pods to)
    job_zones: tuple[tuple[tuple[str, str], tuple[str, ...]], ...] = ()
    fallback_zones: tuple[str, ...] = ()
    job_identity: bool = False  # the identity label names the job's zone (one-zone domains)
    # per worker selector (the first that matches a worker decides): the labels its
    # co-location term adds to the job label; () means coordinator_selector for each
    anchors: tuple[LabelSelector, ...] = ()
    # labels that, with the job label, name a worker's job (its term takes their values
    # from the pod; every worker selector requires them)
    scope: tuple[str, ...] = ()
    # pods without the job label that belong to a job (KubeRay's submitter): pinned
    # like the coordinator, matched by these selectors (ORed)
    detached: tuple[LabelSelector, ...] = ()
    # spread: the jobs each queued job never shares its domain with ((namespace, job) ->
    # exclusions); a job not listed gets none
    job_excludes: tuple[tuple[tuple[str, str], tuple[Exclusion, ...]], ...] = ()
    # the engine may hand validation to the API server under Enforce (Kyverno: a
    # ValidatingAdmissionPolicy generated from the ValidatingPolicy; config kyverno:)
    api_server_validation: bool = False
    # Audit on the engine's admission webhook (Kyverno: else in background scans only)
    audit_at_admission: bool = False

    @property
    def roles(self) -> tuple[str, ...]:
        return ("coordinator", "worker")

    @property
    def per_job(self) -> bool:
        return bool(self.job_zones)

    @property
    def worker_anchors(self) -> tuple[tuple[LabelSelector, LabelSelector], ...]:
        """(worker selector, the selector its co-location term adds), in order."""
        anchors = self.anchors or tuple(self.coordinator_selector for _ in self.worker)
        return tuple(zip(self.worker, anchors, strict=True))


@dataclass(frozen=True)
class Bucket:
    """Pods of these jobs (None: of every job not named in another bucket of the
    namespace) are pinned to `zones`, with `identity`."""

    namespace: str
    jobs: tuple[str, ...] | None
    zones: tuple[str, ...]
    identity: tuple[str, str] | None
    excludes: tuple[Exclusion, ...] = ()


def excludes_for(intent: AdmissionIntent, namespace: str, job: str) -> tuple[Exclusion, ...]:
    """The exclusions the mutation gives a pod of this job."""
    return dict(intent.job_excludes).get((namespace, job), ())


def anti_affinity_term(intent: AdmissionIntent, e: Exclusion) -> dict[str, Any]:
    """The required pod anti-affinity term of one exclusion."""
    return {
        "labelSelector": {
            "matchExpressions": [{"key": e.key, "operator": "In", "values": list(e.values)}]
        },
        "namespaces": list(e.namespaces),
        "topologyKey": intent.topology_key,
    }


def zones_for(intent: AdmissionIntent, namespace: str, job: str) -> tuple[str, ...]:
    """The zones the mutation pins a pod of this job to."""
    if not intent.per_job:
        return intent.zones
    return dict(intent.job_zones).get((namespace, job), intent.fallback_zones)


def identity_for(intent: AdmissionIntent, zones: tuple[str, ...]) -> tuple[str, str] | None:
    """The identity label the mutation sets on a pod pinned to `zones`."""
    if intent.job_identity and intent.identity_label and len(zones) == 1:
        return (intent.identity_label, zones[0])
    return intent.identity


def buckets(intent: AdmissionIntent) -> list[Bucket]:
    """The per-job zones as groups of jobs, per namespace, then each namespace's rest:
    for engines that match pods by label selectors instead of looking the job up."""
    if not intent.per_job:
        return [Bucket(ns, None, intent.zones, intent.identity) for ns in intent.namespaces]
    excludes = dict(intent.job_excludes)
    grouped: dict[tuple[str, tuple[str, ...], tuple[Exclusion, ...]], list[str]] = {}
    for (ns, job), zones in intent.job_zones:
        grouped.setdefault((ns, zones, excludes.get((ns, job), ())), []).append(job)
    out = [
        Bucket(ns, tuple(sorted(jobs)), zones, identity_for(intent, zones), ex)
        for (ns, zones, ex), jobs in sorted(grouped.items(), key=_bucket_order)
    ]
    rest = intent.fallback_zones
    out += [Bucket(ns, None, rest, identity_for(intent, rest)) for ns in intent.namespaces]
    return out


def _bucket_order(
    item: tuple[tuple[str, tuple[str, ...], tuple[Exclusion, ...]], list[str]],
) -> tuple[str, tuple[str, ...], tuple[tuple[tuple[str, ...], str, tuple[str, ...]], ...]]:
    (ns, zones, ex), _ = item
    return ns, zones, tuple((e.namespaces, e.key, e.values) for e in ex)


def named_jobs(intent: AdmissionIntent, namespace: str) -> tuple[str, ...]:
    """The jobs of a namespace that have zones of their own."""
    return tuple(sorted(job for (ns, job), _ in intent.job_zones if ns == namespace))


def intent_for(
    plan: GroupPlan,
    validation_action: str,
    *,
    api_server_validation: bool = False,
    audit_at_admission: bool = False,
) -> AdmissionIntent:
    assert plan.domain is not None, "only enforceable plans have an intent"
    assert plan.denied_zone_pairs is not None, "a render plans with the denied zone pairs"
    p = plan.profile
    job_zones: tuple[tuple[tuple[str, str], tuple[str, ...]], ...] = ()
    job_excludes: tuple[tuple[tuple[str, str], tuple[Exclusion, ...]], ...] = ()
    fallback: tuple[str, ...] = ()
    if plan.spread and len(plan.domains) > 1:
        job_zones = tuple(
            sorted(((j.job.partition("/")[0], j.name), j.zones) for j in plan.job_domains)
        )
        job_excludes = tuple(
            sorted(
                ((j.job.partition("/")[0], j.name), _exclusions(j.excludes))
                for j in plan.job_domains
                if j.excludes
            )
        )
        fallback = plan.fallback_zones  # a job the render did not know (plan/packing.py _fallback)
        assert fallback, "a spread plan over several domains has a fallback"
        # per-job zones name a job by its job label alone (plan/planner.py plan_group pins the rest)
        assert not (plan.detached or p.scope), "per-job zones for a job no label names"
    return AdmissionIntent(
        name=f"topogen-{plan.group.name}",
        cluster=plan.cluster,
        group=plan.group.name,
        namespaces=tuple(sorted(plan.group.namespaces)),
        job_label=p.job_label,
        coordinator=p.coordinator,
        worker=p.worker,
        coordinator_selector=p.coordinator[-1],
        anchors=plan.anchors,
        scope=p.scope,
        detached=plan.detached,
        zone_label=plan.zone_label,
        zones=plan.zones,
        topology_key=plan.topology_key,
        tolerations=plan.tolerations,
        identity=plan.identity,
        identity_label=plan.group.identity_label,
        denied_zone_pairs=plan.denied_zone_pairs,
        validation_action=validation_action,
        job_zones=job_zones,
        fallback_zones=fallback,
        job_identity=bool(job_zones) and plan.identity_source == "static",
        job_excludes=job_excludes,
        api_server_validation=api_server_validation,
        audit_at_admission=audit_at_admission,
    )


def _exclusions(jobs: tuple[tuple[str, str, str], ...]) -> tuple[Exclusion, ...]:
    """(namespace, job label, value) triples as one exclusion per job label."""
    grouped: dict[str, tuple[set[str], set[str]]] = {}
    for ns, key, value in jobs:
        namespaces, values = grouped.setdefault(key, (set(), set()))
        namespaces.add(ns)
        values.add(value)
    return tuple(
        Exclusion(tuple(sorted(ns)), key, tuple(sorted(v)))
        for key, (ns, v) in sorted(grouped.items())
    )


def description(intent: AdmissionIntent, engine_note: str = "") -> str:
    note = f" {engine_note}" if engine_note else ""
    return (
        f"Confines training group {intent.group} to {intent.zone_label} in "
        f"[{', '.join(intent.zones)}], where its internal traffic is allowed. "
        f"Generated by topogen{note}; network policies are unchanged."
    )


def kyverno_library_annotations(
    intent: AdmissionIntent, title: str, note: str = ""
) -> dict[str, str]:
    """The annotations Kyverno's policy library carries on every policy (title, category,
    severity, subject, description), which Kyverno copies into its policy reports."""
    return {
        "policies.kyverno.io/title": title,
        "policies.kyverno.io/category": "Scheduling, Network Policy",
        # a split group does no work: what Kyverno's library calls a medium-severity finding
        "policies.kyverno.io/severity": "medium",
        "policies.kyverno.io/subject": "Pod",
        "policies.kyverno.io/description": description(intent, note),
    }


def intent_summary(intent: AdmissionIntent, *, tolerations: bool, denied: bool) -> dict[str, str]:
    """The intent in machine-readable annotations, read by `topogen diff` for every engine."""
    out = {
        ZONES: ",".join(intent.zones),
        IDENTITY: "=".join(intent.identity or ()),
    }
    if tolerations:  # key=value:effect (Equal) or key:effect (Exists)
        out[TOLERATIONS] = ",".join(
            t.key
            + (f"={t.value}" if t.operator == "Equal" else "")
            + (f":{t.effect}" if t.effect else "")
            for t in intent.tolerations
        )
    if denied:  # zone-a/zone-b pairs whose traffic the network policies deny
        out[DENIED_ZONE_PAIRS] = ",".join(f"{a}/{b}" for a, b, _ in intent.denied_zone_pairs)
    return out


# the role label of a policy that mutates both roles of a group (Kyverno's MutatingPolicy,
# the kyverno-legacy ClusterPolicy, Gatekeeper's mutators)
MUTATE = "mutate"


def policy_metadata(
    intent: AdmissionIntent, role: str, annotations: dict[str, str], *, summary: bool = True
) -> dict[str, Any]:
    """Labels every engine's objects carry, plus the engine's annotations and the summary."""
    extra = (
        # a mutation of coordinators (or of both roles) adds the tolerations
        intent_summary(
            intent, tolerations=role in ("coordinator", MUTATE), denied=role == "validate"
        )
        if summary
        else {}
    )
    return {
        "labels": {
            MANAGED_BY[0]: MANAGED_BY[1],
            GROUP_LABEL: intent.group,
            ROLE_LABEL: role,
        },
        "annotations": {**annotations, **extra},
    }
