"""What render reads of the analysis: the planned clusters and the workloads as read.

pipeline/analyze.py's AnalysisReport and ClusterAnalysis have these fields; render names
only the protocols, so it depends on no later stage (nor on sources, which read them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from topogen.manifest import KubeObject
from topogen.model import Workload
from topogen.plan.group_plan import GroupPlan

__all__ = ["PlannedCluster", "PlannedReport", "ReadWorkloads"]


class PlannedCluster(Protocol):
    """One cluster's groups as planned."""

    @property
    def cluster(self) -> str: ...

    @property
    def plans(self) -> Sequence[GroupPlan]: ...


class ReadWorkloads(Protocol):
    """The config's workload files as read (the workload patches change them)."""

    @property
    def objects(self) -> Sequence[KubeObject]: ...

    @property
    def workloads(self) -> Sequence[Workload]: ...


class PlannedReport(Protocol):
    """Every cluster planned, and the workloads as read."""

    @property
    def clusters(self) -> Sequence[PlannedCluster]: ...

    @property
    def read(self) -> ReadWorkloads: ...
