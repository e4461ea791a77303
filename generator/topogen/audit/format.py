"""An AuditReport as the table and the stable JSON document of `topogen audit`."""

from __future__ import annotations

import json
from typing import Any

from topogen.audit.core import AuditReport, GroupAudit, PodRow
from topogen.model import quantity as _gpus
from topogen.textui import fit_row

__all__ = ["audit_json", "audit_table"]


def _util(row: PodRow, measured: bool) -> str:
    if row.gpus <= 0 or not measured:
        return "-"
    return "no data" if row.gpu_utilisation is None else f"{row.gpu_utilisation:.0f}%"


def _row_dict(r: PodRow) -> dict[str, Any]:
    return {
        "pod": r.pod,
        "role": r.role,
        "node": r.node or None,
        "zone": r.zone or None,
        "phase": r.phase,
        "identity": r.identity or None,
        "gpus": _gpus(r.gpus),
        "gpuUtilisation": r.gpu_utilisation,
        "peers": r.peers,
        "deniedPeers": list(r.denied_peers),
        "verdict": r.verdict,
    }


def _group_dict(g: GroupAudit) -> dict[str, Any]:
    return {
        "group": g.group,
        "namespace": g.namespace,
        "job": g.job,
        "status": "broken" if g.broken else "healthy",
        "zones": list(g.zones),
        "flags": [{"kind": f.kind, "message": f.message} for f in g.flags],
        "pods": [_row_dict(r) for r in g.rows],
    }


def audit_json(report: AuditReport) -> str:
    doc = {
        "apiVersion": "topogen.io/v1alpha1",
        "kind": "AuditReport",
        "cluster": report.cluster,
        "summary": {"groups": len(report.groups), "broken": len(report.broken)},
        "groups": [_group_dict(g) for g in report.groups],
        "warnings": list(report.warnings),
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def audit_table(report: AuditReport, width: int | None = None) -> str:
    """The table, its last column cut to `width` (None: whole)."""
    header = ["JOB", "POD", "ROLE", "NODE", "ZONE", "PHASE", "GPU UTIL", "PEERS"]
    table = [
        [
            f"{g.group} {g.namespace}/{g.job}",
            r.pod,
            r.role,
            r.node or "-",
            r.zone or "-",
            r.phase,
            _util(r, report.gpu_measured),
            r.verdict,
        ]
        for g in report.groups
        for r in g.rows
    ]
    widths = [max([len(h), *(len(row[i]) for row in table)]) for i, h in enumerate(header)]
    lines = []
    for row in [header, *table]:
        lines.append(fit_row(row, widths, width))
    lines.append("")
    for g in report.groups:
        running = sum(1 for r in g.rows if r.phase == "Running")
        state = "BROKEN " if g.broken else "HEALTHY"
        zones = ", ".join(g.zones) or "no zone"
        lines.append(
            f"{state} {g.group} job {g.namespace}/{g.job}: {len(g.rows)} pods, "
            f"{running} Running, in {zones}"
        )
        lines.extend(f"  {f.kind}: {f.message}" for f in g.flags)
    lines.append(f"{len(report.broken)} of {len(report.groups)} group job(s) broken")
    return "\n".join(lines) + "\n"
