"""`topogen audit`: the live training groups, pod by pod, and which of them are broken."""

from __future__ import annotations

import sys

import click

from topogen.audit import audit_json, audit_live, audit_table
from topogen.cli import allow_outside_option, config_option, main
from topogen.cli.snapshot import live_options, live_source
from topogen.config import load_config


@main.command("audit")
@live_options
@config_option
@click.option("--cluster", help="the cluster of topogen.yaml this context is (when it has several)")
@click.option(
    "--prometheus",
    metavar="URL",
    help="Prometheus base URL for GPU utilisation (DCGM_FI_DEV_GPU_UTIL)",
)
@click.option(
    "-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@allow_outside_option
def audit_command(
    context: str | None,
    kubeconfig: str | None,
    timeout: float,
    config_path: str,
    cluster: str | None,
    prometheus: str | None,
    output: str,
    allow_outside: bool,
) -> None:
    """Audit the live training groups: pod, role, node, zone, GPU use, peer connectivity.

    Flags groups split across zones, paths the network policies deny, Running
    groups whose GPUs are idle (with --prometheus), and Pending pods held by
    constraints too strict for the cluster. Nodes, policies and pods are read
    live; topogen.yaml gives the groups, zone label and GPU resources.

    Exit 0: every group healthy; 1: a group is broken; 2: usage, input or cluster error.
    """
    cfg = load_config(config_path, allow_outside=allow_outside)
    report = audit_live(cfg, live_source(context, kubeconfig, timeout), cluster, prometheus)
    for w in report.warnings:
        click.echo(f"topogen: warning: {w}", err=True)
    click.echo(audit_json(report) if output == "json" else audit_table(report), nl=False)
    sys.exit(1 if report.broken else 0)
