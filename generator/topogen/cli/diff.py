"""`topogen diff`: what a change does to the generated enforcement, in words."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from click.core import ParameterSource

from topogen.cli import (
    INTERRUPTED,
    SHORT_HELP,
    allow_outside_option,
    cluster_option,
    config_option,
    main,
    verbose_option,
)
from topogen.cli.output import json_as_yaml, output_option
from topogen.diff import (
    DiffReport,
    diff_dirs,
    diff_rendered,
    only_clusters,
    to_json,
    to_markdown,
    to_text,
)
from topogen.textui import use_colour

_FORMATS = ("text", "markdown", "json", "yaml")


def _formatted(report: DiffReport, fmt: str) -> str:
    if fmt == "yaml":
        return json_as_yaml(to_json(report))
    if fmt == "text":
        return to_text(report, colour=use_colour())
    return to_markdown(report) if fmt == "markdown" else to_json(report)


@main.command("diff", short_help=SHORT_HELP["diff"])
@click.argument("trees", nargs=-1, metavar="[OLD_DIR NEW_DIR]", type=click.Path(file_okay=False))
@config_option
@cluster_option
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
@output_option(_FORMATS, help="markdown for pull-request comments, json or yaml for machines")
@click.option(
    "--format",
    "old_format",
    type=click.Choice(_FORMATS, case_sensitive=False),
    hidden=True,
    help="the old spelling of -o/--output",
)
@click.option("--check", is_flag=True, help="exit 1 when there is any difference")
@click.option(
    "--all-files",
    is_flag=True,
    help="OLD_DIR NEW_DIR: compare every file under them (default: only the files topogen "
    "owns, those each folder's .topogen/MANIFEST lists or that carry its header, where "
    "the folder has a manifest)",
)
@allow_outside_option
@verbose_option
def diff_command(
    trees: tuple[str, ...],
    config_path: str,
    clusters: tuple[str, ...],
    against: str | None,
    out_dir: str | None,
    output: str,
    old_format: str | None,
    check: bool,
    all_files: bool,
    allow_outside: bool,
    verbose: bool,
) -> None:
    """Compare generated output semantically: objects, fields and what they mean.

    Renders the config afresh and compares it with the committed output, with
    another folder (--against DIR), or with what the inputs at a git ref render
    to (--against GIT_REF, which also reports findings that appear or disappear).
    `topogen diff OLD_DIR NEW_DIR` compares any two rendered trees (the files
    topogen owns in each, unless --all-files). Comments,
    key order, formatting and the order of tolerations or selector values never
    count as a difference. --cluster keeps only those clusters' folders and
    findings (the shared ones stay).

    Exit 0: no difference (or differences without --check); 1: differences with
    --check; 2: usage or input error.
    """
    if trees:
        if len(trees) != 2:
            raise click.UsageError("give two folders (OLD_DIR NEW_DIR), or none")
        if against or out_dir:
            raise click.UsageError("OLD_DIR NEW_DIR cannot be combined with --against or --out")
        report: DiffReport = diff_dirs(Path(trees[0]), Path(trees[1]), all_files)
    elif all_files:
        raise click.UsageError("--all-files compares two folders (OLD_DIR NEW_DIR)")
    else:
        report = diff_rendered(
            Path(config_path), against, Path(out_dir) if out_dir else None, allow_outside
        )
    report = only_clusters(report, clusters)
    source = click.get_current_context().get_parameter_source("output")
    fmt = old_format.lower() if old_format and source is ParameterSource.DEFAULT else output
    if verbose:
        counts = {s: report.count(s) for s in ("added", "removed", "changed")}
        said = ", ".join(f"{n} {s}" for s, n in counts.items())
        click.echo(f"topogen: {report.old_label} -> {report.new_label}: {said}", err=True)
    click.echo(_formatted(report, fmt), nl=False)
    interrupted = click.get_current_context().meta.get(INTERRUPTED, [])
    for tree in interrupted:
        click.echo(
            f"topogen: {tree}/ held an interrupted render (finished now from its journal, or "
            "still being written): drift, whatever the files say",
            err=True,
        )
    sys.exit(1 if check and (interrupted or not report.empty) else 0)
