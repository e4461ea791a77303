"""The engine-neutral admission cases, with each engine's reviewed differences.

Two intents: the examples/zone-split group (one zone, identity label stamped, a denied
pair) and a synthetic one (two zones, four tolerations, two denied pairs, custom role
labels with dots and slashes, ORed coordinator selectors of several requirements,
Enforce). For each, admission cases (a pod as created: the engine mutates it, then
validates its own result) and validation cases (a pod validated as is).

What every engine must produce is the reference model's answer (render/reference.py):
the mutated pod (`mutate`) and the failing checks (`violations`), with the CEL
messages. Where an engine cannot say what the reference says, the case lists the
difference by name (DIFFERENCES below): each is a reviewed transformation of the
reference answer, and a declared difference that changes nothing is an error too.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engines.differences import DIFFERENCES, ORDER, Pod, as_reference_term, gk_term
from tooling import REPO
from topogen.config import load_config
from topogen.model import LabelSelector, Requirement, Toleration
from topogen.pipeline.analyze import analyze
from topogen.render.cel import toleration_dicts
from topogen.render.gatekeeper_tests import check_messages, reference_checks
from topogen.render.intent import (
    AdmissionIntent,
    Exclusion,
    anti_affinity_term,
    excludes_for,
    intent_for,
    zones_for,
)
from topogen.render.reference import mutate

ENGINES = ("kyverno", "kyverno-legacy", "gatekeeper", "native")
ZONE = "topology.kubernetes.io/zone"
OTHER_NS = "elsewhere"


# --- the intents -------------------------------------------------------------------------


def example_intent() -> AdmissionIntent:
    cfg = load_config(REPO / "examples" / "zone-split" / "topogen.yaml")
    report = analyze(cfg)
    ca = report.clusters[0]
    return intent_for(ca.plans[0], cfg.validation_action_for(cfg.cluster(ca.cluster)))


JOB, ROLE, RANK = "example.com/job-name", "example.com/role", "example.com/rank"
BATCH = "batch.example.com/name"  # another kind of job's label


def synthetic_intent() -> AdmissionIntent:
    coordinators = (
        LabelSelector(match_labels=((ROLE, "launcher"),)),
        LabelSelector(
            match_expressions=(Requirement(ROLE, "In", ("node",)), Requirement(RANK, "In", ("0",)))
        ),
    )
    return AdmissionIntent(
        name="topogen-llm",
        cluster="lab",
        group="llm",
        namespaces=("train-a", "train-b"),
        job_label=JOB,
        coordinator=coordinators,
        worker=(LabelSelector(match_expressions=(Requirement(ROLE, "In", ("node", "ps")),)),),
        coordinator_selector=coordinators[-1],
        zone_label=ZONE,
        zones=("zone-a", "zone-b"),
        topology_key="network.example.com/domain",
        tolerations=(
            Toleration("dedicated", "Equal", "training", "NoExecute"),
            Toleration("example.com/spot", "Exists", "", "NoSchedule"),
            Toleration("nvidia.com/gpu", "Equal", "present", "NoSchedule"),
            Toleration("vendor.example.com/fabric", "Exists", "", ""),
        ),
        identity=None,
        identity_label="net.example.com/zone",
        denied_zone_pairs=(
            ("zone-a", "zone-c", ("cnp train-a/fence-c",)),
            ("zone-b", "zone-c", ("ccnp fence-c", "knp train-b/deny")),
        ),
        validation_action="Enforce",
    )


GROUP, OPERATOR, BATCH_JOB = "example.com/group", "example.com/operator", "batch.example.com/job"


def operators_intent() -> AdmissionIntent:
    """What the operators' profiles add: a term per worker selector (the first that
    matches decides), a scope label the term takes from the pod, a detached pod."""
    group = Requirement(GROUP, "Exists")
    workers = (
        LabelSelector(
            match_expressions=(
                Requirement(OPERATOR, "In", ("paddle",)),
                Requirement(ROLE, "In", ("worker",)),
                group,
            )
        ),
        LabelSelector(match_expressions=(Requirement(ROLE, "In", ("worker",)), group)),
    )
    coordinators = (LabelSelector(match_labels=((ROLE, "leader"),)),)
    return AdmissionIntent(
        name="topogen-ops",
        cluster="lab",
        group="ops",
        namespaces=("train-a",),
        job_label=JOB,
        coordinator=coordinators,
        worker=workers,
        coordinator_selector=coordinators[-1],
        anchors=(
            LabelSelector(((RANK, "0"),), (Requirement(ROLE, "In", ("worker",)),)),
            LabelSelector(((ROLE, "leader"),)),
        ),
        scope=(GROUP,),
        detached=(
            LabelSelector(match_expressions=(Requirement(BATCH_JOB, "In", ("run-1", "run-2")),)),
        ),
        zone_label=ZONE,
        zones=("zone-b",),
        topology_key=ZONE,
        tolerations=(Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),),
        identity=("net.example.com/zone", "zone-b"),
        identity_label="net.example.com/zone",
        denied_zone_pairs=(("zone-a", "zone-b", ("cnp train-a/fence",)),),
        validation_action="Audit",
    )


# --- cases -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    pod: Pod
    admission: bool  # True: mutated by the engine first; False: validated as is
    differences: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Expected:
    pod: Pod  # after mutation (the pod itself for validation cases)
    checks: tuple[tuple[str, str], ...]  # (check id, message), sorted


def expected(case: Case, engine: str, intent: AdmissionIntent, without: str = "") -> Expected:
    """The reference answer with the engine's declared differences (less `without`)."""
    names = [d for d in ORDER if d in case.differences.get(engine, ()) and d != without]
    pod = mutate(case.pod, intent) if case.admission else copy.deepcopy(case.pod)
    for d in names:
        fn = DIFFERENCES[d].pod
        if fn is not None:
            pod = fn(copy.deepcopy(pod), case.pod, intent)
    judged = pod
    if any(DIFFERENCES[d].accepts_match_label_keys for d in names):
        judged = as_reference_term(pod, intent)
    checks = reference_checks(judged, intent)
    for d in names:
        fn_checks = DIFFERENCES[d].checks
        if fn_checks is not None:
            checks = fn_checks(checks, judged, intent)
    messages = check_messages(pod, intent, checks)
    return Expected(pod, tuple(sorted(zip(checks, messages, strict=True))))


