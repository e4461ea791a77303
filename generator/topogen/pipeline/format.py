"""Turn an AnalysisReport into the table and the stable JSON document of `topogen analyze`."""

from __future__ import annotations

from typing import Any

from topogen.jsontext import dumps_indented
from topogen.model import Finding, FindingKind
from topogen.pipeline.analyze import AnalysisReport
from topogen.plan.group_plan import GroupPlan
from topogen.textui import Column, fit_table

__all__ = ["analysis_json", "analysis_table", "count_lines", "finding_dict", "placement_lines"]


def finding_dict(f: Finding) -> dict[str, Any]:
    return {
        "cluster": f.cluster,
        "group": f.group,
        "job": f.job,
        "namespace": f.namespace,
        "kind": f.kind.value,
        "roles": list(f.roles),
        "zones": list(f.zones),
        "policies": list(f.policies),
        "message": f.message,
        "fix": f.fix,
    }


def _role_rows(report: AnalysisReport) -> list[dict[str, Any]]:
    rows = []
    for c in report.clusters:
        labels: dict[str, str | None] = {}
        for p in c.plans:  # the first plan of a group name, as a search in plan order finds
            labels.setdefault(p.group.name, p.group.identity_label)
        for ja in c.jobs:
            ident_label = labels.get(ja.job.config_group)
            for m in ja.members:
                kind, value = m.identity(ident_label)
                identity = {
                    "none": "-",
                    "stamped": f"{ident_label}=<zone>",
                    "static": f"{ident_label}={value}",
                }[kind]
                mine = [f for f in ja.findings if m.role in f.roles]
                worst = _worst(mine)
                rows.append(
                    {
                        "cluster": c.cluster,
                        "group": ja.job.config_group,
                        "job": f"{ja.job.namespace}/{ja.job.job}",
                        "role": m.role,
                        "workload": m.name,
                        "replicas": m.replicas,
                        "eligibleZones": list(m.placement.zones),
                        "identity": identity,
                        "verdict": worst.kind.value if worst else "OK",
                        "reason": worst.message if worst else "",
                    }
                )
    return rows


def _worst(findings: list[Finding]) -> Finding | None:
    rank = {
        "HARD_BLOCK": 0,
        "UNSCHEDULABLE": 1,
        "IDENTITY_MISMATCH": 2,
        "CROSS_ZONE": 3,
        "KUEUE_MANAGED": 4,
        "KUEUE_CONSTRAINED": 5,
        "OK": 6,
    }
    return min(findings, key=lambda f: rank[f.kind.value], default=None)


def analysis_json(report: AnalysisReport) -> str:
    doc = {
        "apiVersion": "topogen.io/v1alpha1",
        "kind": "AnalysisReport",
        "summary": {
            "problems": sum(1 for f in report.findings if f.kind.is_problem),
            "byKind": _count(report),
            "emptyGroups": len(report.empty_groups),
        },
        "emptyGroups": [
            {"cluster": e.cluster, "group": e.group, "selector": e.selector, "message": str(e)}
            for e in report.empty_groups
        ],
        "findings": [finding_dict(f) for f in report.findings],
        "roles": _role_rows(report),
        "plans": [
            {
                "cluster": p.cluster,
                "group": p.group.name,
                "domain": p.domain,
                "zones": list(p.zones),
                "refused": p.refused,
                "fix": p.describe_fix(),
                "jobs": list(p.jobs),
                "kueueJobs": list(p.kueue_jobs),
                "kueue": _kueue_plan(p),
                "placement": p.placement,
                "identitySource": p.identity_source,
                "domains": [name for name, _ in p.domains],
                "jobPlacements": p.job_placement(),
                "fallback": p.fallback,
                "fallbackDomains": list(p.fallback_domains),
                "fallbackZones": list(p.fallback_zones),
                "scaleUp": list(p.scale_up),
            }
            for p in report.plans
        ],
        "warnings": list(report.warnings),
        "notes": list(report.notes),
    }
    return dumps_indented(doc) + "\n"


def _kueue_plan(p: GroupPlan) -> dict[str, object] | None:
    """The group's Kueue job constraint (None: none)."""
    k = p.kueue
    if k is None:
        return None
    return {
        "zones": list(k.zones),
        "level": k.level,
        "zoneLabel": k.zone_label,
        "podsetGroupName": k.group_name,
        "queues": [f"{ns}/{name}" for ns, name in k.queues],
        "kinds": [f"{v} {kind}" for v, kind in k.kinds],
        "jobs": list(k.jobs),
        "fix": p.describe_kueue_fix(),
    }


def _count(report: AnalysisReport) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in report.findings:
        out[f.kind.value] = out.get(f.kind.value, 0) + 1
    return dict(sorted(out.items()))


