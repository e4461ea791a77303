"""The job kinds whose pod templates topogen's Kueue mutation reaches: where each keeps the
templates Kueue makes its PodSets of (one per replica type or ReplicatedJob, read when
Kueue creates the job's Workload). A kind not listed here is left to Kueue as it is."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["JOB_KINDS", "JobKind", "job_kind"]


@dataclass(frozen=True)
class JobKind:
    group: str
    kind: str
    versions: tuple[str, ...]
    resource: str  # the REST resource (plural)
    field: str  # spec.<field>: the replica specs
    # keyed: a map of replica type -> spec (Kubeflow), each spec's `template`;
    # else a list of entries (JobSet's replicatedJobs), each entry's `template` below
    keyed: bool
    template: tuple[str, ...]  # the pod template's path inside one entry
    types: tuple[str, ...] = ()  # keyed: the replica types, as the webhook spells them

    @property
    def api_versions(self) -> tuple[str, ...]:
        return tuple(f"{self.group}/{v}" for v in self.versions)


def _kubeflow(kind: str, field: str, types: tuple[str, ...], version: str = "v1") -> JobKind:
    return JobKind(
        "kubeflow.org", kind, (version,), kind.lower() + "s", field, True, ("template",), types
    )


JOB_KINDS: tuple[JobKind, ...] = (
    _kubeflow("PyTorchJob", "pytorchReplicaSpecs", ("Master", "Worker")),
    _kubeflow("TFJob", "tfReplicaSpecs", ("Chief", "Master", "PS", "Worker", "Evaluator")),
    _kubeflow("XGBoostJob", "xgbReplicaSpecs", ("Master", "Worker")),
    _kubeflow("PaddleJob", "paddleReplicaSpecs", ("Master", "Worker")),
    _kubeflow("JAXJob", "jaxReplicaSpecs", ("Worker",)),
    _kubeflow("MPIJob", "mpiReplicaSpecs", ("Launcher", "Worker"), "v2beta1"),
    JobKind(
        "jobset.x-k8s.io",
        "JobSet",
        ("v1alpha2",),
        "jobsets",
        "replicatedJobs",
        False,
        ("template", "spec", "template"),
    ),
)

_BY_KIND = {(k.group, k.kind): k for k in JOB_KINDS}


def job_kind(api_version: str, kind: str) -> JobKind | None:
    """The kind's template layout, when topogen's Kueue mutation reaches this version."""
    group, _, version = api_version.rpartition("/")
    found = _BY_KIND.get((group, kind))
    return found if found is not None and version in found.versions else None
