"""The thin click layer: parse options, call one core function, print, map errors to exits."""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import re
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from topogen import __version__
from topogen.errors import TopogenError

__all__ = [
    "allow_outside_option",
    "cluster_option",
    "config_option",
    "main",
    "namespace_option",
    "run",
    "verbose_option",
]

F = TypeVar("F", bound=Callable[..., Any])


# each command lives in the module of its name, imported when the command runs (or for
# --help), so `topogen render` does not pay for importing `diff` and its dependencies
_COMMANDS = ("analyze", "audit", "connectivity", "diff", "explain", "init", "render", "snapshot")


class _Group(click.Group):
    """Maps TopogenError to its exit code with one line on stderr; never a traceback.
    Imports a command's module when the command is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(_COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in _COMMANDS and cmd_name not in self.commands:
            importlib.import_module(f"topogen.cli.{cmd_name}")  # registers it
        return self.commands.get(cmd_name)

    def main(
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """click's main, with its usage errors as one line (`topogen: error: ...`, exit 2)
        instead of the usage text, a hint and the message on three."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            click.echo(exc.format_message(), err=True)
            sys.exit(2)
        except click.ClickException as exc:
            click.echo(f"topogen: error: {_one_line(exc.format_message())}", err=True)
            sys.exit(2 if exc.exit_code in (1, 2) else exc.exit_code)
        except click.exceptions.Abort:
            click.echo("topogen: aborted", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except TopogenError as exc:
            click.echo(f"topogen: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except RecursionError:
            click.echo("topogen: error: input nested too deeply", err=True)
            sys.exit(2)
        except (click.exceptions.Exit, click.ClickException, SystemExit, KeyboardInterrupt):
            raise
        except Exception as exc:  # a bug: say so in one line, keep the trace on request
            if os.environ.get("TOPOGEN_DEBUG"):
                raise
            click.echo(
                f"topogen: internal error: {type(exc).__name__}: {exc} "
                "(set TOPOGEN_DEBUG=1 for the traceback; please report it)",
                err=True,
            )
            sys.exit(3)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def run() -> None:
    """The console script: main(), then a quick exit.

    A fleet-sized run builds millions of small objects. The process is about to end, so
    the cyclic collector is off for the whole run (it would walk them again and again and
    find nothing to free), and the exit skips freeing them one by one: output is flushed
    and atexit handlers run, then the process leaves.
    """
    gc.disable()
    code: int | str | None = 0
    try:
        main(prog_name="topogen")
    except SystemExit as exc:
        code = exc.code
    if isinstance(code, str):
        click.echo(code, err=True)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(code or 0)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="topogen")
def main() -> None:
    """Co-locate distributed training groups where their network policy allows their traffic."""


def config_option(f: F) -> F:
    return click.option(
        "-c",
        "--config",
        "config_path",
        default="topogen.yaml",
        show_default=True,
        type=click.Path(dir_okay=False),
        help="the topogen.yaml to read",
    )(f)


def cluster_option(f: F) -> F:
    return click.option(
        "--cluster",
        "clusters",
        multiple=True,
        help="only this cluster of topogen.yaml (repeatable)",
    )(f)


def allow_outside_option(f: F) -> F:
    return click.option(
        "--allow-outside-paths",
        "allow_outside",
        is_flag=True,
        help="read input paths of topogen.yaml outside its folder (interactive use; the "
        "Argo CD plugin never passes it)",
    )(f)


def _namespace(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", value):
        raise click.BadParameter(f"{value!r} is not a namespace name", ctx, param)
    return value


def namespace_option(f: F) -> F:
    return click.option(
        "-n",
        "--namespace",
        "namespace",
        metavar="NS",
        callback=_namespace,
        help="where inputs that name no namespace apply, as `kubectl apply -n` "
        "(default: topogen.yaml's defaultNamespace, else default)",
    )(f)


def verbose_option(f: F) -> F:
    return click.option(
        "-v", "--verbose", is_flag=True, help="also list skipped objects and warnings on stderr"
    )(f)
