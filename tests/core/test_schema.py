"""The published JSON schema of topogen.yaml: generated from the pydantic model, committed
as schema/topogen.schema.json (no drift), and it accepts what topogen accepts."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from topogen.config import load_config
from topogen.init.schema import config_schema, schema_text

REPO = Path(__file__).resolve().parents[2]
PUBLISHED = REPO / "schema" / "topogen.schema.json"
CONFIGS = sorted(REPO.glob("examples/*/topogen*.yaml"))


def test_published_schema_is_the_generated_one() -> None:
    assert PUBLISHED.read_text(encoding="utf-8") == schema_text(), (
        "schema/topogen.schema.json drifted from topogen.config: write it again with "
        "python -c 'from topogen.init.schema import schema_text; print(schema_text(), end=\"\")' "
        "> schema/topogen.schema.json"
    )


def test_schema_is_valid_json_schema_without_internal_fields() -> None:
    schema = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert "base_dir" not in schema["properties"] and "path" not in schema["properties"]
    assert schema["additionalProperties"] is False  # unknown keys are errors, as in topogen


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_example_config_is_valid_under_the_schema(path: Path) -> None:
    load_config(path)  # topogen accepts it
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    jsonschema.validate(data, config_schema())


@pytest.mark.parametrize(
    "change",
    [
        {"zoneLable": "x"},  # an unknown key
        {"validationAction": "Deny"},  # not Audit or Enforce
        {"groups": [{"name": "g", "profile": "nope", "namespaces": ["a"]}]},
    ],
)
def test_the_schema_refuses_what_topogen_refuses(change: dict[str, object]) -> None:
    data = yaml.safe_load((REPO / "examples/zone-split/topogen.yaml").read_text(encoding="utf-8"))
    data.update(change)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, config_schema())
