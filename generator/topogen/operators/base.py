"""The interface every training operator implements, and what it hands back.

An operator (one module per family, listed in registry.py) says which objects its
controller reads (`kinds`), the pods it creates from one of them (`pods`: one PodSet per
pod template, with the labels the controller stamps), and how a config group of its
profile tells a job's coordinator from its workers (`profile`: label selectors that
become the generated policies' match conditions). Sources turn PodSets into Workloads;
analysis and render ask for the Profile.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from topogen.manifest import KubeObject
from topogen.model import LabelSelector, Requirement

__all__ = [
    "Kind",
    "Operator",
    "Overrides",
    "PodSet",
    "Profile",
    "RoleConfig",
    "Site",
    "role_in",
]

Kind = tuple[str, str]  # (API group, kind): ("kubeflow.org", "PyTorchJob")
Site = tuple[str | int, ...]  # where a pod template is in a manifest (JSON pointer parts)


@dataclass(frozen=True)
class PodSet:
    """Pods a controller creates from one part of a manifest, all from one pod template."""

    replica: str  # "" for single-template kinds; else the replica type, task or job name
    replicas: Any  # how many, as written (the reader checks it)
    template: Any  # the PodTemplateSpec as written (metadata, spec); None when missing
    where: str  # its field path, for errors ("" when it is the whole object: a Pod)
    labels: Mapping[str, str] = field(default_factory=dict)  # what the controller stamps
    at: Site | None = None  # where `template` is in the manifest; None: it has none


@dataclass(frozen=True)
class Overrides:
    """A manifest without pod templates whose pods take per-job overrides (Trainer v2's
    podTemplateOverrides): `field` is a list of {targetJobs: [{name}], spec, metadata}."""

    field: str
    target: str  # the job whose pods topogen's patches change
    keys: tuple[str, ...]  # the pod spec fields an entry may set that scheduling reads
    legacy: str = ""  # an older field of the same meaning, which patches cannot extend
    legacy_release: str = ""  # the release that used it


class RoleConfig(Protocol):
    """What a config group (GroupConfig) may override of an operator's role rules."""

    @property
    def profile(self) -> str: ...
    @property
    def group_label(self) -> str | None: ...
    @property
    def role_label(self) -> str | None: ...
    @property
    def coordinator_roles(self) -> Sequence[str] | None: ...
    @property
    def worker_roles(self) -> Sequence[str] | None: ...


@dataclass(frozen=True)
class Profile:
    """How to recognise one job's pods and tell the coordinator from the workers.

    A pod plays a role when it carries the job label and matches any of that
    role's selectors (checked coordinator first). The same selectors become the
    match conditions of the generated admission policies.
    """

    name: str
    job_label: str
    role_label: str
    coordinator: tuple[LabelSelector, ...]
    worker: tuple[LabelSelector, ...]

    def coordinator_affinity(self, job: str) -> LabelSelector:
        """The selector a worker's pod affinity uses to find its job's coordinator."""
        coord = self.coordinator[-1]
        return LabelSelector(
            tuple(sorted({(self.job_label, job), *coord.match_labels})), coord.match_expressions
        )

    def role_of(self, labels: Mapping[str, str]) -> str | None:
        if self.job_label not in labels:
            return None
        if any(s.matches(labels) for s in self.coordinator):
            return "coordinator"
        if any(s.matches(labels) for s in self.worker):
            return "worker"
        return None


def role_in(key: str, values: Sequence[str]) -> LabelSelector:
    """The selector `key In (values)`."""
    return LabelSelector((), (Requirement(key, "In", tuple(sorted(set(values)))),))


class Operator(ABC):
    """One training operator family (see the module docstring)."""

    name: ClassVar[str]  # its profile in topogen.yaml
    kinds: ClassVar[tuple[Kind, ...]]  # the objects its controller reads
    job_label: ClassVar[str] = ""  # the label naming the job on its pods
    role_label: ClassVar[str] = ""  # the label naming the role on its pods
    coordinator_roles: ClassVar[tuple[str, ...]] = ()  # role label values that coordinate
    worker_roles: ClassVar[tuple[str, ...]] = ()
    required: ClassVar[tuple[str, ...]] = ()  # topogen.yaml keys a group of it must set
    detected: ClassVar[bool] = True  # `topogen init` proposes a group when it finds `kinds`
    overrides: ClassVar[Overrides | None] = None  # its manifests carry overrides, not templates

    @abstractmethod
    def pods(self, obj: KubeObject) -> Iterator[PodSet]:
        """The pods its controller creates from `obj` (one of `kinds`), per pod template.
        Raises InputError (naming obj) when the manifest is not of the expected shape."""

    def profile(self, group: RoleConfig) -> Profile:
        """The group's role rules: this operator's labels and roles, as the group overrides."""
        job = group.group_label or self.job_label
        role = group.role_label or self.role_label
        coordinator = list(group.coordinator_roles or self.coordinator_roles)
        worker = list(group.worker_roles or self.worker_roles)
        return self.rules(job, role, coordinator, worker)

    def rules(self, job: str, role: str, coordinator: list[str], worker: list[str]) -> Profile:
        """The Profile for these labels and role values: role label In each list."""
        return Profile(
            self.name, job, role, (role_in(role, coordinator),), (role_in(role, worker),)
        )
