"""Config (below sources): topogen.yaml's errors as a person reads them. A key is named by
its path through the config, list items by their `name` where they have one
(`clusters.lab.zoneLabel`, `groups.ml-training.ports[1]`), with the line of topogen.yaml
it is on, in topogen's words (pydantic's "Input should be a valid list" is "must be a
list"), and a misspelt key gets the key it resembles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, get_args

import yaml

from topogen.errors import InputError

if TYPE_CHECKING:  # pydantic only where a config is wrong: key_line is on every start-up
    from pydantic import BaseModel, ValidationError
    from pydantic_core import ErrorDetails

__all__ = ["config_error", "key_line", "key_path"]

Loc = Sequence[int | str]

# pydantic's error types, in topogen's words (the rest: the validator's own message)
_WORDS = {
    "missing": "is required",
    "list_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_too_short": "must not be empty",
}


def config_error(
    exc: ValidationError,
    model: type[BaseModel],
    data: Any,
    text: str | None,
    shown: str,
    patterns: Mapping[str, str],
    at: str = "",
) -> InputError:
    """The first error (a misspelt key before the keys it made missing), named by path and
    line; `patterns` says in words what each string pattern of the model asks for; `at`:
    where `data` is in its file (`[2]`: the third entry of a list)."""
    errors = exc.errors()
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = tuple(p for p in err["loc"] if not _is_union_tag(p))
    inner = key_path(data, loc)
    dot = "." if at and inner and not inner.startswith("[") else ""
    where = f"{at}{dot}{inner}" or "(top level)"
    if err["type"] == "extra_forbidden":
        msg = f"unknown key {where}" + _did_you_mean(model, loc)
    else:
        msg = f"{where}: {_words(err, patterns)}"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    line = key_line(text, loc, key=err["type"] == "extra_forbidden") if text else None
    return InputError(msg + more, path=shown, line=line)


def key_path(data: Any, loc: Loc) -> str:
    """`clusters.lab.nodes[0]`: keys joined with dots, a list item by its `name` when it
    has a string one, else by its index."""
    out = ""
    node = data
    for part in loc:
        if isinstance(part, int):
            item = node[part] if isinstance(node, list) and part < len(node) else None
            name = item.get("name") if isinstance(item, dict) else None
            out += f".{name}" if isinstance(name, str) and name else f"[{part}]"
            node = item
        else:
            out += f".{part}" if out else str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return out


def key_line(text: str, loc: Loc, *, key: bool = False) -> int | None:
    """The line (1-based) of the value at `loc` in the YAML `text` (`key`: of the key
    itself), or of the deepest mapping or list on the way that exists."""
    try:
        node: Any = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return None
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        found = None
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            found = next(((k, v) for k, v in node.value if k.value == part), None)
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
            found = (node.value[part], node.value[part])
        if found is None:
            return line
        key_node, node = found
        line = (key_node if key and part == loc[-1] else node).start_mark.line + 1
    return line


def _words(err: ErrorDetails, patterns: Mapping[str, str]) -> str:
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind in _WORDS:
        return _WORDS[kind]
    if kind == "string_pattern_mismatch":
        asked = patterns.get(str(ctx.get("pattern")), f"must match {ctx.get('pattern')}")
        return f"{_shown(err['input'])} {asked}"
    if kind == "literal_error":
        return f"{_shown(err['input'])} must be {ctx.get('expected')}"
    if kind == "string_too_long":
        return f"must be at most {ctx.get('max_length')} characters"
    if kind == "too_short":
        return f"must have at least {ctx.get('min_length')} item(s)"
    if kind == "too_long":
        return f"must have at most {ctx.get('max_length')} item(s)"
    if kind in ("greater_than_equal", "greater_than"):
        return f"must be at least {ctx.get('ge', ctx.get('gt'))}"
    if kind in ("less_than_equal", "less_than"):
        return f"must be at most {ctx.get('le', ctx.get('lt'))}"
    return str(err["msg"]).removeprefix("Value error, ")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 72 else text[:69] + "..."


def _did_you_mean(model: type[BaseModel], loc: Loc) -> str:
    """` (did you mean zoneLabel?)` for a misspelt key, from the model's own keys there."""
    here: type[BaseModel] | None = model
    for part in loc[:-1]:
        if here is None:
            return ""
        if isinstance(part, int):
            continue
        fields = here.model_fields
        found = next((f for n, f in fields.items() if (f.alias or n) == part), None)
        here = _model_in(found.annotation) if found is not None else None
    if here is None:
        return ""
    keys = [f.alias or n for n, f in here.model_fields.items() if not f.exclude]
    import difflib  # only on an unknown key: kept off every start-up

    close = difflib.get_close_matches(str(loc[-1]), keys, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model an annotation holds (list[X], X | None, ...), if any."""
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _is_union_tag(part: int | str) -> bool:
    """pydantic names union members in error locations (constrained-str, function-after[..])."""
    return isinstance(part, str) and (
        part.startswith(("constrained-", "function-")) or "[" in part or part in ("int", "str")
    )
