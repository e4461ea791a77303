"""`topogen audit`: the live training groups, pod by pod, and which of them are broken."""

from __future__ import annotations

import sys

import click

from topogen.audit import audit_json, audit_live, audit_table
from topogen.cli import (
    SHORT_HELP,
    allow_outside_option,
    cluster_choice_option,
    config_option,
    main,
    verbose_option,
)
from topogen.cli.output import json_as_yaml, output_option
from topogen.cli.snapshot import live_options, live_source
from topogen.config import load_config
from topogen.textui import install_progress, terminal_width


@main.command("audit", short_help=SHORT_HELP["audit"])
@live_options
@config_option
@cluster_choice_option("the cluster of topogen.yaml this context is (when it has several)")
@click.option(
    "--prometheus",
    metavar="URL",
    help="Prometheus base URL for GPU utilisation (DCGM_FI_DEV_GPU_UTIL)",
)
@output_option(["text", "json", "yaml"])
@allow_outside_option
@verbose_option
def audit_command(
    context: str | None,
    kubeconfig: str | None,
    timeout: float,
    config_path: str,
    cluster: str | None,
    prometheus: str | None,
    output: str,
    allow_outside: bool,
    verbose: bool,
) -> None:
    """Audit the live training groups: pod, role, node, zone, GPU use, peer connectivity.

    Flags groups split across zones, paths the network policies deny, Running
    groups whose GPUs are idle (with --prometheus), and Pending pods held by
    constraints too strict for the cluster. Nodes, policies and pods are read
    live; topogen.yaml gives the groups, zone label and GPU resources.

    Exit 0: every group healthy; 1: a group is broken; 2: usage, input or cluster error.
    """
    cfg = load_config(config_path, allow_outside=allow_outside)
    done = install_progress()
    report = audit_live(cfg, live_source(context, kubeconfig, timeout), cluster, prometheus)
    done()
    for w in report.warnings:
        click.echo(f"topogen: warning: {w}", err=True)
    if verbose:
        pods = sum(len(g.rows) for g in report.groups)
        click.echo(
            f"topogen: cluster {report.cluster}: {len(report.groups)} jobs, {pods} pods, "
            f"{len(report.broken)} broken",
            err=True,
        )
    if output == "text":
        text = audit_table(report, terminal_width())
    else:
        text = audit_json(report)
        text = json_as_yaml(text) if output == "yaml" else text
    click.echo(text, nl=False)
    sys.exit(1 if report.broken else 0)
