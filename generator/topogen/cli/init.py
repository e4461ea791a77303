"""`topogen init`: scaffold topogen.yaml in an existing GitOps repository."""

from __future__ import annotations

from pathlib import Path

import click

from topogen.cli import SHORT_HELP, main, verbose_option
from topogen.init.scaffold import init_repository


@main.command("init", short_help=SHORT_HELP["init"])
@click.argument(
    "directory", default=".", type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option(
    "--cluster",
    metavar="NAME",
    default="default",
    show_default=True,
    help="name of the cluster in topogen.yaml (the Argo CD plugin falls back to the app name)",
)
@click.option("--force", is_flag=True, help="overwrite an existing topogen.yaml")
@verbose_option
def init_command(directory: Path, cluster: str, force: bool, verbose: bool) -> None:
    """Scaffold topogen.yaml from the training operators found in DIRECTORY's manifests.

    Exit 0: written; 2: topogen.yaml exists (pass --force) or bad input.
    """
    result = init_repository(directory, cluster, force)
    found = result.found
    if verbose:
        for what, files in (
            ("workloads", found.workload_files),
            ("network policies", found.policy_files),
            ("nodes", found.node_files),
        ):
            for f in sorted(files):
                click.echo(f"topogen: {what}: {f}", err=True)
    for s in found.skipped:
        click.echo(f"topogen: skipped {s}", err=True)
    for profile in sorted(found.profiles):
        kinds = ", ".join(sorted(found.kinds[profile]))
        spaces = ", ".join(sorted(found.profiles[profile]))
        click.echo(f"topogen: found {kinds} ({profile}) in namespaces {spaces}", err=True)
    if not found.profiles:
        click.echo("topogen: warning: no training operator objects found; edit groups", err=True)
    if not found.node_files:
        click.echo(
            f"topogen: next: kubectl get nodes -o yaml > {directory / 'cluster' / 'nodes.yaml'}",
            err=True,
        )
    shown = ", ".join(f"{directory.as_posix()}/{w}" for w in result.written)
    click.echo(f"topogen: wrote {shown}", err=True)
    click.echo("topogen: then run `topogen analyze` and `topogen render`", err=True)
