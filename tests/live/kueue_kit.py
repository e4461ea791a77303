"""The Kueue scenario of tests/live (examples/kueue-tas) and what a test does with it: queue a
job, wait for Kueue to admit its Workload, create the job's pods as its operator does from
the templates Kueue unsuspended, wait for Kueue's ungater and kube-scheduler.

The operators themselves do not run (their controllers are not built here): their pods
are made as their source makes them, read from the module versions Kueue v0.17.0 requires:
- training-operator v1.9.3 (pkg/controller.v1/common/pod.go createNewPod): the replica's
  template with the labels operator-name, job-name, replica-type (lower case),
  replica-index and job-role=master on the master, named <job>-<type>-<index>, owned by
  the job, restartPolicy from the replica spec; PyTorch workers get the init container
  `init-pytorch` (pytorch/initcontainer.go, default image and resources) when the job has
  a master. The environment SetClusterSpec adds (MASTER_ADDR, RANK ...) is left out: it
  does not touch placement.
- jobset v0.11.1 (labelAndAnnotateObject) and the Job controller (Indexed completion):
  the ReplicatedJob's pod template with the JobSet labels and annotations and the Job's
  completion-index label, named <jobset>-<rjob>-<job index>-<completion index>; the Job
  objects in between are not made (nothing here would run them).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from kueue_harness import Kueue
from live_harness import ControlPlane, KubeError, collection_path, wait_until
from webhook_harness import CONTROLLER_TIMEOUT

# the scenario: examples/kueue-tas (nodes, Kueue objects, policy, PyTorchJob), and the
# same job as a JobSet
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "kueue-tas"
SCENARIO = {
    "nodes.yaml": EXAMPLE / "cluster" / "nodes.yaml",
    "kueue.yaml": EXAMPLE / "kueue" / "queues.yaml",
    "cilium.yaml": EXAMPLE / "cilium" / "training-zones.yaml",
    "pytorchjob.yaml": EXAMPLE / "workloads" / "resnet.yaml",
    "jobset.yaml": Path(__file__).parent / "kueue_scenario" / "jobset.yaml",
}
NAMESPACE = "research"
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
GATE = "kueue.x-k8s.io/topology"
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"
PODSET_LABEL = "kueue.x-k8s.io/podset"
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
GROUP_NAME = "kueue.x-k8s.io/podset-group-name"
KUEUE_API = "/apis/kueue.x-k8s.io/v1beta2"
PYTORCHJOBS = f"/apis/kubeflow.org/v1/namespaces/{NAMESPACE}/pytorchjobs"
JOBSETS = f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{NAMESPACE}/jobsets"
# Kueue's cluster-scoped objects, deleted in this order, each kind gone before the next (clear)
QUEUE_OBJECTS = ("clusterqueues", "resourceflavors", "topologies")


def scenario(name: str) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(SCENARIO[name].read_text()) if d]
    if len(docs) == 1 and docs[0]["kind"] == "List":
        return list(docs[0]["items"])
    return docs


def the(name: str) -> dict[str, Any]:
    (doc,) = scenario(name)
    return doc


def zone_of(node: str) -> str:
    zones: dict[str, str] = {
        n["metadata"]["name"]: n["metadata"]["labels"][ZONE] for n in scenario("nodes.yaml")
    }
    return zones[node]


# -- objects --


def kueue_path(obj: Mapping[str, Any]) -> str:
    plural = {
        "Topology": "topologies",
        "ResourceFlavor": "resourceflavors",
        "ClusterQueue": "clusterqueues",
        "LocalQueue": "localqueues",
    }[obj["kind"]]
    ns = obj["metadata"].get("namespace")
    return f"{KUEUE_API}/namespaces/{ns}/{plural}" if ns else f"{KUEUE_API}/{plural}"


def install_queues(cp: ControlPlane, objs: Sequence[Mapping[str, Any]]) -> None:
    """Create the Namespace and Kueue objects; wait until every ClusterQueue is active."""
    kube = cp.kube()
    for obj in objs:
        if obj["kind"] == "Namespace":
            cp.ensure_namespace(obj["metadata"]["name"])
        else:
            kube.create(kueue_path(obj), obj)
    queues = [o for o in objs if o["kind"] == "ClusterQueue"]

    def active() -> bool:
        for cq in queues:
            got = kube.get(f"{kueue_path(cq)}/{cq['metadata']['name']}")
            conds = {c["type"]: c["status"] for c in got.get("status", {}).get("conditions", [])}
            if conds.get("Active") != "True":
                return False
        return True

    wait_until("ClusterQueues active", active, CONTROLLER_TIMEOUT)


def create(cp: ControlPlane, obj: Mapping[str, Any]) -> dict[str, Any]:
    got: dict[str, Any] = cp.kube().create(collection_path(obj), obj)
    return got


def with_template_change(
    job: Mapping[str, Any], change: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """The job with each named role's pod template changed: role -> {"annotations": {...},
    "affinity": {...}} (annotations merged, affinity set)."""
    out = copy.deepcopy(dict(job))
    for role, edit in change.items():
        template = role_templates(out)[role]
        meta = template.setdefault("metadata", {})
        meta["annotations"] = {**(meta.get("annotations") or {}), **edit.get("annotations", {})}
        for key in [k for k, v in edit.get("annotations", {}).items() if v is None]:
            del meta["annotations"][key]
        if "affinity" in edit:
            template["spec"]["affinity"] = copy.deepcopy(edit["affinity"])
    return out


def role_templates(job: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """role -> the pod template Kueue makes a PodSet of (the replica type's, the
    ReplicatedJob's)."""
    if job["kind"] == "PyTorchJob":
        return {r: s["template"] for r, s in job["spec"]["pytorchReplicaSpecs"].items()}
    return {r["name"]: r["template"]["spec"]["template"] for r in job["spec"]["replicatedJobs"]}


def zone_affinity(zones: Sequence[str]) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": list(zones)}]}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


# -- Kueue's answers --


def workload_for(cp: ControlPlane, job: Mapping[str, Any]) -> dict[str, Any]:
    """The job's Workload once Kueue admitted it (status.admission set)."""
    found: dict[str, Any] = {}

    def admitted() -> bool:
        items = cp.kube().get(f"{KUEUE_API}/namespaces/{NAMESPACE}/workloads")["items"]
        for wl in items:
            owners = wl["metadata"].get("ownerReferences") or []
            if any(o["uid"] == job["metadata"]["uid"] for o in owners) and wl.get("status", {}).get(
                "admission"
            ):
                found.update(wl)
                return True
        return False

    wait_until(
        f"{job['kind']} {job['metadata']['name']} admitted by Kueue", admitted, CONTROLLER_TIMEOUT
    )
    return found


def pending_workload(cp: ControlPlane, job: Mapping[str, Any]) -> dict[str, Any]:
    """The job's Workload once Kueue judged it and left it pending (QuotaReserved False
    with a reason)."""
    found: dict[str, Any] = {}

    def judged() -> bool:
        items = cp.kube().get(f"{KUEUE_API}/namespaces/{NAMESPACE}/workloads")["items"]
        for wl in items:
            owners = wl["metadata"].get("ownerReferences") or []
            if not any(o["uid"] == job["metadata"]["uid"] for o in owners):
                continue
            conds = {c["type"]: c for c in wl.get("status", {}).get("conditions", [])}
            quota = conds.get("QuotaReserved")
            if quota and quota["status"] == "False" and quota.get("message"):
                found.update(wl)
                return True
        return False

    wait_until(f"{job['metadata']['name']} judged by Kueue", judged, CONTROLLER_TIMEOUT)
    return found


def assigned_zones(workload: Mapping[str, Any]) -> dict[str, set[str]]:
    """podset -> the zones of its topologyAssignment. With hostname the Topology's lowest
    level, Kueue lists that level alone (the zone is the host's); else the zone level's
    values."""
    out: dict[str, set[str]] = {}
    for psa in workload["status"]["admission"]["podSetAssignments"]:
        ta = psa["topologyAssignment"]
        by_host = ZONE not in ta["levels"]
        level = ta["levels"].index(HOSTNAME if by_host else ZONE)
        values = {v for s in ta.get("slices") or [] for v in _slice_values(s, level)}
        out[psa["name"]] = {zone_of(v) for v in values} if by_host else values
    return out


def _slice_values(slice_: Mapping[str, Any], level: int) -> Iterator[str]:
    """The values of one level in a v1beta2 TopologyAssignment slice: each level is either
    one universal value or individual values (optionally a common prefix and suffix)."""
    values = slice_["valuesPerLevel"][level]
    if "universal" in values:
        yield values["universal"]
        return
    individual = values["individual"]
    prefix, suffix = individual.get("prefix", ""), individual.get("suffix", "")
    for root in individual["roots"]:
        yield prefix + root + suffix


def unsuspended(cp: ControlPlane, job: Mapping[str, Any]) -> dict[str, Any]:
    """The job once Kueue unsuspended it (its templates then carry what Kueue adds)."""
    path = f"{collection_path(job)}/{job['metadata']['name']}"
    got: dict[str, Any] = {}

    def running() -> bool:
        obj = cp.kube().get(path)
        spec = obj["spec"]
        suspend = (
            spec.get("suspend") if job["kind"] == "JobSet" else spec["runPolicy"].get("suspend")
        )
        if suspend is False:
            got.update(obj)
            return True
        return False

    wait_until(f"{job['metadata']['name']} unsuspended by Kueue", running, CONTROLLER_TIMEOUT)
    return got


# -- the operators' pods --


def _owner(job: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": job["apiVersion"],
        "kind": job["kind"],
        "name": job["metadata"]["name"],
        "uid": job["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def training_operator_pods(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The pods training-operator v1.9.3 creates for a PyTorchJob (see the module doc)."""
    name = job["metadata"]["name"]
    specs = job["spec"]["pytorchReplicaSpecs"]
    pods = []
    for rtype, spec in specs.items():
        for index in range(spec.get("replicas", 1)):
            template = copy.deepcopy(spec["template"])
            labels = {
                **(template.get("metadata", {}).get("labels") or {}),
                "training.kubeflow.org/operator-name": "pytorchjob-controller",
                "training.kubeflow.org/job-name": name,
                "training.kubeflow.org/replica-type": rtype.lower(),
                "training.kubeflow.org/replica-index": str(index),
            }
            if rtype == "Master" or ("Master" not in specs and index == 0):
                labels["training.kubeflow.org/job-role"] = "master"
            pod_spec = template["spec"]
            pod_spec["restartPolicy"] = spec.get("restartPolicy", "OnFailure")
            if rtype == "Worker" and "Master" in specs:
                pod_spec["initContainers"] = [
                    *(pod_spec.get("initContainers") or []),
                    _init_pytorch(name),
                ]
            pods.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{name}-{rtype.lower()}-{index}",
                        "namespace": job["metadata"]["namespace"],
                        "labels": labels,
                        "annotations": dict(template.get("metadata", {}).get("annotations") or {}),
                        "ownerReferences": [_owner(job)],
                    },
                    "spec": pod_spec,
                }
            )
    return pods


