"""CEL for the spread plan's per-job rules: each known job's zones, each queued job's
exclusions, looked up by the pod's namespace and job label (render/cel.py has the rest).
"""

from __future__ import annotations

from topogen.render.cel import NAMESPACE, affinity_field_patch, lit, zone_requirement
from topogen.render.intent import AdmissionIntent, anti_affinity_term
from topogen.render.vocabulary import POD_ANTI_AFFINITY, REQUIRED, required_field, required_pointer

__all__ = [
    "job_exclude_table",
    "job_zone_table",
    "job_zones",
    "missing_exclusions",
    "mutation_anti_affinity_patch",
    "mutation_variables",
]

ANTI_REQ = required_field(POD_ANTI_AFFINITY, "object.spec")
ANTI_REQ_PATH = required_pointer(POD_ANTI_AFFINITY)


def job_zone_table(intent: AdmissionIntent) -> str:
    """Spread: namespace/job -> zones of every known job."""
    return lit({f"{ns}/{job}": list(zones) for (ns, job), zones in intent.job_zones})


def job_zones(intent: AdmissionIntent) -> str:
    """Spread: the zones of the pod's job (looked up in jobZoneTable), else the fallback."""
    key = f"{NAMESPACE} + '/' + object.metadata.labels[{lit(intent.job_label)}]"
    table = "variables.jobZoneTable"
    return f"dyn({key} in {table} ? {table}[{key}] : {lit(list(intent.fallback_zones))})"


def job_exclude_table(intent: AdmissionIntent) -> str:
    """Spread: namespace/job -> the anti-affinity terms of every queued job."""
    return lit(
        {
            f"{ns}/{job}": [anti_affinity_term(intent, e) for e in excludes]
            for (ns, job), excludes in intent.job_excludes
        }
    )


def missing_exclusions() -> str:
    """The pod's job's anti-affinity terms that no existing term already says
    (reference.same_exclusion)."""
    e = "e.labelSelector.matchExpressions"
    w = "w.labelSelector.matchExpressions[0]"
    same = (
        f"e.topologyKey == w.topologyKey && has(e.namespaces) && e.namespaces == w.namespaces "
        f"&& has(e.labelSelector) && has({e}) && size({e}) == 1 && {e}[0].key == {w}.key && "
        f"{e}[0].operator == {w}.operator && has({e}[0].values) && {e}[0].values == {w}.values"
    )
    return (
        f"variables.jobExcludes.filter(w, !(has(object.spec.affinity) && "
        f"has(object.spec.affinity.podAntiAffinity) && has({ANTI_REQ}) && "
        f"{ANTI_REQ}.exists(e, {same})))"
    )


def mutation_variables(intent: AdmissionIntent) -> list[dict[str, str]]:
    """jobZoneTable and jobZones (spread, per job), then zoneRequirement; where some job
    is queued, jobExcludeTable, jobExcludes and missingExclusions."""
    out = []
    if intent.per_job:
        out.append({"name": "jobZoneTable", "expression": job_zone_table(intent)})
        out.append({"name": "jobZones", "expression": job_zones(intent)})
    out.append({"name": "zoneRequirement", "expression": zone_requirement(intent)})
    if intent.job_excludes:
        key = f"{NAMESPACE} + '/' + object.metadata.labels[{lit(intent.job_label)}]"
        table = "variables.jobExcludeTable"
        out += [
            {"name": "jobExcludeTable", "expression": job_exclude_table(intent)},
            {"name": "jobExcludes", "expression": f"dyn({key} in {table} ? {table}[{key}] : [])"},
            {"name": "missingExclusions", "expression": missing_exclusions()},
        ]
    return out


def mutation_anti_affinity_patch(ensured: bool = False) -> str:
    """Add the missing anti-affinity terms (variables.missingExclusions, named once: the
    native policies inline variables, and the table is the largest of them)."""
    return (
        "[variables.missingExclusions].map(m, size(m) == 0 ? [] : "
        + affinity_field_patch(POD_ANTI_AFFINITY, f"{{'{REQUIRED}': m}}", ensured)
        + f"!has({ANTI_REQ}) ? [JSONPatch{{op: 'add', path: '{ANTI_REQ_PATH}', value: m}}] : "
        f"m.map(t, JSONPatch{{op: 'add', path: '{ANTI_REQ_PATH}/-', value: t}}))[0]"
    )
