"""The JSON schema of topogen.yaml, generated from the pydantic model (config/models.py).

Editors read it through a `# yaml-language-server: $schema=...` line (topogen init writes
one); the repository publishes it as schema/topogen.schema.json, which a test keeps equal
to what this module generates.
"""

from __future__ import annotations

import json
from typing import Any

from topogen.config.models import TopogenConfig
from topogen.operators.registry import PROFILES

__all__ = ["SCHEMA_FILE", "config_schema", "schema_text"]

SCHEMA_FILE = "topogen.schema.json"
# fields load_config sets, not users (excluded from the model's dumps)
_INTERNAL = {name for name, f in TopogenConfig.model_fields.items() if f.exclude}


def config_schema() -> dict[str, Any]:
    """The schema of topogen.yaml (JSON Schema 2020-12), keys as users write them."""
    schema = TopogenConfig.model_json_schema(by_alias=True, mode="validation")
    for name in _INTERNAL:
        schema["properties"].pop(name, None)
    schema["required"] = [r for r in schema.get("required", []) if r not in _INTERNAL]
    # what validators check beyond the field types, where a schema can say it
    group = schema["$defs"]["GroupConfig"]["properties"]
    group["profile"] = {"enum": list(PROFILES), "title": "Profile"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "topogen.yaml",
        "description": "topogen's configuration (kind TopogenConfig); generated from "
        "topogen.config.TopogenConfig",
        **{k: v for k, v in schema.items() if k != "title"},
    }


def schema_text() -> str:
    """The schema as the file topogen publishes: sorted keys, two-space indent."""
    return json.dumps(config_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
