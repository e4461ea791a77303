"""`topogen render`: write the generated enforcement (or stream it for Argo CD)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from topogen.cli import cluster_option, config_option, main, verbose_option
from topogen.config import load_config
from topogen.emit.writer import GENERATED_HEADER, stream_objects, write_tree
from topogen.rendering import render
from topogen.report import placement_lines


def _shown_config(config: Path, out: Path) -> str:
    """The config as seen from the output root (just its name when it lives elsewhere)."""
    rel = Path(os.path.relpath(config.resolve(), out.resolve()))
    return config.name if ".." in rel.parts else rel.as_posix()


@main.command("render")
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
    help="print one YAML stream of Kubernetes objects instead of writing files",
)
@verbose_option
def render_command(
    config_path: str, clusters: tuple[str, ...], out_dir: str | None, to_stdout: bool, verbose: bool
) -> None:
    """Render admission policies, CLI tests and signals for every training group.

    Exit 0: rendered; 1: a group no domain can hold (its policies are not
    rendered, the rest is); 2: usage or input error.
    """
    cfg = load_config(config_path)
    result = render(cfg, list(clusters) or None)
    for w in result.report.warnings:
        click.echo(f"topogen: warning: {w}", err=True)
    out = Path(out_dir) if out_dir else Path(config_path).parent
    config_shown = _shown_config(Path(config_path), out)
    header = GENERATED_HEADER.format(config=config_shown)
    if to_stdout:
        click.echo(stream_objects(result.files, header), nl=False)
    else:
        tops = write_tree(result.files, out, header, list(clusters) or None)
        shown = ", ".join(f"{(out / t).as_posix()}/" for t in tops)
        click.echo(f"topogen: wrote {len(result.files)} files under {shown}", err=True)
        if verbose:
            for f in result.files:
                click.echo(f"  {(out / f.path).as_posix()}", err=True)
            for line in placement_lines(result.report):
                click.echo(f"topogen: {line}", err=True)
    for r in result.refused:
        click.echo(f"topogen: error: {r}", err=True)
    sys.exit(1 if result.refused else 0)
