"""Job shapes for the Kueue job policies: each a case of the reference
(render/kueue_reference.py) the engines are held to."""

from __future__ import annotations

import copy
from typing import Any

from topogen.kueue.jobs import job_kind
from topogen.render.kueue_intent import KueueIntent

Job = dict[str, Any]
NS = "research"
ZONE = "topology.kubernetes.io/zone"


def intent(kind: str, api_version: str) -> KueueIntent:
    jk = job_kind(api_version, kind)
    assert jk is not None
    return KueueIntent(
        name=f"topogen-pytorch-kueue-{kind.lower()}",
        cluster="gpu-east",
        group="pytorch",
        kind=jk,
        namespaces=(NS,),
        queues=(f"{NS}/training",),
        zone_label=ZONE,
        zones=("zone-a", "zone-b"),
        level=ZONE,
        group_name="topogen-pytorch",
        validation_action="Audit",
    )


def _template(annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    t: dict[str, Any] = {
        "spec": {"containers": [{"name": "pytorch", "image": "registry.example/r:1"}], **spec}
    }
    if annotations is not None:
        t["metadata"] = {"annotations": annotations}
    return t


def pytorchjob(name: str, specs: dict[str, tuple[int, dict[str, Any]]], **meta: Any) -> Job:
    labels = meta.pop("labels", {"kueue.x-k8s.io/queue-name": "training"})
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": meta.pop("namespace", NS), "labels": labels},
        "spec": {
            "pytorchReplicaSpecs": {
                rtype: {"replicas": n, "restartPolicy": "OnFailure", "template": t}
                for rtype, (n, t) in specs.items()
            }
        },
    }


def jobset(
    name: str, rjobs: list[tuple[str, int, int, dict[str, Any]]], queue: str = "training"
) -> Job:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {"kueue.x-k8s.io/queue-name": queue},
        },
        "spec": {
            "replicatedJobs": [
                {
                    "name": rj,
                    "replicas": n,
                    "template": {"spec": {"parallelism": p, "completions": p, "template": t}},
                }
                for rj, n, p, t in rjobs
            ]
        },
    }


REQUIRED = {"kueue.x-k8s.io/podset-required-topology": ZONE}
USER_TERM = {
    "matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]
}
ZONE_TERM = {
    "matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-a"]}],
    "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["gpu-a-9"]}],
}


def _with_terms(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [copy.deepcopy(t) for t in terms]
            }
        }
    }


def pytorch_jobs() -> list[Job]:
    pod_affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": ZONE}
            ]
        }
    }
    return [
        pytorchjob("plain", {"Master": (1, _template()), "Worker": (3, _template())}),
        pytorchjob(
            "annotated",
            {"Master": (1, _template(dict(REQUIRED))), "Worker": (3, _template(dict(REQUIRED)))},
        ),
        pytorchjob(
            "with-terms",
            {
                "Master": (1, _template({})),
                "Worker": (3, _template(affinity=_with_terms(USER_TERM, ZONE_TERM))),
            },
        ),
        pytorchjob(
            "preferred",
            {
                "Master": (1, _template({"kueue.x-k8s.io/podset-preferred-topology": ZONE})),
                "Worker": (3, _template({"kueue.x-k8s.io/podset-preferred-topology": ZONE})),
            },
        ),
        pytorchjob(
            "own-group",
            {
                "Master": (1, _template({"kueue.x-k8s.io/podset-group-name": "mine"})),
                "Worker": (3, _template({"kueue.x-k8s.io/podset-group-name": "mine"})),
            },
        ),
        pytorchjob("elastic", {"Worker": (4, _template())}),
        pytorchjob("two-big", {"Master": (2, _template()), "Worker": (3, _template())}),
        pytorchjob(
            "unconstrained",
            {
                "Master": (1, _template({"kueue.x-k8s.io/podset-unconstrained-topology": "true"})),
                "Worker": (3, _template()),
            },
        ),
        pytorchjob(
            "pod-affinity-only",
            {"Master": (1, _template(affinity=pod_affinity)), "Worker": (3, _template())},
        ),
        pytorchjob(
            "other-queue",
            {"Master": (1, _template()), "Worker": (3, _template())},
            labels={"kueue.x-k8s.io/queue-name": "other"},
        ),
        pytorchjob(
            "elsewhere",
            {"Master": (1, _template()), "Worker": (3, _template())},
            namespace="elsewhere",
        ),
        pytorchjob(
            "not-queued", {"Master": (1, _template()), "Worker": (3, _template())}, labels={}
        ),
    ]


def jobsets() -> list[Job]:
    return [
        jobset("js-plain", [("launcher", 1, 1, _template()), ("worker", 1, 3, _template())]),
        jobset(
            "js-three",
            [
                ("launcher", 1, 1, _template()),
                ("worker", 1, 3, _template()),
                ("ps", 1, 1, _template()),
            ],
        ),
        jobset("js-parallel", [("launcher", 2, 1, _template()), ("worker", 2, 2, _template())]),
        jobset("js-other-queue", [("worker", 1, 3, _template())], queue="other"),
    ]
