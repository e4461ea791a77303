"""KubeRay (ray.io/v1 RayCluster, RayJob): a head, worker groups, and a RayJob's submitter.

Read from github.com/ray-project/kuberay/ray-operator@v1.4.0 and @v1.5.0:
controllers/ray/common/pod.go labelPod stamps ray.io/is-ray-node, cluster, node-type,
group, identifier and app.kubernetes.io/name, created-by over the template's labels; a
worker group makes clamp(replicas, minReplicas, maxReplicas) x numOfHosts pods (0 when
suspended), each with the wait-gcs-ready init container. A RayJob creates its RayCluster
<rayjob>-<5 random characters> (xxxxx here: no pod label names the RayJob) and, in
K8sJobMode (the default), once the cluster is ready, the batch Job <rayjob> whose pod,
the submitter, calls the head's dashboard; in SidecarMode the submitter is a container of
the head. The submitter has no ray.io label: it is the cluster's detached pod.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from topogen.errors import InputError
from topogen.manifest import KubeObject, as_list, as_map
from topogen.operators.base import Inputs, Operator, PodSet, role_in, template_of
from topogen.operators.profile import Profile

__all__ = ["CLUSTER_LABEL", "NODE_TYPE_LABEL", "KubeRay", "cluster_name"]

CLUSTER_LABEL = "ray.io/cluster"
NODE_TYPE_LABEL = "ray.io/node-type"
GROUP_LABEL = "ray.io/group"
JOB_NAME = "batch.kubernetes.io/job-name"
# rand.String's alphabet (k8s.io/apimachinery/pkg/util/rand): the cluster name's suffix
SUFFIX = "-[bcdfghjklmnpqrstvwxz2456789]{5}"
PLACEHOLDER = "xxxxx"
MAX_INT32 = 2**31 - 1
_INIT = {
    "name": "wait-gcs-ready",
    "resources": {
        "limits": {"cpu": "200m", "memory": "256Mi"},
        "requests": {"cpu": "200m", "memory": "256Mi"},
    },
}
_SUBMITTER_RESOURCES = {
    "limits": {"cpu": "1", "memory": "1Gi"},
    "requests": {"cpu": "500m", "memory": "200Mi"},
}


def cluster_name(obj: KubeObject) -> str:
    """The RayCluster a RayCluster or RayJob object runs (a RayJob's gets a random suffix)."""
    if obj.kind == "RayCluster":
        return obj.name
    return f"{obj.name}-{PLACEHOLDER}"


def _labels(
    cluster: str, node_type: str, group: str, template: Mapping[str, Any], extra: Any
) -> dict[str, str]:
    own = {
        **(template["metadata"].get("labels") or {}),
        **(extra if isinstance(extra, Mapping) else {}),
    }
    return {
        **own,
        "ray.io/is-ray-node": "yes",
        CLUSTER_LABEL: cluster,
        NODE_TYPE_LABEL: node_type,
        GROUP_LABEL: group,
        "ray.io/identifier": f"{cluster}-{node_type}",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }


def _with_metrics_port(template: dict[str, Any]) -> dict[str, Any]:
    containers = [dict(c) for c in template["spec"].get("containers") or [] if isinstance(c, dict)]
    if containers:
        ports = list(containers[0].get("ports") or [])
        if not any(isinstance(p, dict) and p.get("name") == "metrics" for p in ports):
            ports.append({"containerPort": 8080, "name": "metrics"})
        containers[0] = {**containers[0], "ports": ports}
        template["spec"] = {**template["spec"], "containers": containers}
    return template


def _count(value: Any, default: int, what: str, obj: KubeObject) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{obj.where()}: {what} must be a non-negative integer", path=obj.path)
    return value


class KubeRay(Operator):
    name = "kuberay"
    title = "KubeRay"
    kinds = (("ray.io", "RayCluster"), ("ray.io", "RayJob"))
    job_label = CLUSTER_LABEL
    role_label = NODE_TYPE_LABEL
    coordinator_roles = ("head",)
    worker_roles = ("worker",)

    def pods(self, obj: KubeObject, inputs: Inputs) -> Iterator[PodSet]:
        spec = as_map(obj.body.get("spec"), "spec", obj)
        if obj.kind == "RayCluster":
            yield from _cluster(obj, spec, "spec", obj.name, sidecar=False)
            return
        if spec.get("clusterSelector"):
            inputs.warn(
                f"{obj.path}: {obj.where()} runs on an existing cluster (clusterSelector): "
                "its pods are that RayCluster's"
            )
            return
        mode = spec.get("submissionMode") or "K8sJobMode"
        cluster = as_map(spec.get("rayClusterSpec"), "spec.rayClusterSpec", obj)
        yield from _cluster(
            obj, cluster, "spec.rayClusterSpec", cluster_name(obj), sidecar=mode == "SidecarMode"
        )
        if mode == "K8sJobMode":
            yield _submitter(obj, spec, cluster)

    def rules(self, job: str, role: str, coordinator: list[str], worker: list[str]) -> Profile:
        profile = super().rules(job, role, coordinator, worker)
        return Profile(
            profile.name,
            job,
            role,
            profile.coordinator,
            profile.worker,
            members=role_in(role, [*coordinator, *worker]),
            detached_label=JOB_NAME,
            detached_suffix=SUFFIX,
        )


def _cluster(
    obj: KubeObject, spec: Mapping[str, Any], where: str, cluster: str, *, sidecar: bool
) -> Iterator[PodSet]:
    head = as_map(spec.get("headGroupSpec"), f"{where}.headGroupSpec", obj)
    if head.get("template") is None:
        raise InputError(f"{obj.where()}: {where}.headGroupSpec.template is missing", path=obj.path)
    t = _with_metrics_port(template_of(head["template"]))
    if sidecar:
        t["spec"] = {
            **t["spec"],
            "containers": [*t["spec"].get("containers", []), _submitter_container(spec)],
        }
    base = where.split(".")
    at = (*base, "headGroupSpec", "template")
    yield PodSet(
        "head",
        1,
        t,
        f"{where}.headGroupSpec.template",
        _labels(cluster, "head", "headgroup", t, head.get("labels")),
        at,
        {"ray.io/ft-enabled": "false"},
    )
    for i, g in enumerate(as_list(spec.get("workerGroupSpecs"), f"{where}.workerGroupSpecs", obj)):
        gw = f"{where}.workerGroupSpecs[{i}]"
        group = as_map(g, gw, obj)
        name = str(group.get("groupName") or "")
        if group.get("template") is None:
            raise InputError(f"{obj.where()}: {gw}.template is missing", path=obj.path)
        lo = _count(group.get("minReplicas"), 0, f"{gw}.minReplicas", obj)
        hi = _count(group.get("maxReplicas"), MAX_INT32, f"{gw}.maxReplicas", obj)
        want = _count(group.get("replicas"), 0, f"{gw}.replicas", obj)
        hosts = _count(group.get("numOfHosts"), 1, f"{gw}.numOfHosts", obj)
        count = hi if lo > hi else min(max(want, lo), hi)
        if group.get("suspend") is True:
            count = 0
        wt = _with_metrics_port(template_of(group["template"]))
        init = {
            **_INIT,
            "image": ((wt["spec"].get("containers") or [{}])[0] or {}).get("image", ""),
        }
        wt["spec"] = {
            **wt["spec"],
            "initContainers": [*(wt["spec"].get("initContainers") or []), init],
        }
        yield PodSet(
            name,
            count * hosts,
            wt,
            f"{gw}.template",
            _labels(cluster, "worker", name, wt, group.get("labels")),
            (*base, "workerGroupSpecs", i, "template"),
        )


def _head_image(cluster: Mapping[str, Any]) -> str:
    head = cluster.get("headGroupSpec") or {}
    containers = ((head.get("template") or {}).get("spec") or {}).get("containers") or [{}]
    return str((containers[0] or {}).get("image", ""))


def _submitter_container(cluster: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": "ray-job-submitter",
        "image": _head_image(cluster),
        "resources": _SUBMITTER_RESOURCES,
    }


def _submitter(obj: KubeObject, spec: Mapping[str, Any], cluster: Mapping[str, Any]) -> PodSet:
    """The submitter: the pod of the batch Job <rayjob>, from submitterPodTemplate or the
    default (the head's image, restartPolicy Never)."""
    given = spec.get("submitterPodTemplate")
    if given is not None:
        template = template_of(given)
        at: tuple[str, ...] | None = ("spec", "submitterPodTemplate")
    else:
        template = template_of(
            {"spec": {"restartPolicy": "Never", "containers": [_submitter_container(cluster)]}}
        )
        at = None
    labels = {
        **(template["metadata"].get("labels") or {}),
        JOB_NAME: obj.name,
        "job-name": obj.name,
    }
    return PodSet("submitter", 1, template, "spec.submitterPodTemplate", labels, at, late=True)
