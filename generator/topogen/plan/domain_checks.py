"""A job's domain checks as the planner reads them: by domain name, why one no longer
holds the job, and how the packing names a domain."""

from __future__ import annotations

from topogen.analysis.domains import DomainCheck
from topogen.analysis.findings import JobAnalysis

__all__ = ["SPLIT", "STAYS", "by_name", "domain_index", "domain_unit", "why_not"]


# where the pods of a running job are is where its replaced pods must go
STAYS = "its pods run there (pinning it to {} would split it from the pods that stay)"
SPLIT = "; pods created from now on go to the new domain while the others stay (a split)"


def why_not(job: JobAnalysis, name: str) -> str:
    """Why a job can no longer go to domain `name` ("" when it can)."""
    check = domain_index(job).get(name)
    if check is None:
        return f"{name} is no longer a domain of the cluster"
    if not check.traffic_ok:
        return f"{name} no longer allows its traffic: " + (check.problems or ("denied",))[0]
    if not check.capacity_ok:
        return f"{name} can no longer hold it: " + (check.problems or ("too few GPUs",))[0]
    return ""


def domain_unit(key: str, domain: str) -> str:
    """A domain as the packing names it: the co-location key and the domain's name."""
    return f"{key}\0{domain}"


def by_name(job: JobAnalysis, name: str) -> DomainCheck:
    return next(d for d in job.domains if d.name == name)


def domain_index(job: JobAnalysis) -> dict[str, DomainCheck]:
    """name -> the job's check of that domain (the first, as by_name finds it)."""
    out: dict[str, DomainCheck] = {}
    for d in job.domains:
        out.setdefault(d.name, d)
    return out
