"""JSON for machines: everything, values in full, keys sorted."""

from __future__ import annotations

import json
from typing import Any

from topogen.diff.changes import (
    ClusterReview,
    DiffReport,
    FieldChange,
    FindingChange,
    ObjectChange,
    PlanChange,
)
from topogen.diff.first_screen import unfixed, verdict, verdict_of
from topogen.diff.present import finding_label, meaning

__all__ = ["report_dict", "to_json"]


def to_json(report: DiffReport) -> str:
    return json.dumps(report_dict(report), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def report_dict(report: DiffReport) -> dict[str, Any]:
    analysis = None
    if report.analysis is not None:
        analysis = {
            "findings": [_finding(f) for f in report.analysis.findings],
            "plans": [_plan(p) for p in report.analysis.plans],
        }
    return {
        "apiVersion": "topogen.io/v1alpha1",
        "kind": "DiffReport",
        "old": {"source": report.old_label, "what": report.old_what},
        "new": {"source": report.new_label, "what": report.new_what},
        "empty": report.empty,
        "summary": {
            "objects": {s: report.count(s) for s in ("added", "removed", "changed")},
            "findings": None
            if report.analysis is None
            else {
                s: sum(1 for f in report.analysis.findings if f.status == s)
                for s in ("appears", "disappears", "changes")
            },
            # a group's verdict new or worse than on the old side
            "newProblems": None
            if report.analysis is None
            else sum(1 for f in report.analysis.findings if f.new_problem),
            # what a CI gate counts: problems this change brings or changes that the new
            # side renders no fix for (UNSCHEDULABLE, a group refused or not planned)
            "unfixedProblems": None
            if report.analysis is None
            else sum(1 for f in report.analysis.findings if unfixed(f)),
            "refused": len(report.refused),
            "repins": sum(r.count("moved") for r in report.reviews),
        },
        "verdict": verdict(report),
        "clusters": [_review(r) for r in report.reviews],
        "refused": list(report.refused),
        "analysis": analysis,
        "objects": [_object(o) for o in report.objects],
        "warnings": list(report.warnings),
    }


def _review(r: ClusterReview) -> dict[str, Any]:
    return {
        "cluster": r.cluster,
        "verdict": verdict_of(r),
        "engines": {"old": list(r.engines[0]), "new": list(r.engines[1])},
        "validationAction": {"old": r.actions[0] or None, "new": r.actions[1] or None},
        "failurePolicies": {"old": dict(r.failure_policies[0]), "new": dict(r.failure_policies[1])},
        "placements": [
            {
                "group": p.group,
                "job": p.job,
                "gpus": p.gpus,
                "old": p.before or None,
                "new": p.after or None,
                "change": p.status,
                "reason": p.reason or None,
                "queued": p.queued,
            }
            for p in r.rows
        ],
        "freeGpus": [{"domain": d, "old": b or None, "new": a or None} for d, b, a in r.free],
        "mutation": r.mutation,
        "validation": r.validation,
        "risks": list(r.risks),
        "refused": list(r.refused),
        "renderWarnings": list(r.warnings),
    }


def _finding(f: FindingChange) -> dict[str, Any]:
    return {
        "status": f.status,
        "label": finding_label(f),
        "kind": f.kind,
        "problem": f.problem,
        "cluster": f.cluster,
        "group": f.group,
        "namespace": f.namespace,
        "job": f.job,
        "headline": f.headline,
        "message": f.message,
        "oldMessage": f.old_message or None,
        "fix": f.fix or None,
        "newProblem": f.new_problem,
        "fixed": f.fixed,
    }


def _plan(p: PlanChange) -> dict[str, Any]:
    return {
        "cluster": p.cluster,
        "group": p.group,
        "headline": p.headline,
        "old": p.old,
        "new": p.new,
    }


def _object(o: ObjectChange) -> dict[str, Any]:
    k = o.key
    return {
        "status": o.status,
        "apiVersion": k.api_version or None,
        "kind": k.kind or None,
        "namespace": k.namespace or None,
        "name": k.name or None,
        "file": k.file or None,
        "location": k.location,
        "oldPath": o.old_path,
        "newPath": o.new_path,
        "subject": o.subject,
        "notes": list(o.notes),
        "summary": meaning(o),
        "changes": [_field(c) for c in o.fields],
    }


def _field(c: FieldChange) -> dict[str, Any]:
    out: dict[str, Any] = {"path": c.path, "op": c.op}
    if c.op in ("changed", "removed"):
        out["old"] = c.old
    if c.op in ("changed", "added"):
        out["new"] = c.new
    return out
