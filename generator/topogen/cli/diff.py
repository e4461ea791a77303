"""`topogen diff`: what a change does to the generated enforcement, in words."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from topogen.cli import allow_outside_option, config_option, main
from topogen.diff import DiffReport, diff_dirs, diff_rendered, to_json, to_markdown, to_text

_FORMATS = {"text": to_text, "markdown": to_markdown, "json": to_json}


@main.command("diff")
@click.argument("trees", nargs=-1, metavar="[OLD_DIR NEW_DIR]", type=click.Path(file_okay=False))
@config_option
@click.option(
    "--against",
    metavar="DIR|GIT_REF",
    help="compare with this folder of rendered output, or with the output the config's "
    "inputs render to at this git ref (default: the committed output, see --out)",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    help="where the committed output lives, as for `topogen render --out` "
    "(default: the folder of topogen.yaml)",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(list(_FORMATS)),
    default="text",
    show_default=True,
    help="markdown for pull-request comments, json for machines",
)
@click.option("--check", is_flag=True, help="exit 1 when there is any difference")
@allow_outside_option
def diff_command(
    trees: tuple[str, ...],
    config_path: str,
    against: str | None,
    out_dir: str | None,
    fmt: str,
    check: bool,
    allow_outside: bool,
) -> None:
    """Compare generated output semantically: objects, fields and what they mean.

    Renders the config afresh and compares it with the committed output, with
    another folder (--against DIR), or with what the inputs at a git ref render
    to (--against GIT_REF, which also reports findings that appear or disappear).
    `topogen diff OLD_DIR NEW_DIR` compares any two rendered trees. Comments,
    key order, formatting and the order of tolerations or selector values never
    count as a difference.

    Exit 0: no difference (or differences without --check); 1: differences with
    --check; 2: usage or input error.
    """
    if trees:
        if len(trees) != 2:
            raise click.UsageError("give two folders (OLD_DIR NEW_DIR), or none")
        if against or out_dir:
            raise click.UsageError("OLD_DIR NEW_DIR cannot be combined with --against or --out")
        report: DiffReport = diff_dirs(Path(trees[0]), Path(trees[1]))
    else:
        report = diff_rendered(
            Path(config_path), against, Path(out_dir) if out_dir else None, allow_outside
        )
    click.echo(_FORMATS[fmt](report), nl=False)
    sys.exit(1 if check and not report.empty else 0)
