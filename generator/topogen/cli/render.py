"""`topogen render`: write the generated enforcement (or stream it for Argo CD)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from topogen.cli import (
    SHORT_HELP,
    allow_outside_option,
    cluster_option,
    config_option,
    main,
    namespace_option,
    verbose_option,
)
from topogen.cli.output import output_option
from topogen.config import load_config, with_default_namespace
from topogen.pipeline.inputs import start_reading
from topogen.textui import install_progress
from topogen.yamltext import display_path

if TYPE_CHECKING:
    from topogen.emit.writer import WriteReport
    from topogen.pipeline.render import RenderResult


def _shown_config(config: Path, out: Path) -> str:
    """The config as seen from the output root (just its name when it lives elsewhere)."""
    rel = Path(os.path.relpath(config.resolve(), out.resolve()))
    return config.name if ".." in rel.parts else rel.as_posix()


@main.command("render", short_help=SHORT_HELP["render"])
@config_option
@cluster_option
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    help="root of the output tree (default: the folder of topogen.yaml)",
)
@click.option(
    "--stdout",
    "to_stdout",
    is_flag=True,
    help="print one YAML stream of Kubernetes objects instead of writing files (as -o yaml; "
    "with -o json it is refused)",
)
@output_option(
    ["yaml", "json"],
    default=None,
    help="print the objects instead of writing files: yaml (as --stdout) or json (a List)",
)
@click.option(
    "--partial",
    is_flag=True,
    help="when a group is refused, write (or print) the other groups' output anyway, "
    "without the refused group's policies (exit 1 all the same); by default nothing is "
    "written then",
)
@allow_outside_option
@namespace_option
@verbose_option
def render_command(
    config_path: str,
    clusters: tuple[str, ...],
    out_dir: str | None,
    to_stdout: bool,
    output: str | None,
    partial: bool,
    allow_outside: bool,
    namespace: str | None,
    verbose: bool,
) -> None:
    """Render admission policies, CLI tests and signals for every training group.

    Writes and removes only files topogen wrote (a file of anyone else in the output
    tree stops it, naming the file), only those whose bytes change, each replaced at
    once; a render killed midway is finished by the next topogen command.

    Exit 0: rendered; 1: a group no domain can hold: nothing is written (or printed),
    unless --partial; 2: usage or input error.
    """
    if to_stdout and output == "json":
        raise click.UsageError("--stdout prints YAML and -o json prints JSON: give one of them")
    cfg = with_default_namespace(load_config(config_path, allow_outside=allow_outside), namespace)
    out = Path(out_dir) if out_dir else Path(config_path).parent
    reading = start_reading(cfg, list(clusters) or None)
    # the stages, imported while a large input's workloads are read in a forked copy
    from topogen.emit.refusal import refusal_line
    from topogen.emit.stream import GENERATED_HEADER, stream_json, stream_objects
    from topogen.pipeline.render import render

    done = install_progress()
    result = render(cfg, list(clusters) or None, out=out, findings=False, reading=reading)
    done()
    for w in result.report.warnings:
        click.echo(f"topogen: warning: {w}", err=True)
    for e in result.report.empty_groups:  # no policies for it: said, as analyze fails on it
        click.echo(f"topogen: warning: {e}", err=True)
    config_shown = _shown_config(Path(config_path), out)
    header = GENERATED_HEADER.format(config=config_shown)
    printing = to_stdout or output is not None
    shown = display_path(Path(config_path))
    if result.refused and not partial:
        _fail_closed(result, None if printing else out, shown)
    if output == "json":
        click.echo(stream_json(result.files), nl=False)
    elif printing:
        click.echo(stream_objects(result.files, header), nl=False)
    else:
        from topogen.emit.writer import write_tree  # (its journal: not for a printed render)

        report = write_tree(result.files, out, header, list(clusters) or None)
        _said(report, out, result, verbose)
    if result.refused:
        what = "the other groups' output written without its policies (--partial)"
        click.echo(f"topogen: error: {refusal_line(result.refused, what, shown)}", err=True)
    sys.exit(1 if result.refused else 0)


def _said(report: WriteReport, out: Path, result: RenderResult, verbose: bool) -> None:
    shown = ", ".join(f"{(out / t).as_posix()}/" for t in report.tops)
    if report.converted:
        tops = ", ".join(f"{(out / t).as_posix()}/" for t in report.converted)
        click.echo(
            f"topogen: converted {tops} from symlinks into .topogen/tree/ to plain folders "
            "(.topogen/tree/ is gone): commit them with .topogen/MANIFEST",
            err=True,
        )
    if report.written or report.stale:
        same = f" ({report.unchanged} unchanged)" if report.unchanged else ""
        click.echo(f"topogen: wrote {report.written} files under {shown}{same}", err=True)
    else:
        click.echo(f"topogen: unchanged: {report.unchanged} files under {shown}", err=True)
    if report.stale:
        names = ", ".join(report.stale[:3]) + (", ..." if len(report.stale) > 3 else "")
        click.echo(
            f"topogen: removed {len(report.stale)} generated files the inputs no longer "
            f"render: {names}",
            err=True,
        )
    if report.cleaned:
        click.echo(
            f"topogen: removed what an interrupted render left: {', '.join(report.cleaned)}",
            err=True,
        )
    if verbose:
        for f in result.files:
            click.echo(f"  {(out / f.path).as_posix()}", err=True)
        for p in report.stale:
            click.echo(f"  removed {(out / p).as_posix()}", err=True)
        from topogen.pipeline.format import placement_lines

        for line in placement_lines(result.report):
            click.echo(f"topogen: {line}", err=True)


def _fail_closed(result: RenderResult, out: Path | None, config: str) -> None:
    """Refused groups: one line saying why and what stays (emit/refusal.py); write
    nothing, exit 1."""
    from topogen.emit.refusal import policies_of, refusal_line

    refused = [(r.cluster, r.group) for r in result.refused if r.group is not None]
    kept = policies_of(out, refused) if out is not None else []
    if out is None:
        what = "nothing printed (Argo CD keeps what it synced last)"
    elif kept:
        names = ", ".join(kept[:3]) + (", ..." if len(kept) > 3 else "")
        what = (
            f"nothing written: {out.as_posix()}/ keeps its policies ({names}), which a "
            "partial render would remove"
        )
    else:
        what = "nothing written: a partial render would leave it without policies"
    what += " (fix the inputs, or pass --partial to render the rest)"
    click.echo(f"topogen: error: {refusal_line(result.refused, what, config)}", err=True)
    sys.exit(1)
