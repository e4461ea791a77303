"""The published JSON schema of topogen.yaml: generated from the pydantic model, committed
as schema/topogen.schema.json (no drift), and it accepts what topogen accepts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import jsonschema
import pytest
import yaml
from pydantic import BaseModel, ValidationError

from topogen.config import TopogenConfig, load_config
from topogen.errors import InputError
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


def _models(model: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """Every config model reachable from `model` (itself included), by class name."""
    found = {model.__name__: model}
    for f in model.model_fields.values():
        for arg in (f.annotation, *_args(f.annotation)):
            if isinstance(arg, type) and issubclass(arg, BaseModel) and arg.__name__ not in found:
                found.update(_models(arg))
    return found


def _args(annotation: object) -> list[object]:
    out: list[object] = []
    for arg in get_args(annotation):
        out += [arg, *_args(arg)]
    return out


MODELS = _models(TopogenConfig)
ALIASED = [
    (name, field, info.alias)
    for name, model in sorted(MODELS.items())
    for field, info in model.model_fields.items()
    if info.alias and info.alias != field and not info.exclude
]


def test_every_aliased_key_has_one_spelling_the_schemas() -> None:
    """One spelling per key (the schema's): the reader refuses the Python name of every
    aliased key (`zone_label`, `kubernetes_version`, `instance_types` ...) as an unknown key,
    as the published schema does, and both know the documented spelling."""
    schema = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    assert {"ClusterConfig", "InstanceTypeConfig", "NodeGroupConfig"} <= set(MODELS)
    assert ("ClusterConfig", "zone_label", "zoneLabel") in ALIASED
    assert ("ClusterConfig", "kubernetes_version", "kubernetesVersion") in ALIASED
    for name, field, alias in ALIASED:
        where = schema if name == "TopogenConfig" else schema["$defs"][name]
        assert alias in where["properties"] and field not in where["properties"], (name, field)
        assert where["additionalProperties"] is False, name
        with pytest.raises(ValidationError) as err:
            MODELS[name].model_validate({field: None})
        assert any(
            e["type"] == "extra_forbidden" and e["loc"] == (field,) for e in err.value.errors()
        ), (name, field)


def test_the_config_refuses_the_python_spelling_of_a_key_as_the_schema_does(
    tmp_path: Path,
) -> None:
    text = (REPO / "examples/zone-split/topogen.yaml").read_text(encoding="utf-8")
    for documented, other in (
        ("zoneLabel:", "zone_label:"),
        ("networkPolicies:", "network_policies:"),
    ):
        assert documented in text
        config = tmp_path / "topogen.yaml"
        config.write_text(text.replace(documented, other), encoding="utf-8")
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(yaml.safe_load(config.read_text()), config_schema())
        with pytest.raises(InputError, match=f"unknown key clusters.lab.{other[:-1]}"):
            load_config(config)
