"""The keys Kueue v0.17.0 reads and writes on jobs and pods (apis/kueue/v1beta2,
pkg/controller/constants)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from topogen.model import KUEUE_TAS_ANNOTATIONS, KUEUE_TAS_GATE, KUEUE_TAS_LABEL

__all__ = [
    "DEFAULT_LOCAL_QUEUE",
    "GROUP_NAME",
    "HOSTNAME",
    "LEGACY_TAS_LABEL",
    "LOCAL_QUEUE_LABEL",
    "PREFERRED_TOPOLOGY",
    "QUEUE_LABEL",
    "REQUIRED_TOPOLOGY",
    "SLICE_REQUIRED_TOPOLOGY",
    "TAS_ANNOTATIONS",
    "TAS_GATE",
    "UNCONSTRAINED_TOPOLOGY",
    "is_tas_pod",
]

# a job is queued by this label (jobframework.QueueNameForObject: the label only); Kueue's
# webhook adds `default` when the namespace has a LocalQueue of that name
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
DEFAULT_LOCAL_QUEUE = "default"
# the scheduling gate every pod Kueue places by Topology Aware Scheduling carries at
# creation, until the ungater writes the chosen domain into its nodeSelector; a PodSet's
# topology request, on its pod template (and so on its pods); the label before v0.14
TAS_GATE = KUEUE_TAS_GATE
REQUIRED_TOPOLOGY, PREFERRED_TOPOLOGY, UNCONSTRAINED_TOPOLOGY, SLICE_REQUIRED_TOPOLOGY = (
    KUEUE_TAS_ANNOTATIONS
)
TAS_ANNOTATIONS = KUEUE_TAS_ANNOTATIONS
LEGACY_TAS_LABEL = KUEUE_TAS_LABEL
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
# two PodSets (a leader of one pod and its workers) placed together, with the workers'
# constraints only (kueue issue 15373)
GROUP_NAME = "kueue.x-k8s.io/podset-group-name"
# the LocalQueue of an admitted job's pods (feature AssignQueueLabelsForPods, beta, on)
LOCAL_QUEUE_LABEL = "kueue.x-k8s.io/local-queue-name"
# TAS honours a template's nodeSelector and required node affinity only when this is the
# Topology's lowest level (pkg/cache/scheduler/tas_flavor_snapshot.go isLowestLevelNode)
HOSTNAME = "kubernetes.io/hostname"


def is_tas_pod(
    labels: Mapping[str, str], annotations: Mapping[str, str], gates: Iterable[str]
) -> bool:
    """Is the pod placed by Kueue's TAS: the scheduling gate, a topology annotation, or
    the label of Kueue before v0.14."""
    return (
        TAS_GATE in gates
        or LEGACY_TAS_LABEL in labels
        or any(k in annotations for k in TAS_ANNOTATIONS)
    )
