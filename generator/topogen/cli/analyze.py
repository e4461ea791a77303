"""`topogen analyze`: the verdict per training group."""

from __future__ import annotations

import sys

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
from topogen.cli.output import json_as_yaml, output_option
from topogen.config import load_config, with_default_namespace
from topogen.pipeline.inputs import start_reading
from topogen.textui import install_progress, terminal_width, use_colour


@main.command("analyze", short_help=SHORT_HELP["analyze"])
@config_option
@cluster_option
@output_option(["text", "json", "yaml"])
@allow_outside_option
@namespace_option
@verbose_option
def analyze_command(
    config_path: str,
    clusters: tuple[str, ...],
    output: str,
    allow_outside: bool,
    namespace: str | None,
    verbose: bool,
) -> None:
    """Find training groups whose placement can break their own traffic.

    Exit 0: no problem; 1: a HARD_BLOCK, CROSS_ZONE, UNSCHEDULABLE or
    IDENTITY_MISMATCH finding, or a group that matches no workload (unless it sets
    allowEmpty); 2: usage or input error.
    """
    cfg = with_default_namespace(load_config(config_path, allow_outside=allow_outside), namespace)
    reading = start_reading(cfg, list(clusters) or None)
    # the stages, imported while a large input's workloads are read in a forked copy
    from topogen.pipeline.analyze import analyze
    from topogen.pipeline.format import analysis_json, analysis_table, count_lines

    done = install_progress()
    report = analyze(cfg, list(clusters) or None, denied_pairs=False, reading=reading)
    done()
    for w in report.warnings:
        click.echo(f"topogen: warning: {w}", err=True)
    for e in report.empty_groups:
        click.echo(f"topogen: error: {e}", err=True)
    if verbose:
        for s in report.skipped:
            click.echo(f"topogen: skipped {s}", err=True)
        for line in count_lines(report):
            click.echo(f"topogen: {line}", err=True)
    if output == "text":
        text = analysis_table(report, terminal_width(), use_colour())
    else:
        text = analysis_json(report)
        text = json_as_yaml(text) if output == "yaml" else text
    click.echo(text, nl=False)
    sys.exit(1 if report.has_problems else 0)
