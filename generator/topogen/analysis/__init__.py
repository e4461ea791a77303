"""Analysis: pure functions over the model (placement, reachability, findings, domains)."""

from topogen.analysis.context import AnalysisContext, BlockedPath, required_ports
from topogen.analysis.domains import DomainCheck
from topogen.analysis.findings import JobAnalysis, analyze_job
from topogen.analysis.groups import find_groups
from topogen.analysis.ports import PortSet
from topogen.analysis.reachability import PathVerdict, PolicyIndex

__all__ = [
    "AnalysisContext",
    "BlockedPath",
    "DomainCheck",
    "JobAnalysis",
    "PathVerdict",
    "PolicyIndex",
    "PortSet",
    "analyze_job",
    "find_groups",
    "required_ports",
]
