"""Analysis: pure functions over the model (placement, reachability, findings, domains).

Placement: nodeindex (node classes, the run's placement caches), fit (does a node take a
template), placement, packing. Reachability: reachability (PolicyIndex, verdicts),
selection (its indexes). Paths of a job: families (identity families, matrices, Engine),
zonepaths (JobPaths), links (pod affinity), paths, bits. Per job and group: members,
groups, findings, domains; cluster (ClusterIndex: what a cluster's groups share), context.
"""

from topogen.analysis.cluster import ClusterIndex
from topogen.analysis.context import AnalysisContext, required_ports
from topogen.analysis.domains import DomainCheck
from topogen.analysis.findings import JobAnalysis, analyze_job
from topogen.analysis.groups import find_groups
from topogen.analysis.paths import BlockedPath
from topogen.analysis.ports import PortSet
from topogen.analysis.reachability import PathVerdict, PolicyIndex

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
