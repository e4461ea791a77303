"""How Cilium turns a pod or a node into a security identity.

A pod (k8s.GetPodMetadata, then the label filter): its labels minus those Cilium
owns (io.cilium.k8s*), each label of its namespace under
io.cilium.k8s.namespace.labels. (kubernetes.io/metadata.name included: the API
server sets it on every Namespace), io.kubernetes.pod.namespace, its service account
(io.cilium.k8s.policy.serviceaccount, `default` when the pod names none, as the
ServiceAccount admission plugin does) and the cluster (io.cilium.k8s.policy.cluster);
then only what the agent's label filter keeps.

A node: on its own agent, the host endpoint (reserved:host plus the node labels the
same filter keeps); on every other node, a remote node (reserved:remote-node, plus
its labels, from source `node`, and cluster with enable-node-selector-labels).
"""

from __future__ import annotations

from collections.abc import Mapping

from topogen.cilium.labelfilter import label_filter
from topogen.model import CiliumSettings

__all__ = [
    "CILIUM_NS_LABEL_PREFIX",
    "CILIUM_OWNED_PREFIX",
    "CLUSTER_KEY",
    "HOST_LABEL",
    "NAMESPACE_KEY",
    "NODE_SOURCE_PREFIX",
    "NS_NAME_LABEL",
    "REMOTE_NODE_LABEL",
    "RESERVED_PREFIX",
    "SERVICE_ACCOUNT_KEY",
    "host_identity",
    "is_reserved",
    "normalise_key",
    "pod_identity",
    "pod_labels",
]

NAMESPACE_KEY = "io.kubernetes.pod.namespace"
CILIUM_NS_LABEL_PREFIX = "io.cilium.k8s.namespace.labels."
SERVICE_ACCOUNT_KEY = "io.cilium.k8s.policy.serviceaccount"
CLUSTER_KEY = "io.cilium.k8s.policy.cluster"
CILIUM_OWNED_PREFIX = "io.cilium.k8s"
NS_NAME_LABEL = "kubernetes.io/metadata.name"
RESERVED_PREFIX = "reserved:"
# a remote node's own labels come from source `node`: only a selector key without a
# source (or `any:`) reads them, so they are keyed `node:<key>` (selectors.node_peer)
NODE_SOURCE_PREFIX = "node:"
HOST_LABEL = "reserved:host"
REMOTE_NODE_LABEL = "reserved:remote-node"
DEFAULT_SERVICE_ACCOUNT = "default"
# selector key sources that match a pod's (k8s) labels like no source at all
_SAME_KEY_SOURCES = ("k8s:", "any:")


def normalise_key(key: str) -> str:
    """A selector key as it matches identity labels: `k8s:`/`any:` dropped, `$x` is
    `reserved:x`; other sources (`reserved:`, `container:` ...) are kept and match no
    pod label."""
    for prefix in _SAME_KEY_SOURCES:
        if key.startswith(prefix):
            return key[len(prefix) :]
    if key.startswith("$"):
        return RESERVED_PREFIX + key[1:]
    return key


def is_reserved(key: str) -> bool:
    return key.startswith(RESERVED_PREFIX)


def pod_labels(
    labels: Mapping[str, str],
    namespace: str,
    namespace_labels: Mapping[str, str],
    service_account: str = "",
) -> dict[str, str]:
    """Every label the agent derives for a pod, before the filter (SanitizePodLabels)."""
    out = {k: v for k, v in labels.items() if not k.startswith(CILIUM_OWNED_PREFIX)}
    ns_labels = {**namespace_labels, NS_NAME_LABEL: namespace}
    for k, v in ns_labels.items():
        out[CILIUM_NS_LABEL_PREFIX + k] = v
    out[NAMESPACE_KEY] = namespace
    out[SERVICE_ACCOUNT_KEY] = service_account or DEFAULT_SERVICE_ACCOUNT
    return out


def pod_identity(labels: Mapping[str, str], settings: CiliumSettings) -> dict[str, str]:
    """A pod's identity labels from pod_labels(): the cluster added, then filtered."""
    flt = label_filter(settings)
    out = {k: v for k, v in labels.items() if flt.keeps(k)}
    if flt.keeps(CLUSTER_KEY):
        out[CLUSTER_KEY] = settings.cluster_name
    return out


def host_identity(
    node_labels: Mapping[str, str], settings: CiliumSettings, *, local: bool
) -> dict[str, str]:
    """A node as the agent on it (local) or on another node sees it."""
    if local:
        flt = label_filter(settings)
        return {HOST_LABEL: "", **{k: v for k, v in node_labels.items() if flt.keeps(k)}}
    if not settings.node_selector_labels:
        return {REMOTE_NODE_LABEL: ""}
    labels = {NODE_SOURCE_PREFIX + k: v for k, v in node_labels.items()}
    return {REMOTE_NODE_LABEL: "", **labels, CLUSTER_KEY: settings.cluster_name}
