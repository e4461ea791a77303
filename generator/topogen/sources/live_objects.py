"""The live cluster's objects as topogen keeps them: the kinds it reads, and each object
reduced to what topogen reads (no managedFields, resourceVersion, uid, timestamps,
annotations or status beyond allocatable). sources/live.py reads them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from topogen.sources.cilium_config import CILIUM_CONFIG, CILIUM_KEYS
from topogen.sources.pools import CAPI_GROUP, CAPI_KINDS, reduced_pool_object

__all__ = [
    "AUTOSCALING",
    "CCNP",
    "CILIUM_CONFIG",
    "CILIUM_NAMESPACE",
    "CNP",
    "CONFIG_MAP",
    "NAMESPACE",
    "NETPOL",
    "NODE",
    "POD",
    "SNAPSHOT_KINDS",
    "ClusterObjects",
    "Kind",
    "PodRecord",
    "item_order",
    "kind_plural",
    "minimal",
    "pod_record",
]


@dataclass(frozen=True)
class Kind:
    kind: str
    api_version: str
    plural: str
    namespaced: bool

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]


NAMESPACE = Kind("Namespace", "v1", "namespaces", False)
NODE = Kind("Node", "v1", "nodes", False)
CCNP = Kind(
    "CiliumClusterwideNetworkPolicy", "cilium.io/v2", "ciliumclusterwidenetworkpolicies", False
)
CNP = Kind("CiliumNetworkPolicy", "cilium.io/v2", "ciliumnetworkpolicies", True)
NETPOL = Kind("NetworkPolicy", "networking.k8s.io/v1", "networkpolicies", True)
POD = Kind("Pod", "v1", "pods", True)
# what autoscalers can add (sources/pools.py); a cluster without their CRDs has none
AUTOSCALING = (
    Kind("NodePool", "karpenter.sh/v1", "nodepools", False),
    *(Kind(k, f"{CAPI_GROUP}/v1beta1", f"{k.lower()}s", True) for k in CAPI_KINDS),
)
# listed; also the order of a snapshot's items
SNAPSHOT_KINDS = (NAMESPACE, NODE, *AUTOSCALING, CCNP, CNP, NETPOL)
# the agent's settings: one ConfigMap, read (get) in Cilium's namespace, last in a snapshot
CONFIG_MAP = Kind("ConfigMap", "v1", "configmaps", True)
CILIUM_NAMESPACE = "kube-system"


@dataclass(frozen=True)
class ClusterObjects:
    """Nodes, Namespaces and policies as minimal Kubernetes objects, sorted."""

    items: tuple[Mapping[str, Any], ...]
    warnings: tuple[str, ...] = ()

    def count(self, kind: str) -> int:
        return sum(1 for i in self.items if i["kind"] == kind)


@dataclass(frozen=True)
class PodRecord:
    """A live Pod: its object (metadata and spec, as a workload reader takes it) and status."""

    body: Mapping[str, Any]
    node: str  # spec.nodeName, "" while not bound
    phase: str
    unschedulable: str  # the scheduler's message when PodScheduled=False/Unschedulable
    terminating: bool = False

    @property
    def namespace(self) -> str:
        return str(self.body["metadata"].get("namespace", ""))

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])


def kind_plural(kind: str) -> str:
    return {
        "CiliumNetworkPolicy": "namespaced policies",
        "CiliumClusterwideNetworkPolicy": "clusterwide policies",
    }.get(kind, kind)


# --- reducing objects ---------------------------------------------------------------------


def minimal(kind: Kind, body: Mapping[str, Any]) -> dict[str, Any]:
    """The object reduced to what topogen reads (and nothing that changes by itself)."""
    meta = body.get("metadata") or {}
    out_meta: dict[str, Any] = {"name": meta.get("name", "")}
    if kind.namespaced:
        out_meta["namespace"] = meta.get("namespace", "")
    if kind in (NODE, NAMESPACE) and meta.get("labels"):
        out_meta["labels"] = dict(meta["labels"])
    out: dict[str, Any] = {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": out_meta}
    if kind is NODE:
        spec = body.get("spec") or {}
        node_spec: dict[str, Any] = {}
        taints = [
            {k: t[k] for k in ("key", "value", "effect") if t.get(k)}
            for t in spec.get("taints") or ()
        ]
        if taints:
            node_spec["taints"] = taints
        if spec.get("unschedulable"):
            node_spec["unschedulable"] = True
        cidrs = spec.get("podCIDRs") or ([spec["podCIDR"]] if spec.get("podCIDR") else [])
        if cidrs:
            node_spec["podCIDRs"] = list(cidrs)
        if node_spec:
            out["spec"] = node_spec
        allocatable = (body.get("status") or {}).get("allocatable") or {}
        if allocatable:
            out["status"] = {"allocatable": {str(k): str(v) for k, v in allocatable.items()}}
    elif kind in AUTOSCALING:
        return reduced_pool_object(out, body)
    elif kind is CONFIG_MAP:  # cilium-config: the keys topogen reads, nothing else
        data = body.get("data") or {}
        out["data"] = {k: data[k] for k in sorted(CILIUM_KEYS) if k in data}
    elif kind is not NAMESPACE:
        for key in ("spec", "specs"):  # policies: the rules as written (Cilium: one or a list)
            if body.get(key) is not None:
                out[key] = body[key]
    return out


def pod_record(body: Mapping[str, Any], namespace: str) -> PodRecord:
    """A live Pod as the workload readers take it, plus where the scheduler put it."""
    meta = body.get("metadata") or {}
    spec = body.get("spec") or {}
    status = body.get("status") or {}
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace") or namespace,
            "labels": dict(meta.get("labels") or {}),
            "annotations": {
                k: v
                for k, v in (meta.get("annotations") or {}).items()
                if k.startswith("kueue.x-k8s.io/")  # the only annotations topogen reads
            },
        },
        "spec": dict(spec),
    }
    unschedulable = ""
    for cond in status.get("conditions") or ():
        if (
            cond.get("type") == "PodScheduled"
            and cond.get("status") == "False"
            and cond.get("reason") == "Unschedulable"
        ):
            unschedulable = _one_line(str(cond.get("message") or "unschedulable"))
    return PodRecord(
        body=obj,
        node=str(spec.get("nodeName") or ""),
        phase=str(status.get("phase") or "Pending"),
        unschedulable=unschedulable,
        terminating=bool(meta.get("deletionTimestamp")),
    )


def item_order(item: Mapping[str, Any]) -> tuple[int, str, str]:
    """Where an item goes in a snapshot: by kind, then namespace and name."""
    order = [k.kind for k in (*SNAPSHOT_KINDS, CONFIG_MAP)]
    meta = item["metadata"]
    return order.index(item["kind"]), meta.get("namespace", ""), meta["name"]


def _one_line(text: str) -> str:
    return " ".join(text.split())
