"""How Cilium names a pod's security identity: label keys, the namespace, reserved labels."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "CILIUM_NS_LABEL_PREFIX",
    "NAMESPACE_KEY",
    "REMOTE_NODE_LABEL",
    "RESERVED_PREFIX",
    "is_reserved",
    "normalise_key",
    "pod_identity_labels",
]

# the pod's namespace, as an identity label
NAMESPACE_KEY = "io.kubernetes.pod.namespace"
# each label of the pod's namespace, as an identity label under this prefix
CILIUM_NS_LABEL_PREFIX = "io.cilium.k8s.namespace.labels."
# reserved identities (reserved:host, reserved:remote-node, ...) select no pod
RESERVED_PREFIX = "reserved:"
REMOTE_NODE_LABEL = "reserved:remote-node"
# label sources that name the same key as no source at all
_SAME_KEY_SOURCES = ("k8s:", "any:")


def normalise_key(key: str) -> str:
    """A selector key without its `k8s:`/`any:` source (`reserved:` is kept: it selects
    reserved identities)."""
    for prefix in _SAME_KEY_SOURCES:
        if key.startswith(prefix):
            return key[len(prefix) :]
    return key


def is_reserved(key: str) -> bool:
    return key.startswith(RESERVED_PREFIX)


def pod_identity_labels(
    labels: Mapping[str, str], namespace: str, namespace_labels: Mapping[str, str]
) -> dict[str, str]:
    """A pod's identity labels: its own, its namespace and its namespace's labels."""
    identity = dict(labels)
    identity[NAMESPACE_KEY] = namespace
    for k, v in namespace_labels.items():
        identity[CILIUM_NS_LABEL_PREFIX + k] = v
    return identity