@dataclass(frozen=True)
class Suite:
    key: str
    intent: AdmissionIntent
    cases: tuple[Case, ...]

    def case(self, name: str) -> Case:
        return next(c for c in self.cases if c.name == name)


def pod(name: str, namespace: str, labels: Mapping[str, str], **spec: Any) -> Pod:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {"containers": [{"name": "main", "image": "registry.example/trainer:1"}], **spec},
    }


def _node_affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


def _zone_term(intent: AdmissionIntent, zones: list[str]) -> dict[str, Any]:
    return {"matchExpressions": [{"key": intent.zone_label, "operator": "In", "values": zones}]}


GPU_CLASS = {
    "matchExpressions": [
        {"key": "node.example.com/gpu-class", "operator": "In", "values": ["a100", "h100"]}
    ]
}
CACHE_TERM = {
    "labelSelector": {"matchLabels": {"app": "cache"}},
    "topologyKey": "kubernetes.io/hostname",
}
TEAM_TOLERATION = {
    "key": "team.example.com/dedicated",
    "operator": "Equal",
    "value": "ml",
    "effect": "NoSchedule",
}

GK = "gatekeeper"
CEL_ENGINES = ("kyverno", "kyverno-legacy", "native")


def _gk(*names: str) -> dict[str, tuple[str, ...]]:
    return {GK: names}


