"""Audit live training groups: placement, connectivity, GPU use and Pending pods.

core: pure audit over model objects; live: read a live cluster (via
sources.live) and audit it; format: table and JSON.
"""

from topogen.audit.core import AuditReport, Flag, GroupAudit, PodRow, audit
from topogen.audit.format import audit_json, audit_table
from topogen.audit.live import audit_live

__all__ = [
    "AuditReport",
    "Flag",
    "GroupAudit",
    "PodRow",
    "audit",
    "audit_json",
    "audit_live",
    "audit_table",
]
