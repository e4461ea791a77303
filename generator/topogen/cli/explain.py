"""`topogen explain`: one path's verdict and the rules behind it."""

from __future__ import annotations

import sys

import click

from topogen.cli import SHORT_HELP, main, verbose_option
from topogen.cli.connectivity import input_options, input_spec, label_overrides
from topogen.cli.output import json_as_yaml, output_option
from topogen.connectivity import explain_path, explanation_json, explanation_text, load_inputs


@main.command("explain", short_help=SHORT_HELP["explain"])
@click.option("--from", "src", required=True, metavar="NS/NAME", help="the sending workload")
@click.option("--to", "dst", required=True, metavar="NS/NAME", help="the receiving workload")
@click.option(
    "--port",
    metavar="P/PROTO",
    help="only this port: 8080/TCP, 8000-8100/UDP or a named port of --to",
)
@input_options
@output_option(["text", "json", "yaml"])
@verbose_option
def explain_command(
    src: str,
    dst: str,
    port: str | None,
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
    """Explain whether NS/NAME may open a connection to NS/NAME, and why (not).

    Shows the sender's egress and the receiver's ingress: whether each is
    isolated and by which policy rule, which allow and deny rules match, and the
    result port by port. Workloads are NS/NAME (NS/NAME[replica] for kinds with
    several pod templates).

    Exit 0: the path (the port, if given) is allowed; 1: denied; 2: usage or
    input error.
    """
    spec = input_spec(
        config_path, cluster, policies, workloads, namespaces, allow_outside, namespace
    )
    inputs = load_inputs(spec)
    if verbose:
        for s in inputs.skipped:
            click.echo(f"topogen: skipped {s}", err=True)
    ex = explain_path(inputs, src, dst, port, label_overrides(labels))
    if output == "text":
        text = explanation_text(ex)
    else:
        text = explanation_json(ex)
        text = json_as_yaml(text) if output == "yaml" else text
    click.echo(text, nl=False)
    sys.exit(0 if ex.allowed else 1)
