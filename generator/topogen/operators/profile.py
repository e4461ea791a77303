"""A profile: how a config group recognises one job's pods and their roles.

The same label rules become the generated admission policies' match conditions, so they
read only labels a pod carries when it is created (and, for the analysis, the labels of
the other pods of its namespace, to find the job of a detached pod).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from topogen.model import KUEUE_TAS_KEYS, LabelSelector, Requirement

__all__ = ["KUEUE_TAS_KEYS", "Profile"]


@dataclass(frozen=True)
class Profile:
    """How to recognise one job's pods and tell the coordinator from the workers.

    A pod plays a role when it carries the job label and matches any of that role's
    selectors (checked coordinator first). Each worker selector has an anchor: what the
    worker's co-location term adds to its own job's labels (the first worker selector a
    pod matches decides). A detached pod (KubeRay's submitter) lacks the job label: it
    belongs to the job whose job label value is its `detached_label` value followed by
    `detached_suffix`, and is pinned like the coordinator.
    """

    name: str
    job_label: str
    role_label: str
    coordinator: tuple[LabelSelector, ...]
    worker: tuple[LabelSelector, ...]
    anchors: tuple[LabelSelector, ...] = ()  # per worker selector; () = coordinator[-1]
    scope: tuple[str, ...] = ()  # labels naming the job with job_label (LWS group index)
    members: LabelSelector | None = None  # the job's member pods, when no anchor fits
    detached_label: str = ""
    detached_suffix: str = ""  # a regular expression

    @property
    def worker_anchors(self) -> tuple[tuple[LabelSelector, LabelSelector], ...]:
        anchors = self.anchors or tuple(self.coordinator[-1] for _ in self.worker)
        return tuple(zip(self.worker, anchors, strict=True))

    def coordinator_affinity(self, job: str) -> LabelSelector:
        """The selector a worker's pod affinity uses to find its job's coordinator."""
        coord = self.coordinator[-1]
        return LabelSelector(
            tuple(sorted({(self.job_label, job), *coord.match_labels})), coord.match_expressions
        )

    def role_of(self, labels: Mapping[str, str]) -> str | None:
        if self.job_label not in labels:
            return "coordinator" if self.detached_label and self.detached_label in labels else None
        if any(s.matches(labels) for s in self.coordinator):
            return "coordinator"
        if any(s.matches(labels) for s in self.worker):
            return "worker"
        return None

    def job_of(
        self, labels: Mapping[str, str], others: Iterable[Mapping[str, str]] = ()
    ) -> str | None:
        """The job a pod with these labels belongs to, given its namespace's other pods."""
        if self.job_label in labels:
            if any(k not in labels for k in self.scope):
                return None
            return "-".join([labels[self.job_label], *(labels[k] for k in self.scope)])
        if not self.detached_label or self.detached_label not in labels:
            return None
        pattern = re.compile(re.escape(labels[self.detached_label]) + self.detached_suffix)
        jobs = {o[self.job_label] for o in others if self.job_label in o}
        found = sorted(j for j in jobs if pattern.fullmatch(j))
        return found[0] if len(found) == 1 else None

    def anchor_of(self, labels: Mapping[str, str]) -> LabelSelector:
        """What a worker's co-location term adds to its own job's labels."""
        return next(a for w, a in self.worker_anchors if w.matches(labels))

    def anchor_selector(self, labels: Mapping[str, str]) -> LabelSelector:
        """A worker's whole co-location term: its job (and scope) labels and its anchor."""
        sel = self.anchor_of(labels)
        own = {(k, labels[k]) for k in (self.job_label, *self.scope)}
        return LabelSelector(tuple(sorted({*own, *sel.match_labels})), sel.match_expressions)

    def detached_selector(self, names: Sequence[str]) -> LabelSelector:
        """The detached pods of jobs whose detached label values are `names`."""
        return LabelSelector((), (Requirement(self.detached_label, "In", tuple(sorted(names))),))
