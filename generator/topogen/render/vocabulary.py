"""The labels, annotations and field paths topogen writes, named once: the engines write
them (render/), the output tree and the refusals read them back (emit/), and
`topogen diff` compares by them (diff/).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AUDIT_POINTS",
    "CLUSTER_LABEL",
    "DENIED_ZONE_PAIRS",
    "DESCRIPTION",
    "GROUP_LABEL",
    "IDENTITY",
    "MANAGED_BY",
    "NODE_AFFINITY",
    "POD_AFFINITY",
    "POD_ANTI_AFFINITY",
    "REQUIRED",
    "ROLE_LABEL",
    "TOLERATIONS",
    "ZONES",
    "enforcement",
    "required_field",
    "required_pointer",
]

# labels of every object topogen renders
MANAGED_BY = ("app.kubernetes.io/managed-by", "topogen")
GROUP_LABEL = "topogen.io/group"
ROLE_LABEL = "topogen.io/role"
CLUSTER_LABEL = "topogen.io/cluster"  # set by each cluster's overlay (render/kustomize.py)

# annotations: the intent, machine-readable (render/intent.py writes, diff/meaning.py reads)
ZONES = "topogen.io/zones"
TOLERATIONS = "topogen.io/tolerations"
IDENTITY = "topogen.io/identity"
DENIED_ZONE_PAIRS = "topogen.io/denied-zone-pairs"
DESCRIPTION = "topogen.io/description"

# the pod's required affinity fields the engines patch and check
NODE_AFFINITY, POD_AFFINITY, POD_ANTI_AFFINITY = "nodeAffinity", "podAffinity", "podAntiAffinity"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def required_field(kind: str, spec: str = "spec") -> str:
    """`<spec>.affinity.<kind>.requiredDuringSchedulingIgnoredDuringExecution` (a field path;
    `spec` as the engine reaches the pod's: object.spec in CEL)."""
    return f"{spec}.affinity.{kind}.{REQUIRED}"


def required_pointer(kind: str) -> str:
    """The same field as a JSON pointer (JSONPatch paths)."""
    return f"/spec/affinity/{kind}/{REQUIRED}"


# Gatekeeper's enforcement points (pkg/util/enforcement_action.go) a Constraint under Audit
# is scoped to when it stays off the admission path (gatekeeper.auditAtAdmission false)
AUDIT_POINTS = ("audit.gatekeeper.sh", "gator.gatekeeper.sh")


def enforcement(
    validation_action: str, at_admission: bool
) -> tuple[str, list[dict[str, Any]] | None]:
    """A Constraint's enforcementAction, and its scopedEnforcementActions when scoped:
    Enforce denies; Audit is dryrun, on the webhook too only with auditAtAdmission (the
    webhook otherwise skips the Constraint before decoding the pod; audit and gator
    report its violations as with dryrun)."""
    if validation_action == "Enforce":
        return "deny", None
    if at_admission:
        return "dryrun", None
    return "scoped", [
        {"action": "dryrun", "enforcementPoints": [{"name": p} for p in AUDIT_POINTS]}
    ]
