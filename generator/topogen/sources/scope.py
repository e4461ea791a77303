"""Which namespace a namespaced object lands in when its file names none.

`kubectl apply` puts such an object in the current namespace of the kubeconfig
context, `default` unless set otherwise; Kubernetes' own defaulting does the same.
Every reader of namespaced objects (workloads, Services, CiliumNetworkPolicy,
NetworkPolicy) asks this one function, so a `--namespace` option or a config key
can later change it in one place.
"""

from __future__ import annotations

from topogen.manifest import KubeObject

__all__ = ["DEFAULT_NAMESPACE", "namespace_of"]

DEFAULT_NAMESPACE = "default"


def namespace_of(obj: KubeObject, default: str = DEFAULT_NAMESPACE) -> str:
    """The namespace a namespaced object applies in: its own, else `default`."""
    return obj.namespace or default
