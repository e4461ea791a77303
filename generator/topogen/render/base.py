"""Template rendering with values entering only through serialising filters.

Every value printed by a template must go through `toyaml`/`tojson`/`quote`
(anything else raises), and every rendered stream is parsed back and checked
to be Kubernetes objects before a backend returns it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import CodeType
from typing import TYPE_CHECKING, Any

import yaml

from topogen.errors import InternalError
from topogen.plaindata import dump_yaml
from topogen.render import templaterun
from topogen.render.templaterun import Runtime, lite_source
from topogen.templatecache import (
    TemplateLoader,
    cache_folder,
    jinja,
    kept_code,
    template_source,
)
from topogen.yamlfast import load_all_fast, yaml_unsafe_in_json

if TYPE_CHECKING:
    import jinja2

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


# the environment's options besides the filters: Jinja2's, and the key of the templates'
# lite code (render/templaterun.py), which depends on them
_OPTIONS: dict[str, Any] = {
    "autoescape": False,
    "keep_trailing_newline": True,
    "trim_blocks": True,
    "lstrip_blocks": True,
}
_FILTERS = {"toyaml": _f_yaml, "tojson": _f_json}


_LITE_KEY = repr(
    ("StrictUndefined", f"{__name__}._finalize", sorted(_FILTERS), sorted(_OPTIONS.items()))
).encode()


@cache
def _env() -> jinja2.Environment:
    environment, runtime = jinja()
    env: jinja2.Environment = environment.Environment(
        undefined=runtime.StrictUndefined, finalize=_finalize, **_OPTIONS
    )
    env.filters.update(_FILTERS)
    env.loader = TemplateLoader(TEMPLATES_DIR, cache_folder(), env)  # type: ignore[assignment]
    return env


@cache
def _runtime() -> Runtime:
    return Runtime(_finalize, _FILTERS)


# (template name, source) -> its render function from lite code, or None (Jinja2 runs it)
_LITE: dict[tuple[str, str], Callable[[Mapping[str, Any]], str] | None] = {}


def _lite_template(name: str) -> Callable[[Mapping[str, Any]], str] | None:
    """The template's render function without Jinja2, when its code allows it: kept in
    the cache folder, made (with Jinja2's compiler) when not kept yet."""
    found = template_source(TEMPLATES_DIR, name)
    if found is None:
        return None  # Jinja2's loader says why
    filename, source = found
    if (name, source) not in _LITE:

        def make() -> CodeType | None:
            lite = lite_source(_env().compile(source, name, filename, raw=True), _FILTERS)
            return None if lite is None else compile(lite, filename, "exec", dont_inherit=True)

        key = b"|".join((_LITE_KEY, name.encode(), filename.encode(), source.encode()))
        # the lite code depends on the rules of render/templaterun.py too
        code = kept_code(cache_folder(), key, (templaterun.__file__,), make)
        _LITE[name, source] = None if code is None else _runtime().load(code)
    return _LITE[name, source]


def render_text(template: str, **values: Any) -> str:
    lite = _lite_template(template)
    if lite is not None:
        return lite(values)
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