def _cases(
    intent: AdmissionIntent,
    coordinators: list[dict[str, str]],
    workers: list[dict[str, str]],
    no_role: dict[str, str],
) -> tuple[Case, ...]:
    """The same shapes for every intent; the differences each one shows, per engine."""
    i = intent
    ns = i.namespaces[-1]
    coord, worker = coordinators[0], workers[0]
    job = coord[i.job_label]
    # a wanted toleration that `operator: Exists` on its key covers without being it, as
    # the API server stores tolerations (an effect-less Exists one would be identical)
    wanted = toleration_dicts(i.tolerations)
    first = next((t for t in wanted if t["operator"] != "Exists" or t["effect"]), wanted[-1])
    covering = (
        {"key": first["key"], "operator": "Exists"} if first["key"] else {"operator": "Exists"}
    )
    identity = i.identity is not None or i.job_identity
    worker_term = ("coordinator-term-match-label-keys",)
    out = [
        *(
            Case(f"coordinator-{n}", pod(f"coordinator-{n}", ns, c), True)
            for n, c in enumerate(coordinators)
        ),
        *(
            Case(f"worker-{n}", pod(f"worker-{n}", ns, w), True, _gk(*worker_term))
            for n, w in enumerate(workers)
        ),
        # existing constraints: an unrelated toleration, node affinity of three terms
        # (expressions, fields only, empty), anti-affinity that must survive
        Case(
            "coordinator-constrained",
            pod(
                "coordinator-constrained",
                ns,
                coord,
                tolerations=[TEAM_TOLERATION],
                affinity={
                    **_node_affinity(
                        GPU_CLASS,
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["gpu-1"]}
                            ]
                        },
                        {"matchExpressions": []},
                    ),
                    "podAntiAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 10, "podAffinityTerm": CACHE_TERM}
                        ]
                    },
                },
            ),
            True,
        ),
        # one term already constrains the zone (kept as is), the other gets the domain;
        # a toleration that covers a wanted one without being identical to it
        Case(
            "coordinator-half-pinned",
            pod(
                "coordinator-half-pinned",
                ns,
                coord,
                tolerations=[covering],
                affinity=_node_affinity(_zone_term(i, [i.zones[0]]), GPU_CLASS),
            ),
            True,
            _gk("covered-toleration-added"),
        ),
        # a term that excludes a zone (NotIn) beside one that requires a label to exist
        Case(
            "coordinator-zone-not-in",
            pod(
                "coordinator-zone-not-in",
                ns,
                coord,
                affinity=_node_affinity(
                    {
                        "matchExpressions": [
                            {"key": i.zone_label, "operator": "NotIn", "values": ["zone-z"]}
                        ]
                    },
                    {
                        "matchExpressions": [
                            {"key": i.zone_label, "operator": "Exists"},
                            *GPU_CLASS["matchExpressions"],
                        ]
                    },
                ),
            ),
            True,
            _gk("zone-term-other-operator-kept"),
        ),
        Case(
            "coordinator-tolerates-all",
            pod("coordinator-tolerates-all", ns, coord, tolerations=[{"operator": "Exists"}]),
            True,
            _gk("covered-toleration-added"),
        ),
        Case(
            "coordinator-already-mutated",
            {**mutate(pod("coordinator-already-mutated", ns, coord), i)},
            True,
        ),
        # a nodeSelector zone outside the domain: pinned by mutation, still unschedulable
        Case(
            "coordinator-node-selector-outside",
            pod(
                "coordinator-node-selector-outside",
                ns,
                coord,
                nodeSelector={i.zone_label: "zone-z"},
            ),
            True,
        ),
        Case(
            "worker-other-affinity",
            pod(
                "worker-other-affinity",
                ns,
                worker,
                affinity={
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [CACHE_TERM],
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 5, "podAffinityTerm": CACHE_TERM}
                        ],
                    },
                    **_node_affinity(GPU_CLASS),
                },
            ),
            True,
            _gk(*worker_term),
        ),
        Case(
            "worker-equivalent-term",
            pod(
                "worker-equivalent-term",
                ns,
                worker,
                affinity={
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "labelSelector": {"matchLabels": {i.job_label: job}},
                                "topologyKey": i.topology_key,
                            }
                        ]
                    }
                },
            ),
            True,
            _gk("equivalent-term-not-recognised"),
        ),
        Case(
            "worker-other-job-term",
            pod(
                "worker-other-job-term",
                ns,
                worker,
                affinity={
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "labelSelector": {"matchLabels": {i.job_label: "another-job"}},
                                "topologyKey": i.topology_key,
                            }
                        ]
                    }
                },
            ),
            True,
            _gk(*worker_term),
        ),
        Case(
            "worker-already-mutated",
            mutate(pod("worker-already-mutated", ns, worker), i),
            True,
            _gk("equivalent-term-not-recognised"),
        ),
        # pods to leave alone
        Case(
            "not-training",
            pod("not-training", ns, {k: v for k, v in coord.items() if k != i.job_label}),
            True,
        ),
        Case("no-role", pod("no-role", ns, no_role), True),
        Case("other-namespace", pod("other-namespace", OTHER_NS, coord), True),
        Case("kueue-label", pod("kueue-label", ns, {**coord, "kueue.x-k8s.io/tas": "true"}), True),
        Case(
            "kueue-annotation",
            _annotated(
                pod("kueue-annotation", ns, worker),
                {"kueue.x-k8s.io/podset-required-topology": "cloud.example.com/block"},
            ),
            True,
            _gk("kueue-annotation-mutated", *worker_term),
        ),
        # implicit TAS: Kueue's scheduling gate alone marks the pod
        Case(
            "kueue-gate",
            pod("kueue-gate", ns, coord, schedulingGates=[{"name": i.skip_gate}]),
            True,
            _gk("kueue-gate-mutated"),
        ),
    ]
    if i.identity_label:
        spoofed = {**coord, i.identity_label: "zone-z"}
        out.append(
            Case(
                "coordinator-spoofed-identity",
                pod("coordinator-spoofed-identity", ns, spoofed),
                True,
                _gk("identity-label-kept") if identity else {},
            )
        )
        out.append(
            Case(
                "worker-spoofed-identity",
                pod(
                    "worker-spoofed-identity",
                    ns,
                    {**worker, i.identity_label: zones_for(i, ns, job)[0]},
                    affinity=_node_affinity(_zone_term(i, list(i.zones))),
                ),
                True,
                _gk(*worker_term),
            )
        )
    for n, (za, zb, _) in enumerate(i.denied_zone_pairs):
        out.append(
            Case(
                f"coordinator-spans-{n}",
                pod(
                    f"coordinator-spans-{n}",
                    ns,
                    coord,
                    affinity=_node_affinity(_zone_term(i, [za, zb])),
                ),
                True,
            )
        )
    if i.per_job:
        # spread: a job the render did not know (the fallback), the same job name in
        # another namespace (its own zones), a job named in the zones table
        unknown = {**coord, i.job_label: "unknown-job"}
        out += [
            Case("coordinator-unknown-job", pod("coordinator-unknown-job", ns, unknown), True),
            Case(
                "worker-unknown-job",
                pod("worker-unknown-job", ns, {**worker, i.job_label: "unknown-job"}),
                True,
                _gk(*worker_term),
            ),
            Case(
                "coordinator-job-elsewhere",
                pod("coordinator-job-elsewhere", i.namespaces[0], coord),
                True,
            ),
        ]
    if i.job_excludes:
        out += _queued_cases(i, coord, worker)
    # validation only: every admission case as the reference admits it, and hand-broken pods
    out += [
        Case(
            f"{c.name}-admitted",
            _renamed(mutate(c.pod, i), f"{c.name}-admitted"),
            False,
            _judging_only(c.differences),
        )
        for c in list(out)
    ]
    pinned = _zone_term(i, list(i.zones))
    out += [
        Case("unpinned-coordinator", pod("unpinned-coordinator", ns, coord), False),
        Case(
            "worker-without-affinity",
            pod("worker-without-affinity", ns, worker, affinity=_node_affinity(pinned)),
            False,
        ),
        Case(
            "worker-match-label-keys-term",
            pod(
                "worker-match-label-keys-term",
                ns,
                worker,
                affinity={
                    **_node_affinity(pinned),
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [gk_term(i, worker)]
                    },
                },
            ),
            False,
            _gk("match-label-keys-term-accepted"),
        ),
    ]
    return tuple(out)


