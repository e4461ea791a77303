"""The registry: every training operator topogen knows, one row each.

Adding an operator is adding its module and a row here (tests/operators runs every
operator through the cases of its kinds). A kind two operators read (kubeflow.org
MPIJob) goes to the one serving the object's API version.
"""

from __future__ import annotations

from topogen.operators.base import Kind, Operator, RoleConfig
from topogen.operators.custom import Custom
from topogen.operators.jobset import JobSet
from topogen.operators.kubeflow import KubeflowTrainingOperator
from topogen.operators.kuberay import KubeRay
from topogen.operators.lws import LeaderWorkerSet
from topogen.operators.mpi import MpiOperator
from topogen.operators.profile import Profile
from topogen.operators.trainer import KubeflowTrainer
from topogen.operators.volcano import Volcano

__all__ = [
    "OPERATORS",
    "PROFILES",
    "detected_kinds",
    "operator",
    "operator_for",
    "operator_for_kind",
    "profile_for",
]

OPERATORS: tuple[Operator, ...] = (
    KubeflowTrainingOperator(),
    KubeflowTrainer(),
    MpiOperator(),
    JobSet(),
    Volcano(),
    KubeRay(),
    LeaderWorkerSet(),
    Custom(),
)
PROFILES: tuple[str, ...] = tuple(op.name for op in OPERATORS)

_BY_NAME = {op.name: op for op in OPERATORS}
_BY_KIND: dict[Kind, list[Operator]] = {}
for _op in OPERATORS:
    for _kind in _op.kinds:
        _BY_KIND.setdefault(_kind, []).append(_op)


def operator(name: str) -> Operator:
    """The operator of a profile name (config validation makes sure there is one)."""
    return _BY_NAME[name]


def operator_for(api_version: str, kind: str) -> Operator | None:
    """The operator whose controller reads objects of this apiVersion and kind."""
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return next(
        (op for op in _BY_KIND.get((group, kind), ()) if op.serves(api_version, kind)), None
    )


def operator_for_kind(group: str, kind: str) -> Operator | None:
    """The first operator whose controller reads objects of this API group and kind (a kind
    two operators read goes by version: operator_for)."""
    found = _BY_KIND.get((group, kind))
    return found[0] if found else None


def profile_for(group: RoleConfig) -> Profile:
    """A config group's role rules."""
    return _BY_NAME[group.profile].profile(group)


def detected_kinds() -> dict[tuple[str, str, str], str]:
    """(API group, version or "", kind) -> profile, for the kinds `topogen init` knows."""
    out: dict[tuple[str, str, str], str] = {}
    for op in OPERATORS:
        if not op.detected:
            continue
        for group, kind in op.kinds:
            for version in op.versions.get(kind, ("",)):
                out[(group, version, kind)] = op.name
    return out