_VERDICT_STYLE = {
    "HARD_BLOCK": "red",
    "UNSCHEDULABLE": "red",
    "IDENTITY_MISMATCH": "magenta",
    "CROSS_ZONE": "yellow",
    "OK": "green",
}


# the table's columns; at a narrow terminal REASON gives way first, then IDENTITY, then
# the zones, GROUP, CLUSTER and ROLE: the job and its verdict are always whole
_COLUMNS = (
    Column("CLUSTER", give_way=5),
    Column("GROUP", give_way=4),
    Column("JOB"),
    Column("ROLE", give_way=6),
    Column("ELIGIBLE ZONES", give_way=3),
    Column("IDENTITY", give_way=2, droppable=True),
    Column("VERDICT"),
    Column("REASON", give_way=1, droppable=True),
)
SEE_BELOW = "see below"  # a problem's reason, printed once in the block under the table
AS_ABOVE = "as above"  # a reason the row above printed


def _reasons(rows: list[dict[str, Any]]) -> list[str]:
    """Each reason printed once: a problem's below the table, any other in the first row
    of its job that has it."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for r in rows:
        if FindingKind(r["verdict"]).is_problem or not r["reason"]:
            out.append(SEE_BELOW if r["reason"] else "")
            continue
        key = (r["cluster"], r["job"], r["reason"])
        out.append(AS_ABOVE if key in seen else r["reason"])
        seen.add(key)
    return out


def analysis_table(report: AnalysisReport, width: int | None = None, colour: bool = False) -> str:
    """The table fitted to `width` (None: whole; see _COLUMNS), verdicts in colour, each
    problem once below it with its policies and fix."""
    rows = _role_rows(report)
    table = [
        [
            r["cluster"],
            r["group"],
            r["job"],
            r["role"],
            ",".join(r["eligibleZones"]) or "-",
            r["identity"],
            r["verdict"],
            reason,
        ]
        for r, reason in zip(rows, _reasons(rows), strict=True)
    ]
    plain: list[str | None] = [None] * 6
    styles = [[*plain, _VERDICT_STYLE.get(row[6], "bold"), None] for row in table]
    lines = fit_table(_COLUMNS, table, width, styles, colour)
    lines.append("")
    for f in report.findings:
        if not f.kind.is_problem:
            continue
        lines.append(f"{f.kind.value}  {f.cluster}/{f.group} job {f.namespace}/{f.job}")
        lines.append(f"  {f.message}")
        if f.policies:
            lines.append(f"  policies: {', '.join(f.policies)}")
        if f.fix:
            lines.append(f"  fix: {f.fix}")
    lines += placement_lines(report)
    lines += [f"note: {n}" for n in report.notes]
    problems = sum(1 for f in report.findings if f.kind.is_problem)
    jobs = len({(f.cluster, f.namespace, f.job) for f in report.findings})
    empty = report.empty_groups
    lines.append(
        f"{problems} problem(s) in {jobs} job(s)"
        + (
            f"; {len(empty)} group(s) match no workload: {', '.join(e.group for e in empty)}"
            if empty
            else ""
        )
    )
    return "\n".join(lines) + "\n"


def placement_lines(report: AnalysisReport) -> list[str]:
    """Per job of a spread group over several domains: its domain and why; then the rule
    for jobs the render did not see."""
    lines = []
    for p in report.plans:
        if not p.spread or len(p.domains) < 2 or p.refused:
            continue
        lines.append(
            f"SPREAD  {p.cluster}/{p.group.name} over {', '.join(n for n, _ in p.domains)}"
        )
        lines += [f"  {j.job} -> {j.domain}: {j.reason}" for j in p.job_domains]
        lines.append(f"  {p.fallback}")
    return lines


def count_lines(report: AnalysisReport) -> list[str]:
    """What was read and found, in numbers (`analyze -v`)."""
    read = report.read
    lines = [
        f"workload inputs: objects {len(read.objects)}, pod templates {len(read.workloads)}, "
        f"skipped {len(report.skipped)}"
    ]
    for c in report.clusters:
        topo, policies = c.inputs.topology, c.inputs.policies
        jobs: dict[str, int] = {p.group.name: 0 for p in c.plans}
        for ja in c.jobs:
            jobs[ja.job.config_group] = jobs.get(ja.job.config_group, 0) + 1
        lines.append(
            f"cluster {c.cluster}: nodes {len(topo.nodes)}, zones {len(topo.zones)}, network "
            f"policies {len(policies.policies)}, namespaces {len(c.inputs.namespaces)}; jobs "
            "per group: " + ", ".join(f"{g} {n}" for g, n in jobs.items())
        )
    return lines
