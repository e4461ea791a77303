"""The interface every training operator implements, and what it hands back.

An operator (one module per family, listed in registry.py) says which objects its
controller reads (`kinds`, with the API versions it serves), the pods it creates from
one of them (`pods`: one PodSet per group of pods with one template, labelled as the
controller labels them) and how a config group of its profile tells a job's coordinator
from its workers (`profile`). Sources turn PodSets into Workloads; analysis and render
ask for the Profile. Nothing here reads files.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Protocol

from topogen.manifest import KubeObject
from topogen.model import LabelSelector, Requirement
from topogen.operators.profile import Profile

__all__ = [
    "Inputs",
    "Kind",
    "ObjectIndex",
    "Operator",
    "PodSet",
    "Profile",
    "RoleConfig",
    "Site",
    "role_in",
    "template_of",
]

Kind = tuple[str, str]  # (API group, kind): ("kubeflow.org", "PyTorchJob")
Site = tuple[str | int, ...]  # where a pod template is in a manifest (JSON pointer parts)


@dataclass(frozen=True)
class PodSet:
    """Pods a controller creates from one pod template, all labelled alike but for the
    `indexed` labels, which count up from the template's value, one per pod."""

    replica: str  # "" for single-template kinds; else the replica type, task or job name
    replicas: Any  # how many, as written (the reader checks it)
    template: Any  # the PodTemplateSpec (metadata, spec); None when missing
    where: str  # its field path, for errors ("" when it is the whole object: a Pod)
    labels: Mapping[str, str] = field(default_factory=dict)  # what the controller stamps
    at: Site | None = None  # where `template` is in the manifest; None: nowhere (made up)
    annotations: Mapping[str, str] = field(default_factory=dict)  # what it annotates
    indexed: tuple[str, ...] = ()  # labels whose value counts up per pod (replica index)
    late: bool = False  # created only once other pods of the job run: never an anchor


class Inputs(Protocol):
    """What an operator may look up among the other inputs (a TrainJob's runtime)."""

    def find(self, group: str, kind: str, namespace: str, name: str) -> KubeObject | None: ...

    def warn(self, message: str) -> None: ...


class ObjectIndex:
    """Inputs over a list of objects, collecting the warnings."""

    def __init__(self, objects: Sequence[KubeObject], warnings: list[str] | None = None) -> None:
        self._by_key = {(o.group, o.kind, o.namespace, o.name): o for o in objects}
        self.warnings: list[str] = [] if warnings is None else warnings

    def find(self, group: str, kind: str, namespace: str, name: str) -> KubeObject | None:
        """`namespace` "" for a cluster-scoped kind. A namespaced object written without a
        namespace is in `default`, as kubectl applies it (sources/scope.py)."""
        found = self._by_key.get((group, kind, namespace, name))
        if found is None and namespace == "default":
            found = self._by_key.get((group, kind, "", name))
        return found

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)


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


def role_in(key: str, values: Sequence[str]) -> LabelSelector:
    """The selector `key In (values)`."""
    return LabelSelector((), (Requirement(key, "In", tuple(sorted(set(values)))),))


class Operator(ABC):
    """One training operator family (see the module docstring)."""

    name: ClassVar[str]  # its profile in topogen.yaml
    kinds: ClassVar[tuple[Kind, ...]]  # the objects its controller reads
    # kind -> the API versions of it this operator serves (absent: every version)
    versions: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    job_label: ClassVar[str] = ""  # the label naming the job on its pods
    role_label: ClassVar[str] = ""  # the label naming the role on its pods
    coordinator_roles: ClassVar[tuple[str, ...]] = ()  # role label values that coordinate
    worker_roles: ClassVar[tuple[str, ...]] = ()
    required: ClassVar[tuple[str, ...]] = ()  # topogen.yaml keys a group of it must set
    detected: ClassVar[bool] = True  # `topogen init` proposes a group when it finds `kinds`
    title: ClassVar[str] = ""  # its name in messages ("the MPI Operator")

    @abstractmethod
    def pods(self, obj: KubeObject, inputs: Inputs) -> Iterator[PodSet]:
        """The pods its controller creates from `obj` (one of `kinds`). Raises InputError
        (naming obj) when the manifest is not of the expected shape."""

    def serves(self, api_version: str, kind: str) -> bool:
        version = api_version.rpartition("/")[2]
        return version in self.versions.get(kind, (version,))

    def profile(self, group: RoleConfig) -> Profile:
        """The group's role rules: this operator's labels and roles, as the group overrides."""
        job = group.group_label or self.job_label
        role = group.role_label or self.role_label
        coordinator = list(group.coordinator_roles or self.coordinator_roles)
        worker = list(group.worker_roles or self.worker_roles)
        return self.rules(job, role, coordinator, worker)

    def rules(self, job: str, role: str, coordinator: list[str], worker: list[str]) -> Profile:
        """The Profile for these labels and role values: role label In each list; a
        worker's term names its job's coordinators."""
        return Profile(
            self.name, job, role, (role_in(role, coordinator),), (role_in(role, worker),)
        )

    def rules_anchored_on_members(
        self, job: str, role: str, coordinator: list[str], worker: list[str]
    ) -> Profile:
        """The base rules with any member of the job as the workers' anchor (for jobs
        whose coordinator is not created first: whichever member exists anchors them)."""
        members = role_in(role, [*coordinator, *worker])
        return replace(
            Operator.rules(self, job, role, coordinator, worker),
            anchors=(members,),
            members=members,
        )


def template_of(raw: Any) -> dict[str, Any]:
    """A PodTemplateSpec as a plain dict (metadata and spec present), for synthesis."""
    t = dict(raw) if isinstance(raw, Mapping) else {}
    t["metadata"] = dict(t.get("metadata") or {})
    t["spec"] = dict(t.get("spec") or {})
    return t
