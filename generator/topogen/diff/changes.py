"""The structures `topogen diff` computes: plain frozen data, no I/O, no formatting."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

__all__ = [
    "AnalysisDelta",
    "ClusterReview",
    "DiffReport",
    "FieldChange",
    "FindingChange",
    "ObjectChange",
    "ObjectKey",
    "PlacementRow",
    "PlanChange",
    "RowStatus",
    "Tree",
    "TreeEntry",
    "cluster_of",
    "only_clusters",
]

FieldOp = Literal["added", "removed", "changed", "reordered"]
ObjectStatus = Literal["added", "removed", "changed"]
FindingStatus = Literal["appears", "disappears", "changes"]
RowStatus = Literal["new", "kept", "moved", "removed", "refused"]


@dataclass(frozen=True)
class ObjectKey:
    """What one document of a rendered tree is, independent of its file and formatting.

    Kubernetes objects are keyed by apiVersion, kind, namespace and name within
    their folder (a folder is one cluster and engine: the same policy rendered
    for two clusters is two objects). `file` is set only for documents that are
    not Kubernetes objects, or to tell apart two objects of one folder that
    share an identity (a test's resources and their patched versions).
    """

    location: str  # the document's folder, relative to the tree root ("" for the root)
    api_version: str = ""
    kind: str = ""
    namespace: str = ""
    name: str = ""
    file: str = ""

    @property
    def is_object(self) -> bool:
        return bool(self.kind)

    def sort_key(self) -> tuple[str, int, str, str, str, str]:
        return (
            self.location,
            0 if self.is_object else 1,
            self.kind,
            self.namespace,
            self.name,
            self.file,
        )

    def describe(self) -> str:
        """`MutatingPolicy topogen-x`, `Pod ml-demo/coordinator (patched.yaml)`, or a file path."""
        if not self.is_object:
            return self.file
        ns = f"{self.namespace}/" if self.namespace else ""
        extra = f" ({self.file})" if self.file else ""
        return f"{self.kind} {ns}{self.name}{extra}"


@dataclass(frozen=True)
class TreeEntry:
    key: ObjectKey
    path: str  # the file it was read from, relative to the tree root
    data: Any  # the parsed document (or, for a file that is not YAML or JSON, its text)


@dataclass(frozen=True)
class Tree:
    """A rendered output tree, as parsed documents keyed by what they are."""

    entries: Mapping[ObjectKey, TreeEntry]
    warnings: tuple[str, ...] = ()

    @property
    def tops(self) -> frozenset[str]:
        return frozenset(e.path.split("/", 1)[0] for e in self.entries.values() if "/" in e.path)


@dataclass(frozen=True)
class FieldChange:
    path: str  # spec.variables[name=zoneRequirement].expression
    op: FieldOp
    old: Any = None
    new: Any = None


@dataclass(frozen=True)
class ObjectChange:
    key: ObjectKey
    status: ObjectStatus
    old_path: str | None
    new_path: str | None
    subject: str  # "coordinator of ml-training", or the object's kind and name
    notes: tuple[str, ...]  # what the change means, in the terms of the domain
    fields: tuple[FieldChange, ...] = ()


@dataclass(frozen=True)
class PlacementRow:
    """One known job of a cluster, before and after (the renders' placements files)."""

    group: str
    job: str  # namespace/name
    gpus: str
    before: str  # its domain before ("" when it had none)
    after: str  # its domain after ("" when it has none)
    status: RowStatus
    reason: str = ""  # moved: why (the re-pin), refused: why not, new/kept: running in D
    queued: bool = False  # after: it waits its turn for GPUs in its domain


@dataclass(frozen=True)
class ClusterReview:
    """What a reviewer decides from, for one cluster (diff/review.py)."""

    cluster: str
    engines: tuple[tuple[str, ...], tuple[str, ...]]  # before, after
    actions: tuple[str, str]  # Audit | Enforce ("" without validating policies), before, after
    failure_policies: tuple[Mapping[str, str], Mapping[str, str]]  # engine -> Fail | Ignore
    rows: tuple[PlacementRow, ...]
    free: tuple[tuple[str, str, str], ...]  # (domain, GPUs left before, after)
    mutation: str  # what the mutation now does differently, naming the component
    validation: str  # what validation refuses or reports, and by which component
    risks: tuple[str, ...]  # re-pins, refusals, fail-open, Enforce turned on, queued
    refused: tuple[str, ...] = ()  # the new render's refusals: it writes nothing
    warnings: tuple[str, ...] = ()  # the new render's warnings

    def count(self, status: str) -> int:
        return sum(1 for r in self.rows if r.status == status)


@dataclass(frozen=True)
class FindingChange:
    status: FindingStatus
    kind: str  # HARD_BLOCK, UNSCHEDULABLE, ...
    problem: bool  # is the kind a problem (not OK or KUEUE_MANAGED)
    cluster: str
    group: str
    namespace: str
    job: str
    headline: str  # "this change makes group X UNSCHEDULABLE"
    message: str  # the finding's message (the new one, or the old one when it disappears)
    old_message: str = ""  # for `changes`
    fix: str = ""
    # a problem whose group's verdict is new or worse than on the old side (a job joining
    # a group with the same verdict and the same rendered fix is a known problem)
    new_problem: bool = False
    # the new side renders a fix for it (its group planned and enforced, not UNSCHEDULABLE)
    fixed: bool = True


@dataclass(frozen=True)
class PlanChange:
    cluster: str
    group: str
    headline: str
    old: str  # the plan, as `topogen analyze` describes its fix
    new: str


@dataclass(frozen=True)
class AnalysisDelta:
    findings: tuple[FindingChange, ...] = ()
    plans: tuple[PlanChange, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.findings and not self.plans


@dataclass(frozen=True)
class DiffReport:
    old_label: str  # a folder, a config or a git ref, as the user named it
    new_label: str
    objects: tuple[ObjectChange, ...]
    analysis: AnalysisDelta | None  # None: the old or the new inputs are not known
    warnings: tuple[str, ...] = ()
    old_what: str = ""  # "committed output", "rendered at a git ref", ...
    new_what: str = ""
    reviews: tuple[ClusterReview, ...] = ()  # per cluster: the reviewer's summary
    refused: tuple[str, ...] = ()  # the new render's refusals (it writes nothing)

    @property
    def empty(self) -> bool:
        """No difference at all: nothing for --check to fail on (a refused render is one)."""
        return (
            not self.objects and not self.refused and (self.analysis is None or self.analysis.empty)
        )

    def count(self, status: str) -> int:
        return sum(1 for o in self.objects if o.status == status)


def cluster_of(location: str) -> str | None:
    """The cluster a rendered folder belongs to, or None for shared folders (kustomize/base,
    the audit/enforce components, argocd/)."""
    parts = location.split("/")
    if parts[0] in ("policies", "monitoring") and len(parts) > 1:
        return parts[1]
    if parts[:2] == ["kustomize", "overlays"] and len(parts) > 2:
        return parts[2]
    if parts[:3] == ["kustomize", "components", "workload-patches"] and len(parts) > 3:
        return parts[3]
    return None


def only_clusters(report: DiffReport, clusters: Sequence[str]) -> DiffReport:
    """The report restricted to these clusters' folders and findings (shared folders stay)."""
    if not clusters:
        return report
    keep = set(clusters)
    objects = tuple(o for o in report.objects if cluster_of(o.key.location) in (None, *keep))
    analysis = report.analysis
    if analysis is not None:
        analysis = AnalysisDelta(
            tuple(f for f in analysis.findings if f.cluster in keep),
            tuple(p for p in analysis.plans if p.cluster in keep),
        )
    reviews = tuple(r for r in report.reviews if r.cluster in keep)
    return replace(report, objects=objects, analysis=analysis, reviews=reviews)
