"""Analysis: pure functions over the model (placement, reachability, findings, domains).

Placement: nodeindex (node classes, the run's placement caches), fit (does a node take a
template), placement, packing. Reachability: reachability (PolicyIndex, verdicts),
selection (its indexes). Paths of a job: families (identity families, matrices, Engine),
zonepaths (JobPaths), links (pod affinity), paths, bits. Per job and group: members,
groups, findings, domains (cannotrun: a domain's problems, texts made when read); cluster
(ClusterIndex: what a cluster's groups share), context.

The names below are imported from their modules on first use, so a command that needs
only reachability (connectivity, explain) does not import placement, findings and the
config model behind them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from topogen.analysis.cluster import ClusterIndex
    from topogen.analysis.context import AnalysisContext, required_ports
    from topogen.analysis.domains import DomainCheck
    from topogen.analysis.findings import JobAnalysis, analyze_job
    from topogen.analysis.groups import find_groups
    from topogen.analysis.paths import BlockedPath
    from topogen.analysis.ports import PortSet
    from topogen.analysis.reachability import PathVerdict, PolicyIndex

_HOME = {
    "AnalysisContext": "context",
    "BlockedPath": "paths",
    "ClusterIndex": "cluster",
    "DomainCheck": "domains",
    "JobAnalysis": "findings",
    "PathVerdict": "reachability",
    "PolicyIndex": "reachability",
    "PortSet": "ports",
    "analyze_job": "findings",
    "find_groups": "groups",
    "required_ports": "context",
}

__all__ = [
    "AnalysisContext",
    "BlockedPath",
    "ClusterIndex",
    "DomainCheck",
    "JobAnalysis",
    "PathVerdict",
    "PolicyIndex",
    "PortSet",
    "analyze_job",
    "find_groups",
    "required_ports",
]


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
