"""The registry: every training operator topogen knows, one row each.

Adding an operator is adding its module, its row in _ROWS and its kinds in _BY_KIND
(tests/operators runs every operator through the cases of its kinds, and checks _BY_KIND
against each operator's `kinds`). A kind two operators read (kubeflow.org MPIJob) goes
to the one serving the object's API version. An operator's module is imported when it is
first asked for: a command imports the one or two its inputs name, not all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from topogen.operators.base import Kind, Operator, RoleConfig
from topogen.operators.profile import Profile

__all__ = [
    "OPERATORS",
    "PROFILES",
    "detected_kinds",
    "operator",
    "operator_for",
    "operator_for_kind",
    "profile_for",
]


def _kubeflow() -> Operator:
    from topogen.operators.kubeflow import KubeflowTrainingOperator

    return KubeflowTrainingOperator()


def _trainer() -> Operator:
    from topogen.operators.trainer import KubeflowTrainer

    return KubeflowTrainer()


def _mpi() -> Operator:
    from topogen.operators.mpi import MpiOperator

    return MpiOperator()


def _jobset() -> Operator:
    from topogen.operators.jobset import JobSet

    return JobSet()


def _volcano() -> Operator:
    from topogen.operators.volcano import Volcano

    return Volcano()


def _kuberay() -> Operator:
    from topogen.operators.kuberay import KubeRay

    return KubeRay()


def _lws() -> Operator:
    from topogen.operators.lws import LeaderWorkerSet

    return LeaderWorkerSet()


def _custom() -> Operator:
    from topogen.operators.custom import Custom

    return Custom()


# profile name -> its operator, made (its module imported) when first asked for: a
# command meets one or two of them
_ROWS: dict[str, Callable[[], Operator]] = {
    "kubeflow-training-operator": _kubeflow,
    "kubeflow-trainer": _trainer,
    "mpi-operator": _mpi,
    "jobset": _jobset,
    "volcano": _volcano,
    "kuberay": _kuberay,
    "leaderworkerset": _lws,
    "custom": _custom,
}
PROFILES: tuple[str, ...] = tuple(_ROWS)
# (API group, kind) -> the operators whose controllers read it, in the registry's order
# (each operator's `kinds`: tests/operators/test_registry.py checks the two agree)
_BY_KIND: dict[Kind, tuple[str, ...]] = {
    **{("kubeflow.org", k): ("kubeflow-training-operator",)
       for k in ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob")},
    ("kubeflow.org", "MPIJob"): ("kubeflow-training-operator", "mpi-operator"),
    ("trainer.kubeflow.org", "TrainJob"): ("kubeflow-trainer",),
    ("jobset.x-k8s.io", "JobSet"): ("jobset",),
    ("batch.volcano.sh", "Job"): ("volcano",),
    ("ray.io", "RayCluster"): ("kuberay",),
    ("ray.io", "RayJob"): ("kuberay",),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): ("leaderworkerset",),
    **{(group, k): ("custom",) for group, k in (
        ("", "Pod"), ("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "ReplicaSet"),
        ("apps", "DaemonSet"), ("batch", "Job"), ("batch", "CronJob"))},
}  # fmt: skip
_MADE: dict[str, Operator] = {}

if TYPE_CHECKING:
    OPERATORS: tuple[Operator, ...]  # every operator, in the registry's order


def __getattr__(name: str) -> Any:
    if name == "OPERATORS":  # every operator (their modules all imported)
        return tuple(operator(n) for n in PROFILES)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def operator(name: str) -> Operator:
    """The operator of a profile name (config validation makes sure there is one)."""
    made = _MADE.get(name)
    if made is None:
        made = _MADE[name] = _ROWS[name]()
    return made


def operator_for(api_version: str, kind: str) -> Operator | None:
    """The operator whose controller reads objects of this apiVersion and kind."""
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return next(
        (
            op
            for op in map(operator, _BY_KIND.get((group, kind), ()))
            if op.serves(api_version, kind)
        ),
        None,
    )


def operator_for_kind(group: str, kind: str) -> Operator | None:
    """The first operator whose controller reads objects of this API group and kind (a kind
    two operators read goes by version: operator_for)."""
    found = _BY_KIND.get((group, kind))
    return operator(found[0]) if found else None


def profile_for(group: RoleConfig) -> Profile:
    """A config group's role rules."""
    return operator(group.profile).profile(group)


def detected_kinds() -> dict[tuple[str, str, str], str]:
    """(API group, version or "", kind) -> profile, for the kinds `topogen init` knows."""
    out: dict[tuple[str, str, str], str] = {}
    for op in map(operator, PROFILES):
        if not op.detected:
            continue
        for group, kind in op.kinds:
            for version in op.versions.get(kind, ("",)):
                out[(group, version, kind)] = op.name
    return out