def _queued_cases(i: AdmissionIntent, coord: dict[str, str], worker: dict[str, str]) -> list[Case]:
    """A queued job's pods: anti-affinity to the jobs it never shares its domain with,
    beside a term of the pod's own, once when one of them is already there."""
    (ns, job), excludes = i.job_excludes[0]
    queued_coord, queued_worker = {**coord, i.job_label: job}, {**worker, i.job_label: job}
    first = anti_affinity_term(i, excludes[0])
    assert excludes_for(i, ns, job) == excludes and len(excludes) > 1
    anti = {"requiredDuringSchedulingIgnoredDuringExecution": [CACHE_TERM]}
    worker_term = ("coordinator-term-match-label-keys",)
    return [
        Case("coordinator-queued", pod("coordinator-queued", ns, queued_coord), True),
        Case("worker-queued", pod("worker-queued", ns, queued_worker), True, _gk(*worker_term)),
        Case(
            "coordinator-queued-own-anti-affinity",
            pod(
                "coordinator-queued-own-anti-affinity",
                ns,
                queued_coord,
                affinity={"podAntiAffinity": anti},
            ),
            True,
        ),
        Case(
            "worker-queued-one-term-there",
            pod(
                "worker-queued-one-term-there",
                ns,
                queued_worker,
                affinity={
                    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [first]}
                },
            ),
            True,
            _gk(*worker_term),
        ),
        Case(
            "worker-queued-preferred-anti-affinity",
            pod(
                "worker-queued-preferred-anti-affinity",
                ns,
                queued_worker,
                affinity={
                    "podAntiAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 10, "podAffinityTerm": CACHE_TERM}
                        ]
                    }
                },
            ),
            True,
            _gk(*worker_term),
        ),
        Case(
            "coordinator-queued-already-mutated",
            mutate(pod("coordinator-queued-already-mutated", ns, queued_coord), i),
            True,
        ),
    ]


