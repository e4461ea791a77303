"""Config: the field types of topogen.yaml that config.py and autoscaling.py share."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from topogen.names import (
    DNS_LABEL_PATTERN,
    LABEL_KEY_PATTERN,
    LABEL_VALUE_PATTERN,
    label_key_problem,
)

__all__ = ["InputPath", "LabelKey", "LabelValue", "Name", "Quantity", "Strict"]

Name = Annotated[str, StringConstraints(pattern=DNS_LABEL_PATTERN, max_length=63)]
# a file or folder of topogen.yaml: no control characters (a NUL is no path anywhere)
InputPath = Annotated[
    str, StringConstraints(pattern=r"^[^\x00-\x1f\x7f]+$", min_length=1, max_length=4096)
]


def _label_key(key: str) -> str:
    """names.py's rule, lengths of the prefix and the name included."""
    problem = label_key_problem(key)
    if problem:
        raise ValueError(problem)
    return key


LabelKey = Annotated[
    str,
    StringConstraints(pattern=LABEL_KEY_PATTERN, max_length=317),
    AfterValidator(_label_key),
]
LabelValue = Annotated[str, StringConstraints(pattern=LABEL_VALUE_PATTERN, max_length=63)]
# a resource quantity as Kubernetes writes one: 8, "95900m", "768Gi", "1.5"
Quantity = (
    Annotated[int, Field(ge=0)]
    | Annotated[
        str,
        StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"),
    ]
)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
