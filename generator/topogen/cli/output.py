"""`-o/--output FORMAT`, the one output option of every command that prints.

As kubectl's: `-o` names a format (text, json, yaml; csv or markdown where they fit); YAML
is the JSON document in block style, so both carry the same fields. Old names stay
accepted (`table` is `text`) without being shown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import click

__all__ = ["OutputFormat", "json_as_yaml", "output_option"]

F = TypeVar("F", bound=Callable[..., Any])


class OutputFormat(click.Choice[str]):
    """The formats shown in --help, plus hidden old names mapped onto them."""

    def __init__(self, formats: Sequence[str], aliases: Mapping[str, str] | None = None) -> None:
        super().__init__(list(formats), case_sensitive=False)
        self.aliases = dict(aliases or {})

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if isinstance(value, str) and value.lower() in self.aliases:
            return self.aliases[value.lower()]
        return str(super().convert(value, param, ctx))


def output_option(
    formats: Sequence[str],
    default: str | None = "text",
    *,
    aliases: Mapping[str, str] | None = None,
    help: str = "output format",
) -> Callable[[F], F]:
    """`-o/--output FORMAT`; `table` is accepted for `text` wherever text is offered."""
    known = dict(aliases or {})
    if "text" in formats:
        known.setdefault("table", "text")

    def decorate(f: F) -> F:
        return click.option(
            "-o",
            "--output",
            "output",
            type=OutputFormat(formats, known),
            default=default,
            show_default=default is not None,
            help=help,
        )(f)

    return decorate


def json_as_yaml(text: str) -> str:
    """A JSON document as block YAML: the same fields, in the same (sorted) order."""
    import json  # (lazily, as yaml: `connectivity -o csv` needs neither)

    import yaml  # only the YAML output needs it

    dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    data = json.loads(text)
    out: str = yaml.dump(
        data,
        Dumper=dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 30,
    )
    return out
