"""`topogen connectivity`: the allowed connections of every ordered pair of workloads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from topogen.cli import (
    SHORT_HELP,
    allow_outside_option,
    cluster_choice_option,
    config_option,
    main,
    namespace_option,
    verbose_option,
)
from topogen.cli.output import json_as_yaml, output_option
from topogen.connectivity import (
    InputSpec,
    LabelOverride,
    compute_connectivity,
    connectivity_csv,
    connectivity_json,
    connectivity_table,
    load_inputs,
    parse_label_override,
)

__all__ = ["input_options", "input_spec", "label_overrides"]

F = TypeVar("F", bound=Callable[..., Any])


def input_options(f: F) -> F:
    """-c/--cluster or --policies/--workloads/--namespaces, and --label (shared with explain)."""
    options = [
        config_option,
        allow_outside_option,
        cluster_choice_option(),
        click.option(
            "--policies",
            multiple=True,
            metavar="PATH",
            help="policy files or folders, instead of -c (repeatable)",
        ),
        click.option(
            "--workloads",
            multiple=True,
            metavar="PATH",
            help="workload files or folders, instead of -c (repeatable)",
        ),
        click.option(
            "--namespaces",
            multiple=True,
            metavar="PATH",
            help="Namespace objects, for namespaceSelector (repeatable)",
        ),
        click.option(
            "--label",
            "labels",
            multiple=True,
            metavar="NS/NAME=KEY=VALUE",
            help="give a workload's pods a label its template lacks, e.g. an "
            "identity label stamped at binding (repeatable)",
        ),
        namespace_option,
    ]
    for option in reversed(options):
        f = option(f)
    return f


def input_spec(
    config_path: str,
    cluster: str | None,
    policies: tuple[str, ...],
    workloads: tuple[str, ...],
    namespaces: tuple[str, ...],
    allow_outside: bool = False,
    namespace: str | None = None,
) -> InputSpec:
    """-c wins when given; the default topogen.yaml only when no paths are."""
    source = click.get_current_context().get_parameter_source("config_path")
    paths = bool(policies or workloads or namespaces)
    config = None if paths and source is ParameterSource.DEFAULT else config_path
    return InputSpec(
        config,
        cluster,
        policies,
        workloads,
        namespaces,
        allow_outside,
        default_namespace=namespace,
    )


def label_overrides(labels: tuple[str, ...]) -> list[LabelOverride]:
    return [parse_label_override(text) for text in labels]


@main.command("connectivity", short_help=SHORT_HELP["connectivity"])
@input_options
@output_option(["text", "json", "yaml", "csv"])
@verbose_option
def connectivity_command(
    config_path: str,
    allow_outside: bool,
    cluster: str | None,
    policies: tuple[str, ...],
    workloads: tuple[str, ...],
    namespaces: tuple[str, ...],
    labels: tuple[str, ...],
    namespace: str | None,
    output: str,
    verbose: bool,
) -> None:
    """List what each workload may open to each other workload.

    For every ordered pair of workloads (one endpoint per pod template; a
    workload paired with itself when it has more than one pod): "all", or the
    protocol/port ranges both the sender's egress and the receiver's ingress
    allow. Pairs with no allowed connection are left out of table and csv and
    marked in json. hostNetwork workloads are listed as their node: host-network
    traffic is the node's, governed by host policies, not by pod selectors (a note
    says so).

    Exit 0, or 2 on a usage or input error.
    """
    spec = input_spec(
        config_path, cluster, policies, workloads, namespaces, allow_outside, namespace
    )
    report = compute_connectivity(load_inputs(spec), label_overrides(labels))
    for w in report.warnings:
        click.echo(f"topogen: warning: {w}", err=True)
    if verbose:
        for s in report.skipped:
            click.echo(f"topogen: skipped {s}", err=True)
    if output == "yaml":
        click.echo(json_as_yaml(connectivity_json(report)), nl=False)
        return
    render = {"json": connectivity_json, "csv": connectivity_csv}.get(output, connectivity_table)
    click.echo(render(report), nl=False)
