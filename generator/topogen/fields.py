"""Config: the field types of topogen.yaml that config/models.py and autoscaling.py share."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from topogen.config.rules import PATH_PATTERN, QUANTITY_PATTERN
from topogen.names import (
    DNS_LABEL_PATTERN,
    LABEL_KEY_PATTERN,
    LABEL_VALUE_PATTERN,
    label_key_problem,
)

__all__ = ["PATTERN_WORDS", "InputPath", "LabelKey", "LabelValue", "Name", "Quantity", "Strict"]

Name = Annotated[str, StringConstraints(pattern=DNS_LABEL_PATTERN, max_length=63)]
# a file or folder of topogen.yaml: no control characters (a NUL is no path anywhere)
_PATH = PATH_PATTERN
InputPath = Annotated[str, StringConstraints(pattern=_PATH, min_length=1, max_length=4096)]


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
_QUANTITY = QUANTITY_PATTERN
# a resource quantity as Kubernetes writes one: 8, "95900m", "768Gi", "1.5"
Quantity = (
    Annotated[int, Field(ge=0)]
    | Annotated[
        str,
        StringConstraints(pattern=_QUANTITY),
    ]
)


class Strict(BaseModel):
    """Unknown keys refused; one spelling per key, the schema's (its alias): no
    populate_by_name, so `zone_label:` is no other spelling of zoneLabel."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# each pattern above in words, for topogen.yaml's errors (configerrors.py)
PATTERN_WORDS = {
    DNS_LABEL_PATTERN: "is not a DNS label (lowercase letters, digits and '-', at most 63)",
    LABEL_KEY_PATTERN: "is not a label key (letters, digits, '-', '_', '.', an optional "
    "DNS-subdomain prefix and '/')",
    LABEL_VALUE_PATTERN: "is not a label value (at most 63 letters, digits, '-', '_' and '.', "
    "starting and ending alphanumeric)",
    _PATH: "is not a path (it holds a control character)",
    _QUANTITY: "is not a non-negative resource quantity such as 8, 95900m or 768Gi",
}
