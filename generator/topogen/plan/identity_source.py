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
Kept by Cilium: the agent's label filter (topogen.cilium.labelfilter, checked against
Cilium's pkg/labelsfilter by tests/cilium) drops topology.kubernetes.io/* by default, so a
zone stamped at binding is part of a pod's identity only when the agent's `labels` option
(clusters[].cilium.identityLabels) keeps it.
"""

from __future__ import annotations

from topogen.cilium.labelfilter import LabelFilter

__all__ = ["STAMPED_AT_BINDING", "identity_source"]

STAMPED_AT_BINDING = ("topology.kubernetes.io/region", "topology.kubernetes.io/zone")


def identity_source(
    identity_label: str | None,
    *,
    set_in_template: bool,
    host_network: bool,
    label_filter: LabelFilter | None = None,
) -> str:
    """ "none" (the zone does not change the identity), "placement" (stamped at binding and
    kept) or "static" (the admission policy must name the zone)."""
    if not identity_label:
        return "none"
    if set_in_template:
        return "static"
    kept = (label_filter or LabelFilter()).keeps(identity_label)
    if host_network or (identity_label in STAMPED_AT_BINDING and kept):
        return "placement"
    return "static"