def _init_pytorch(job: str) -> dict[str, Any]:
    return {
        "name": "init-pytorch",
        "image": "alpine:3.10",
        "imagePullPolicy": "IfNotPresent",
        "resources": {
            "limits": {"cpu": "100m", "memory": "20Mi"},
            "requests": {"cpu": "50m", "memory": "10Mi"},
        },
        "command": [
            "sh",
            "-c",
            f"err=1;for i in $(seq 100); do if nslookup {job}-master-0; then err=0 && break; "
            "fi;echo waiting for master; sleep 2; done; exit $err",
        ],
    }


def jobset_pods(jobset: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The pods of a JobSet's Indexed Jobs, as the JobSet and Job controllers label them."""
    name = jobset["metadata"]["name"]
    uid = jobset["metadata"]["uid"]
    rjobs = jobset["spec"]["replicatedJobs"]
    total_jobs = sum(r.get("replicas", 1) for r in rjobs)
    pods, global_index = [], 0
    for rjob in rjobs:
        for job_index in range(rjob.get("replicas", 1)):
            job_name = f"{name}-{rjob['name']}-{job_index}"
            stamped = {
                "jobset.sigs.k8s.io/jobset-name": name,
                "jobset.sigs.k8s.io/jobset-uid": uid,
                "jobset.sigs.k8s.io/replicatedjob-name": rjob["name"],
                "jobset.sigs.k8s.io/restart-attempt": "0",
                "jobset.sigs.k8s.io/replicatedjob-replicas": str(rjob.get("replicas", 1)),
                "jobset.sigs.k8s.io/global-replicas": str(total_jobs),
                "jobset.sigs.k8s.io/job-index": str(job_index),
                "jobset.sigs.k8s.io/job-global-index": str(global_index),
            }
            global_index += 1
            job_spec = rjob["template"]["spec"]
            for completion in range(job_spec.get("parallelism", 1)):
                template = copy.deepcopy(job_spec["template"])
                meta = template.get("metadata", {})
                index = {"batch.kubernetes.io/job-completion-index": str(completion)}
                pods.append(
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {
                            "name": f"{job_name}-{completion}",
                            "namespace": jobset["metadata"]["namespace"],
                            "labels": {
                                **(meta.get("labels") or {}),
                                **stamped,
                                **index,
                                "batch.kubernetes.io/job-name": job_name,
                                "job-name": job_name,
                            },
                            "annotations": {**(meta.get("annotations") or {}), **stamped, **index},
                        },
                        "spec": template["spec"],
                    }
                )
    return pods


