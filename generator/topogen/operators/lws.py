"""LeaderWorkerSet (leaderworkerset.x-k8s.io/v1): `replicas` groups of `size` pods.

Read from sigs.k8s.io/lws@v0.6.2, @v0.7.0 and @v0.8.0: the leader StatefulSet <lws>
(pkg/controllers/leaderworkerset_controller.go) makes a leader <lws>-<g> per group from
leaderTemplate (else workerTemplate), labelled worker-index=0 and name; once a leader
exists, the pod controller (pkg/controllers/pod_controller.go) makes the worker
StatefulSet <lws>-<g>, size - 1 workers <lws>-<g>-<i> labelled name, group-index and
group-key. The pod webhook (pkg/webhooks/pod_webhook.go) adds group-index and
group-key (sha1 of <namespace>/<leader>) to leaders and worker-index to workers. Each
group is one job: its leader coordinates; the template revision hashes are not
knowable and left out.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from topogen.digests import sha1_hex
from topogen.errors import InputError
from topogen.manifest import KubeObject, as_map
from topogen.model import LabelSelector, Requirement
from topogen.operators.base import Inputs, Operator, PodSet, template_of
from topogen.operators.profile import Profile

__all__ = ["GROUP_INDEX", "NAME_LABEL", "WORKER_INDEX", "LeaderWorkerSet"]

_P = "leaderworkerset.sigs.k8s.io/"
NAME_LABEL = _P + "name"
GROUP_INDEX = _P + "group-index"
WORKER_INDEX = _P + "worker-index"
GROUP_KEY = _P + "group-key"
POD_NAME = "statefulset.kubernetes.io/pod-name"
POD_INDEX = "apps.kubernetes.io/pod-index"


def _count(value: Any, what: str, obj: KubeObject, minimum: int) -> int:
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(
            f"{obj.where()}: {what} must be an integer of at least {minimum}", path=obj.path
        )
    return value


class LeaderWorkerSet(Operator):
    name = "leaderworkerset"
    title = "LeaderWorkerSet"
    kinds = (("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),)
    job_label = NAME_LABEL
    role_label = WORKER_INDEX

    def pods(self, obj: KubeObject, inputs: Inputs) -> Iterator[PodSet]:
        spec = as_map(obj.body.get("spec"), "spec", obj)
        lwt = as_map(spec.get("leaderWorkerTemplate"), "spec.leaderWorkerTemplate", obj)
        replicas = _count(spec.get("replicas"), "spec.replicas", obj, 0)
        size = _count(lwt.get("size"), "spec.leaderWorkerTemplate.size", obj, 1)
        worker = lwt.get("workerTemplate")
        if worker is None:
            raise InputError(
                f"{obj.where()}: spec.leaderWorkerTemplate.workerTemplate is missing", path=obj.path
            )
        leader = lwt.get("leaderTemplate")
        lsite = (
            "spec",
            "leaderWorkerTemplate",
            "leaderTemplate" if leader is not None else "workerTemplate",
        )
        wsite = ("spec", "leaderWorkerTemplate", "workerTemplate")
        lt, wt = template_of(leader if leader is not None else worker), template_of(worker)
        ns = obj.namespace or "default"
        for g in range(replicas):
            name = f"{obj.name}-{g}"
            key = sha1_hex(f"{ns}/{name}".encode())
            group = {NAME_LABEL: obj.name, GROUP_INDEX: str(g), GROUP_KEY: key}
            labels = {
                **(lt["metadata"].get("labels") or {}),
                **group,
                WORKER_INDEX: "0",
                POD_NAME: name,
                POD_INDEX: str(g),
            }
            yield PodSet(
                f"leader-{g}",
                1,
                lt,
                "spec.leaderWorkerTemplate.leaderTemplate",
                labels,
                lsite,
                {_P + "size": str(size)},
            )
            labels = {
                **(wt["metadata"].get("labels") or {}),
                **group,
                WORKER_INDEX: "1",
                POD_NAME: f"{name}-1",
                POD_INDEX: "1",
            }
            yield PodSet(
                f"worker-{g}",
                size - 1,
                wt,
                "spec.leaderWorkerTemplate.workerTemplate",
                labels,
                wsite,
                {_P + "size": str(size), _P + "leader-name": name},
                (WORKER_INDEX, POD_NAME, POD_INDEX),
            )

    def profile(self, group: Any) -> Profile:
        job = group.group_label or self.job_label
        role = group.role_label or self.role_label
        leader = LabelSelector(((role, "0"),))
        # a worker gets worker-index from the LWS webhook, maybe after topogen's: NotIn
        # holds without it; group-index the controller stamps
        worker = LabelSelector(
            (), (Requirement(role, "NotIn", ("0",)), Requirement(GROUP_INDEX, "Exists"))
        )
        return Profile(
            self.name,
            job,
            role,
            (leader,),
            (worker,),
            scope=(GROUP_INDEX,),
            members=LabelSelector(),
        )
