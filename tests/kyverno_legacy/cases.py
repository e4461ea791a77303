"""Intents and admission pods for the differential tests of the two Kyverno engines."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from tooling import REPO
from topogen.config import GroupConfig, load_config
from topogen.model import Toleration
from topogen.operators.registry import profile_for
from topogen.pipeline.analyze import analyze
from topogen.render.intent import AdmissionIntent, intent_for

Pod = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
OTHER_NS = "elsewhere"


@dataclass(frozen=True)
class Case:
    """One intent and the labels that make a pod play each of its roles."""

    key: str  # short prefix: pod names must be unique across cases
    intent: AdmissionIntent
    coordinators: tuple[dict[str, str], ...]  # one label set per coordinator selector
    workers: tuple[dict[str, str], ...]
    non_role: dict[str, str] = field(default_factory=dict)  # job label, but no role
    shapes: bool = True  # also the pods with every shape of existing constraints


@cache
def example_intent(action: str = "Audit") -> AdmissionIntent:
    cfg = load_config(REPO / "examples" / "zone-split" / "topogen.yaml")
    return intent_for(analyze(cfg).plans[0], action)


def _example() -> Case:
    return Case(
        "ex",
        example_intent("Audit"),
        coordinators=({"app": "ml-training", "role": "coordinator"},),
        workers=({"app": "ml-training", "role": "gpu-worker"},),
        non_role={"app": "ml-training", "role": "evaluator"},
    )


def _multi_role() -> Case:
    """Custom profile with several roles each side (overlapping: a pod matching both is a
    coordinator), two zones, several tolerations, dotted/slashed keys, Enforce."""
    job, role = "example.com/job-name", "example.com/role"
    group = GroupConfig.model_validate(
        {
            "name": "llm",
            "profile": "custom",
            "namespaces": ["train-a", "train-b"],
            "groupLabel": job,
            "roleLabel": role,
            "coordinatorRoles": ["launcher", "master"],
            "workerRoles": ["worker", "ps", "master"],  # master: the coordinator wins
        }
    )
    p = profile_for(group)
    intent = AdmissionIntent(
        name="topogen-llm",
        cluster="lab",
        group="llm",
        namespaces=("train-a", "train-b"),
        job_label=p.job_label,
        coordinator=p.coordinator,
        worker=p.worker,
        coordinator_selector=p.coordinator[-1],
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
    return Case(
        "mr",
        intent,
        coordinators=({job: "run-1", role: "launcher"}, {job: "run-1", role: "master"}),
        workers=({job: "run-1", role: "worker"}, {job: "run-1", role: "ps"}),
        non_role={job: "run-1", role: "evaluator"},
    )


def _trainer() -> Case:
    """Kubeflow Trainer v2: ORed coordinator selectors with matchLabels, NotIn for workers."""
    group = GroupConfig.model_validate(
        {
            "name": "tv2",
            "profile": "kubeflow-trainer",
            "namespaces": ["team"],
            "identityLabel": "topology.example.com/zone",
        }
    )
    p = profile_for(group)
    base = example_intent("Audit")
    intent = replace(
        base,
        name="topogen-tv2",
        group="tv2",
        namespaces=("team",),
        job_label=p.job_label,
        coordinator=p.coordinator,
        worker=p.worker,
        coordinator_selector=p.coordinator[-1],
        anchors=tuple(a for _, a in p.worker_anchors),
        scope=p.scope,
        zones=("zone-b",),
        identity=("topology.example.com/zone", "zone-b"),
        identity_label="topology.example.com/zone",
        tolerations=(Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),),
        denied_zone_pairs=(("zone-a", "zone-b", ("cnp team/zone-fence",)),),
    )
    js, rj = "jobset.sigs.k8s.io/jobset-name", "jobset.sigs.k8s.io/replicatedjob-name"
    idx = "batch.kubernetes.io/job-completion-index"
    return Case(
        "tv",
        intent,
        coordinators=({js: "tj.v1_x-2", rj: "launcher"}, {js: "tj.v1_x-2", rj: "node", idx: "0"}),
        workers=({js: "tj.v1_x-2", rj: "node", idx: "3"},),
        non_role={js: "tj.v1_x-2", rj: "initializer"},
        shapes=False,  # this case is about the selectors; the shapes are covered twice
    )


def cases() -> list[Case]:
    return [_example(), _multi_role(), _trainer()]


# --- pods --------------------------------------------------------------------------------


def pod(name: str, namespace: str, labels: dict[str, str], **spec: Any) -> Pod:
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


def _zone_term(intent: AdmissionIntent, zones: list[str] | None = None) -> dict[str, Any]:
    return {
        "matchExpressions": [
            {"key": intent.zone_label, "operator": "In", "values": zones or list(intent.zones)}
        ]
    }


def _wanted(intent: AdmissionIntent) -> list[dict[str, str]]:
    from topogen.render.cel import toleration_dicts

    return toleration_dicts(intent.tolerations)


GPU_CLASS = {
    "matchExpressions": [
        {"key": "node.example.com/gpu-class", "operator": "In", "values": ["a100", "h100"]}
    ]
}
UNRELATED_TOLERATION = {
    "key": "team.example.com/dedicated",
    "operator": "Equal",
    "value": "ml",
    "effect": "NoSchedule",
}
CACHE_TERM = {
    "labelSelector": {"matchLabels": {"app": "cache"}},
    "topologyKey": "kubernetes.io/hostname",
}


def mutation_pods(case: Case) -> list[Pod]:
    """Admission pods: every role shape, compatible constraints, and pods to leave alone."""
    i = case.intent
    ns, k = i.namespaces[-1], case.key
    coord, worker = case.coordinators[0], case.workers[0]
    job_value = coord[i.job_label]
    other_zone = "zone-z"
    pods = [pod(f"{k}-coord-{n}", ns, labels) for n, labels in enumerate(case.coordinators)]
    pods += [pod(f"{k}-worker-{n}", ns, labels) for n, labels in enumerate(case.workers)]
    pods += [
        # unrelated toleration, user node affinity (three terms: expressions, fields only,
        # empty expressions), a preferred term and anti-affinity that must survive
        pod(
            f"{k}-coord-constrained",
            ns,
            coord,
            tolerations=[UNRELATED_TOLERATION],
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
        # one term already constrains the zone (kept as is), the other gets the domain
        pod(
            f"{k}-coord-half-pinned",
            ns,
            coord,
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}],
            affinity=_node_affinity(_zone_term(i, [i.zones[0]]), GPU_CLASS),
        ),
        pod(f"{k}-coord-tolerates-all", ns, coord, tolerations=[{"operator": "Exists"}]),
        pod(f"{k}-coord-near-miss", ns, coord, tolerations=_near_misses(i)),
        pod(
            f"{k}-coord-covered",
            ns,
            coord,
            tolerations=[{"key": w["key"], "operator": "Exists"} for w in _wanted(i)],
        ),
        pod(
            f"{k}-coord-mutated",
            ns,
            {**coord, **dict([i.identity] if i.identity else [])},
            tolerations=_wanted(i),
            affinity=_node_affinity(_zone_term(i)),
        ),
        pod(f"{k}-coord-node-selector", ns, coord, nodeSelector={i.zone_label: other_zone}),
        pod(
            f"{k}-worker-other-affinity",
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
        pod(
            f"{k}-worker-equivalent-term",
            ns,
            worker,
            affinity={
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {i.job_label: job_value}},
                            "topologyKey": i.topology_key,
                        }
                    ]
                }
            },
        ),
        pod(
            f"{k}-worker-other-job-term",
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
        # a zone requirement that is not `In`: the mutation ANDs the domain into the term
        pod(
            f"{k}-coord-avoids-zone",
            ns,
            coord,
            affinity=_node_affinity(
                {
                    "matchExpressions": [
                        {"key": i.zone_label, "operator": "NotIn", "values": [other_zone]}
                    ]
                }
            ),
        ),
        pod(
            f"{k}-coord-preferred-only",
            ns,
            coord,
            affinity={
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 1, "preference": GPU_CLASS}
                    ]
                }
            },
        ),
        pod(
            f"{k}-coord-node-selector-domain",
            ns,
            coord,
            nodeSelector={i.zone_label: i.zones[-1], "kubernetes.io/arch": "amd64"},
        ),
        pod(f"{k}-worker-empty-affinity", ns, worker, affinity={}),
        pod(f"{k}-worker-empty-job", ns, {**worker, i.job_label: ""}),
        pod(f"{k}-not-training", ns, {k2: v for k2, v in coord.items() if k2 != i.job_label}),
        pod(f"{k}-no-role", ns, case.non_role),
        pod(f"{k}-other-namespace", OTHER_NS, coord),
        pod(f"{k}-kueue-label", ns, {**coord, "kueue.x-k8s.io/tas": "true"}),
        _annotated(
            pod(f"{k}-kueue-annotation", ns, worker),
            {"kueue.x-k8s.io/podset-required-topology": "cloud.example.com/block"},
        ),
    ]
    if i.identity_label:
        pods.append(pod(f"{k}-coord-spoofed", ns, {**coord, i.identity_label: other_zone}))
        pods.append(
            pod(
                f"{k}-coord-identity-empty",
                ns,
                {**coord, i.identity_label: ""},
                affinity=_node_affinity(_zone_term(i)),
            )
        )
        pods.append(
            pod(
                f"{k}-worker-spoofed",
                ns,
                {**worker, i.identity_label: i.zones[0]},
                affinity=_node_affinity(_zone_term(i, list(i.zones))),
            )
        )
    for n, (za, zb, _) in enumerate(i.denied_zone_pairs):
        pods.append(
            pod(f"{k}-coord-span-{n}", ns, coord, affinity=_node_affinity(_zone_term(i, [za, zb])))
        )
    if not case.shapes:
        pods = [p for p in pods if p["metadata"]["name"].removeprefix(f"{k}-") not in SHAPES]
    return pods


SHAPES = {  # pods about the shape of existing constraints rather than about the selectors
    "coord-constrained", "coord-half-pinned", "coord-tolerates-all", "coord-near-miss",
    "coord-covered", "coord-preferred-only", "coord-node-selector", "coord-node-selector-domain",
    "coord-avoids-zone", "worker-other-affinity", "worker-empty-affinity", "worker-empty-job",
}  # fmt: skip


def _near_misses(intent: AdmissionIntent) -> list[dict[str, str]]:
    """Tolerations that look like the wanted ones and cover none of their taints."""
    out = []
    for w in _wanted(intent):
        effect = "NoSchedule" if w["effect"] == "NoExecute" else "NoExecute"
        out.append({**w, "effect": effect})
        out.append({"key": w["key"], "operator": "Equal", "value": "other", "effect": w["effect"]})
    return out


def _annotated(p: Pod, annotations: dict[str, str]) -> Pod:
    p = copy.deepcopy(p)
    p["metadata"]["annotations"] = annotations
    return p


def untouched_names(case: Case) -> set[str]:
    """Pods no policy of the case may change."""
    k = case.key
    return {
        f"{k}-not-training",
        f"{k}-no-role",
        f"{k}-other-namespace",
        f"{k}-kueue-label",
        f"{k}-kueue-annotation",
    }
