"""Template rendering with values entering only through serialising filters.

Every value printed by a template must go through `toyaml`/`tojson`/`quote`
(anything else raises), and every rendered stream is parsed back and checked
to be Kubernetes objects before a backend returns it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import yaml

from topogen.errors import InternalError
from topogen.plaindata import dump_yaml
from topogen.templatecache import TemplateCache, cache_folder
from topogen.yamlfast import load_all_fast, yaml_unsafe_in_json

__all__ = ["TEMPLATES_DIR", "RenderedFile", "render_documents", "render_text", "to_yaml"]


# package data: topogen/templates/ (in a checkout, a symlink to the top-level templates/)
TEMPLATES_DIR = Path(__file__).resolve().parents[1] / "templates"
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class RenderedFile:
    """One file of the output tree. `objects` is set when it holds Kubernetes objects."""

    path: str  # posix path relative to the output root
    text: str  # body, without the generated header
    objects: tuple[dict[str, Any], ...] = ()
    header: bool = True  # JSON files cannot carry a comment header


class _Serialized(str):
    """Marks text produced by a serialising filter: the only thing templates may print."""


def to_yaml(value: Any, indent: int = 0) -> str:
    """Deterministic block YAML (sorted keys), indented for embedding under a key."""
    text = dump_yaml(value, width=10_000, allow_unicode=True)
    if text.endswith("...\n"):
        text = text[:-4]
    text = text.rstrip("\n")
    if indent:
        pad = " " * indent
        text = "\n".join(pad + line if line else line for line in text.split("\n"))
    return text


def _f_yaml(value: Any, indent: int = 0) -> _Serialized:
    return _Serialized(to_yaml(value, indent))


def _f_json(value: Any) -> _Serialized:
    """Inline JSON is valid YAML flow syntax: safe for any scalar, list or map. Characters
    YAML does not take raw in a quoted scalar (U+0085 and the other line breaks, C1
    controls) are escaped, so every YAML reader reads the string back exactly."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    if not text.isascii():
        text = yaml_unsafe_in_json().sub(lambda m: f"\\u{ord(m[0]):04x}", text)
    return _Serialized(text)


def _finalize(value: Any) -> Any:
    if isinstance(value, _Serialized):
        return value
    raise InternalError(
        f"template printed a raw value {value!r}; pass it through |toyaml or |tojson"
    )


@cache
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_finalize,
    )
    env.filters["toyaml"] = _f_yaml
    env.filters["tojson"] = _f_json
    folder = cache_folder()
    if folder is not None:
        env.bytecode_cache = TemplateCache(folder, env)
    return env


def render_text(template: str, **values: Any) -> str:
    return _env().get_template(template).render(**values)


def render_documents(template: str, **values: Any) -> tuple[str, tuple[dict[str, Any], ...]]:
    """Render a template of Kubernetes objects; parse it back and check every document."""
    text = render_text(template, **values)
    fast = load_all_fast(text)  # the C loader's result, faster (None: let the loader say why)
    try:
        docs = [
            d
            for d in (fast[0] if fast is not None else yaml.load_all(text, Loader=_Loader))
            if d is not None
        ]
    except yaml.YAMLError as exc:
        raise InternalError(f"template {template} rendered invalid YAML: {exc}") from None
    for d in docs:
        if (
            not isinstance(d, dict)
            or not d.get("apiVersion")
            or not d.get("kind")
            or not isinstance(d.get("metadata"), dict)
            or not d["metadata"].get("name")
        ):
            raise InternalError(
                f"template {template} rendered a document that is not a Kubernetes object"
            )
    return text, tuple(docs)
