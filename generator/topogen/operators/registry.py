"""The registry: every training operator topogen knows, one row each.

Adding an operator is adding its module and a row here (tests/operators runs every row
through the same cases).
"""

from __future__ import annotations

from topogen.operators.base import Kind, Operator, Profile, RoleConfig
from topogen.operators.custom import Custom
from topogen.operators.jobset import JobSet
from topogen.operators.kubeflow import KubeflowTrainingOperator
from topogen.operators.mpi import MpiOperator
from topogen.operators.trainer import KubeflowTrainer
from topogen.operators.volcano import Volcano

__all__ = [
    "OPERATORS",
    "PROFILES",
    "detected_kinds",
    "operator",
    "operator_for_kind",
    "profile_for",
]

OPERATORS: tuple[Operator, ...] = (
    KubeflowTrainingOperator(),
    KubeflowTrainer(),
    MpiOperator(),
    JobSet(),
    Volcano(),
    Custom(),
)
PROFILES: tuple[str, ...] = tuple(op.name for op in OPERATORS)

_BY_NAME = {op.name: op for op in OPERATORS}
_BY_KIND: dict[Kind, Operator] = {kind: op for op in OPERATORS for kind in op.kinds}


def operator(name: str) -> Operator:
    """The operator of a profile name (config validation makes sure there is one)."""
    return _BY_NAME[name]


def operator_for_kind(group: str, kind: str) -> Operator | None:
    """The operator whose controller reads objects of this API group and kind."""
    return _BY_KIND.get((group, kind))


def profile_for(group: RoleConfig) -> Profile:
    """A config group's role rules."""
    return _BY_NAME[group.profile].profile(group)


def detected_kinds() -> dict[Kind, str]:
    """(API group, kind) -> profile, for the kinds `topogen init` recognises."""
    return {kind: op.name for op in OPERATORS if op.detected for kind in op.kinds}
