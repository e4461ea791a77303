"""Kueue's queueing objects (kueue.x-k8s.io v1beta1/v1beta2, as Kueue v0.17.0 reads them),
reduced to what decides where a queued job's pods go, and the way from a job's queue to
its ResourceFlavor and Topology."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from topogen.kueue.vocabulary import DEFAULT_LOCAL_QUEUE
from topogen.model import Toleration

__all__ = [
    "ClusterQueue",
    "KueueSetup",
    "KueueTopology",
    "LocalQueue",
    "QueueRoute",
    "ResourceFlavor",
]


@dataclass(frozen=True)
class KueueTopology:
    name: str
    levels: tuple[str, ...]  # node labels, the widest first (spec.levels[].nodeLabel)


@dataclass(frozen=True)
class ResourceFlavor:
    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)  # Kueue adds them as nodeSelector
    tolerations: tuple[Toleration, ...] = ()  # Kueue adds them to the pods it admits
    topology: str = ""  # spec.topologyName: placed by TAS when set


@dataclass(frozen=True)
class ClusterQueue:
    name: str
    flavors: tuple[str, ...]  # every resource group's flavors, in the order Kueue tries them


@dataclass(frozen=True)
class LocalQueue:
    namespace: str
    name: str
    cluster_queue: str


@dataclass(frozen=True)
class QueueRoute:
    """Where a queued job goes: its LocalQueue, ClusterQueue, the flavor Kueue tries first
    and that flavor's Topology (TAS); `missing` names what is not there (Kueue admits the
    job nowhere then)."""

    local_queue: LocalQueue | None
    cluster_queue: ClusterQueue | None = None
    flavor: ResourceFlavor | None = None
    topology: KueueTopology | None = None
    missing: str = ""
    queue: str = ""  # namespace/name of the LocalQueue the job asks for

    @property
    def tas(self) -> bool:
        """Placed by Topology Aware Scheduling: its flavor names a Topology."""
        return self.flavor is not None and bool(self.flavor.topology)

    @property
    def name(self) -> str:
        return self.queue


@dataclass(frozen=True)
class KueueSetup:
    """A cluster's Kueue objects (empty: the cluster runs no Kueue topogen knows of)."""

    topologies: Mapping[str, KueueTopology] = field(default_factory=dict)
    flavors: Mapping[str, ResourceFlavor] = field(default_factory=dict)
    cluster_queues: Mapping[str, ClusterQueue] = field(default_factory=dict)
    local_queues: Mapping[tuple[str, str], LocalQueue] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.topologies or self.flavors or self.cluster_queues or self.local_queues)

    def queue_of(self, namespace: str, queue: str) -> str:
        """The queue a job of `namespace` labelled `queue` ("": none) is queued to: the
        label, else `default` where the namespace has a LocalQueue of that name (Kueue's
        webhook adds the label then); "" for none."""
        if queue:
            return queue
        return DEFAULT_LOCAL_QUEUE if (namespace, DEFAULT_LOCAL_QUEUE) in self.local_queues else ""

    def route(self, namespace: str, queue: str) -> QueueRoute | None:
        """Where a job of `namespace` asking for `queue` goes; None when it is not queued."""
        name = self.queue_of(namespace, queue)
        if not name:
            return None
        at = f"{namespace}/{name}"
        lq = self.local_queues.get((namespace, name))
        if lq is None:
            return QueueRoute(None, missing=f"LocalQueue {at}", queue=at)
        cq = self.cluster_queues.get(lq.cluster_queue)
        if cq is None:
            return QueueRoute(lq, missing=f"ClusterQueue {lq.cluster_queue}", queue=at)
        if not cq.flavors:
            return QueueRoute(lq, cq, missing=f"a ResourceFlavor of {cq.name}", queue=at)
        flavor = self.flavors.get(cq.flavors[0])
        if flavor is None:
            return QueueRoute(lq, cq, missing=f"ResourceFlavor {cq.flavors[0]}", queue=at)
        if not flavor.topology:
            return QueueRoute(lq, cq, flavor, queue=at)
        topology = self.topologies.get(flavor.topology)
        missing = "" if topology else f"Topology {flavor.topology}"
        return QueueRoute(lq, cq, flavor, topology, missing, queue=at)