def create_pods(cp: ControlPlane, pods: Sequence[Mapping[str, Any]]) -> list[str]:
    for pod in pods:
        cp.create_pod(pod)
    return [p["metadata"]["name"] for p in pods]


def ungated(cp: ControlPlane, names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """pod -> pod, once Kueue's ungater removed the topology gate from each."""
    got: dict[str, dict[str, Any]] = {}

    def done() -> bool:
        for n in names:
            if n not in got:
                pod = cp.pod(NAMESPACE, n)
                gates = {g["name"] for g in pod["spec"].get("schedulingGates") or []}
                if GATE in gates:
                    return False
                got[n] = pod
        return True

    wait_until("pods ungated by Kueue", done, CONTROLLER_TIMEOUT)
    return got


# -- cleanup --


def clear(cp: ControlPlane, kueue: Kueue) -> None:
    """Remove the jobs, their Workloads (no garbage collector runs here: a Workload outlives
    its job, and Kueue drops its finalizer once the job is gone) and Kueue's objects."""
    kube = cp.kube()
    for path in (PYTORCHJOBS, JOBSETS):
        kube.delete(path)
    workloads = f"{KUEUE_API}/namespaces/{NAMESPACE}/workloads"
    localqueues = f"{KUEUE_API}/namespaces/{NAMESPACE}/localqueues"
    _delete_and_wait(cp, kueue, [workloads, localqueues])
    # One kind at a time, each gone before the next is deleted. Kueue lifts a ClusterQueue's
    # (a flavor's, a topology's) finalizer when its cache holds no Workload (ClusterQueue,
    # flavor) using it, checked on events that can come before the cache drops the user
    # (resourceflavor_controller.go, topology_controller.go): on a loaded machine the last
    # check can see the user still there, and nothing checks again. An object still being
    # deleted is touched now and then: its update event makes Kueue check again.
    for p in QUEUE_OBJECTS:
        _delete_and_wait(cp, kueue, [f"{KUEUE_API}/{p}"])


NUDGE_ANNOTATION = "topogen.test/nudge"


def _delete_and_wait(cp: ControlPlane, kueue: Kueue, collections: Sequence[str]) -> None:
    kube = cp.kube()
    for c in collections:
        try:
            kube.delete(c)
        except KubeError as exc:
            if exc.status != 405:
                raise
    polls = 0

    def gone() -> bool:
        nonlocal polls
        polls += 1
        left = [(c, item) for c in collections for item in kube.get(c)["items"]]
        if polls % 10 == 0:  # see clear()
            for c, item in left:
                meta = item["metadata"]
                if meta.get("deletionTimestamp"):
                    nudge = {"metadata": {"annotations": {NUDGE_ANNOTATION: str(polls)}}}
                    kube.merge_patch(f"{c}/{meta['name']}", nudge)
        return not left

    wait_until(
        f"{', '.join(c.rsplit('/', 1)[-1] for c in collections)} removed",
        gone,
        CONTROLLER_TIMEOUT,
        kueue.proc,
        interval=0.2,
    )
