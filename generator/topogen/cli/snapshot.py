"""`topogen snapshot`: the live cluster's nodes and policies as a file topogen.yaml can name."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from topogen.cli import (
    SHORT_HELP,
    allow_outside_option,
    cluster_choice_option,
    main,
    resolve_config_path,
    verbose_option,
)
from topogen.cli.output import json_as_yaml
from topogen.errors import InputError
from topogen.pipeline.running import pods_said, read_snapshot
from topogen.sources.live import (
    DEFAULT_TIMEOUT,
    SNAPSHOT_HEADER,
    LiveSource,
    check_snapshot,
    snapshot_document,
    snapshot_yaml,
)
from topogen.textui import install_progress

__all__ = ["live_options", "live_source"]

F = TypeVar("F", bound=Callable[..., Any])


def live_options(f: F) -> F:
    """--context, --kubeconfig and --timeout, shared by the commands that read a live cluster."""
    f = click.option(
        "--timeout",
        type=click.FloatRange(min=0.1),
        default=DEFAULT_TIMEOUT,
        show_default=True,
        help="seconds the whole read of the cluster may take",
    )(f)
    f = click.option(
        "--kubeconfig",
        type=click.Path(dir_okay=False),
        help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)",
    )(f)
    return click.option("--context", help="kubeconfig context (default: the current one)")(f)


def live_source(context: str | None, kubeconfig: str | None, timeout: float) -> LiveSource:
    return LiveSource(context=context, kubeconfig=kubeconfig, timeout=timeout)


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` only once the new content is completely written."""
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise InputError(
            f"cannot write the snapshot: {exc.strerror or exc}", path=str(path)
        ) from None


# -o is a format (json, yaml) as everywhere; any other value is the old spelling of --out
_FORMATS = ("json", "yaml")


@main.command("snapshot", short_help=SHORT_HELP["snapshot"])
@live_options
@click.option(
    "--out",
    "out",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="file to write ('-' or none: stdout)",
)
@click.option(
    "-o",
    "--output",
    "output",
    metavar="[json|yaml]",
    help="json (the default: indented JSON, which is YAML) or yaml (block style); "
    "`-o FILE` is the old spelling of --out FILE",
)
@click.option(
    "-c",
    "--config",
    "config_path",
    metavar="FILE|DIR",
    type=click.Path(),
    callback=resolve_config_path,
    help="also record where the jobs of this topogen.yaml's groups run (their bound pods; "
    "needs list on pods in the groups' namespaces)",
)
@cluster_choice_option(
    "with -c: the cluster of topogen.yaml this context is (default: the only one, the one "
    "named like the context, else the groups of every cluster)"
)
@allow_outside_option
@verbose_option
def snapshot_command(
    context: str | None,
    kubeconfig: str | None,
    timeout: float,
    out: str | None,
    output: str | None,
    config_path: str | None,
    cluster: str | None,
    allow_outside: bool,
    verbose: bool,
) -> None:
    """Write the live cluster's Nodes, Namespaces, NodePools, network policies and Cilium
    settings to a snapshot file.

    The snapshot (kind TopogenSnapshot) is deterministic and minimal: labels,
    taints, allocatable, cordon state and pod CIDRs of Nodes; Namespace labels;
    Karpenter NodePools and Cluster API node groups; CiliumNetworkPolicy,
    CiliumClusterwideNetworkPolicy and NetworkPolicy rules; the keys topogen reads
    of the Cilium agent's kube-system/cilium-config ConfigMap.
    With -c, also where the groups' jobs run: their bound pods (namespace, name,
    the labels the groups' profiles read, node), so a render keeps each running
    job in its domain. Name it under clusters[].nodes in topogen.yaml.

    Exit 0: written; 2: the cluster cannot be read (unreachable, 401/403, timeout)
    or topogen.yaml is bad.
    """
    fmt = "json"
    if output is not None and output.lower() in _FORMATS:
        fmt = output.lower()
    elif output is not None:  # the old `-o FILE`
        if out is not None:
            raise click.UsageError(f"-o {output} names a file: give --out FILE once")
        out = output
    if cluster and not config_path:
        raise click.UsageError("--cluster names a cluster of topogen.yaml: give -c too")
    done = install_progress()
    objects, pods = read_snapshot(
        live_source(context, kubeconfig, timeout), config_path, cluster, allow_outside
    )
    done()
    for w in objects.warnings:
        click.echo(f"topogen: warning: {w}", err=True)
    if fmt == "yaml":
        text = SNAPSHOT_HEADER + json_as_yaml(json.dumps(snapshot_document(objects, pods)))
    else:
        text = snapshot_yaml(objects, pods)
    check_snapshot(text)
    if out is None or out == "-":
        click.echo(text, nl=False)
    else:
        write_atomic(Path(out), text)
    policies = sum(
        objects.count(k)
        for k in ("CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy", "NetworkPolicy")
    )
    click.echo(
        f"topogen: snapshot of {objects.count('Node')} nodes, "
        f"{objects.count('Namespace')} namespaces and {policies} policies"
        + pods_said(pods)
        + ("" if out is None or out == "-" else f" written to {out}"),
        err=True,
    )
    if verbose:
        kinds = ("CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy", "NetworkPolicy")
        for k in kinds:
            click.echo(f"topogen: {k}: {objects.count(k)}", err=True)
    sys.exit(0)
