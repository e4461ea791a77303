"""Which namespace a namespaced object lands in when its file names none.

`kubectl apply` puts such an object in the current namespace of the kubeconfig
context, `default` unless set otherwise; Kubernetes' own defaulting does the same.
Every reader of namespaced objects (workloads, Services, CiliumNetworkPolicy,
NetworkPolicy) asks this one function. The default is read with the object
(KubeObject.default_namespace): topogen.yaml's `defaultNamespace`, or the commands'
`-n/--namespace`, as `kubectl apply -n` would.
"""

from __future__ import annotations

from topogen.manifest import KubeObject

__all__ = ["DEFAULT_NAMESPACE", "namespace_of"]

DEFAULT_NAMESPACE = "default"


def namespace_of(obj: KubeObject, default: str | None = None) -> str:
    """The namespace a namespaced object applies in: its own, else `default` (when given)
    or the default it was read with."""
    return obj.namespace or default or obj.default_namespace