def _judging_only(differences: Mapping[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """The differences of the checks alone (those of mutation stay with the admission)."""
    out = {
        engine: tuple(d for d in names if DIFFERENCES[d].checks is not None)
        for engine, names in differences.items()
    }
    return {e: names for e, names in out.items() if names}


def _annotated(p: Pod, annotations: dict[str, str]) -> Pod:
    p["metadata"]["annotations"] = annotations
    return p


def _renamed(p: Pod, name: str) -> Pod:
    p = copy.deepcopy(p)
    p["metadata"]["name"] = name
    return p


def spread_intent(static: bool) -> AdmissionIntent:
    """Spread over two domains: job run-1 packed into zone-b in the second namespace and
    zone-a in the first, run-3 of the first into zone-b, run-2 of the second queued in
    zone-b behind run-1, run-3 and a job of another kind; a job the render did not know gets zone-a (static
    identity: the label names the job's zone) or any zone of the set (identity stamped at
    binding or none)."""
    syn = synthetic_intent()
    a, b = ("spread-a", "spread-b") if static else ("set-a", "set-b")  # suites apart
    return dataclasses.replace(
        syn,
        name="topogen-spread" if static else "topogen-spread-set",
        group="spread" if static else "spread-set",
        namespaces=(a, b),
        topology_key=ZONE,
        identity_label="net.example.com/zone" if static else None,
        denied_zone_pairs=(),
        job_zones=(
            ((a, "run-1"), ("zone-a",)),
            ((a, "run-3"), ("zone-b",)),
            ((b, "run-1"), ("zone-b",)),
            ((b, "run-2"), ("zone-b",)),
        ),
        fallback_zones=("zone-a",) if static else ("zone-a", "zone-b"),
        job_identity=static,
        validation_action="Audit",
        # run-2 is queued in zone-b: never beside run-1 of its namespace or run-3 of the
        # other (one term), nor beside batch-7 of the first (a job of another kind)
        job_excludes=(
            (
                (b, "run-2"),
                (Exclusion((a, b), JOB, ("run-1", "run-3")), Exclusion((a,), BATCH, ("batch-7",))),
            ),
        ),
    )


def suites() -> list[Suite]:
    ex = example_intent()
    syn = synthetic_intent()
    spread = [spread_intent(True), spread_intent(False)]
    coords = [{JOB: "run-1", ROLE: "launcher"}, {JOB: "run-1", ROLE: "node", RANK: "0"}]
    workers = [{JOB: "run-1", ROLE: "node", RANK: "3"}, {JOB: "run-1", ROLE: "ps"}]
    ops = operators_intent()
    return [
        Suite(
            "zone-split",
            ex,
            _cases(
                ex,
                [{"app": "resnet", "role": "coordinator"}],
                [{"app": "resnet", "role": "gpu-worker"}],
                {"app": "resnet", "role": "evaluator"},
            ),
        ),
        Suite(
            "synthetic",
            syn,
            _cases(
                syn,
                [{JOB: "run-1", ROLE: "launcher"}, {JOB: "run-1", ROLE: "node", RANK: "0"}],
                [{JOB: "run-1", ROLE: "node", RANK: "3"}, {JOB: "run-1", ROLE: "ps"}],
                {JOB: "run-1", ROLE: "evaluator"},
            ),
        ),
        *(
            Suite(i.group, i, _cases(i, coords, workers, {JOB: "run-1", ROLE: "evaluator"}))
            for i in spread
        ),
        Suite(
            "operators",
            ops,
            _cases(
                ops,
                [{JOB: "run-1", ROLE: "leader"}, {BATCH_JOB: "run-1"}],
                [
                    {JOB: "run-1", GROUP: "g0", ROLE: "worker"},
                    {JOB: "run-1", GROUP: "g0", OPERATOR: "paddle", ROLE: "worker", RANK: "3"},
                ],
                {JOB: "run-1", ROLE: "evaluator"},
            ),
        ),
    ]
