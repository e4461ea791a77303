"""Does a training pod's network identity follow where it lands? One function decides.

The spread plan lets a coordinator land in any allowed domain, its workers following, only
where that cannot leave the pods with an identity the policies judge by another zone:
- no identity label: the pods' labels are the same in every zone (traffic does not
  depend on the zone), or the pods run on the host network (the node is the identity);
- an identity label stamped from the node at binding and kept by Cilium's label filter.
Anything else (a label in the template, or one nothing stamps or Cilium drops) is a
static identity: the admission policy sets it to the zone the job is assigned to.

Stamped at binding: the PodTopologyLabels admission plugin (beta and on by default since
Kubernetes 1.35) copies exactly topology.kubernetes.io/zone and topology.kubernetes.io/region
from the node (kubernetes v1.36.3 plugin/pkg/admission/podtopologylabels defaultConfig).
Kept by Cilium: the agent's default label filter (cilium v1.20 pkg/labelsfilter
defaultLabelPrefixCfg) drops keys starting with these prefixes (anchored at the key's
start), so topology.kubernetes.io/zone is not part of a pod's identity unless the agent is
configured to keep it (`kept`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["STAMPED_AT_BINDING", "cilium_keeps", "identity_source"]

STAMPED_AT_BINDING = ("topology.kubernetes.io/region", "topology.kubernetes.io/zone")
_INCLUDED = re.compile(r"^(io\.kubernetes\.pod\.namespace|io\.cilium\.k8s\.namespace\.labels|"
                       r"app\.kubernetes\.io|io\.cilium\.k8s\.policy)")  # fmt: skip
_DROPPED = re.compile(
    r"^(io\.kubernetes|kubernetes\.io|statefulset\.kubernetes\.io/pod-name|"
    r"apps\.kubernetes\.io/pod-index|batch\.kubernetes\.io/job-completion-index|"
    r"batch\.kubernetes\.io/controller-uid|.*beta\.kubernetes\.io|k8s\.io|"
    r"pod-template-generation|pod-template-hash|controller-revision-hash|controller-uid|"
    r"annotation.*|etcd_node|topology\.kubernetes\.io)"
)


def cilium_keeps(key: str, kept: Iterable[str] = ()) -> bool:
    """Is this pod label part of the Cilium identity (the default filter, plus `kept`)?"""
    key = key.removeprefix("k8s:")
    if any(key.startswith(k.removeprefix("k8s:")) for k in kept):
        return True
    return bool(_INCLUDED.match(key)) or not _DROPPED.match(key)


def identity_source(
    identity_label: str | None,
    *,
    set_in_template: bool,
    host_network: bool,
    kept: Iterable[str] = (),
) -> str:
    """ "none" (the zone does not change the identity), "placement" (stamped at binding and
    kept) or "static" (the admission policy must name the zone)."""
    if not identity_label:
        return "none"
    if set_in_template:
        return "static"
    if host_network or (
        identity_label in STAMPED_AT_BINDING and cilium_keeps(identity_label, kept)
    ):
        return "placement"
    return "static"
