"""The thin click layer: parse options, call one core function, print, map errors to exits."""

from __future__ import annotations

import atexit
import contextlib
import errno
import gc
import importlib
import os
import re
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from topogen import __version__
from topogen.errors import InternalError, TopogenError

__all__ = [
    "INTERRUPTED",
    "SHORT_HELP",
    "allow_outside_option",
    "cluster_choice_option",
    "cluster_option",
    "config_option",
    "main",
    "namespace_option",
    "resolve_config_path",
    "run",
    "verbose_option",
]

F = TypeVar("F", bound=Callable[..., Any])


# each command lives in the module of its name, imported when the command runs, so
# `topogen render` does not pay for importing `diff` and its dependencies; `topogen --help`
# lists them from this table and imports none (each command's short_help is this text)
SHORT_HELP = {
    "analyze": "Find training groups whose placement can break their own traffic.",
    "audit": "Audit the live training groups, pod by pod.",
    "completion": "Print the shell completion script (bash, zsh or fish).",
    "connectivity": "List what each workload may open to each other workload.",
    "diff": "Compare generated output semantically.",
    "explain": "Explain whether one workload may open a connection to another.",
    "init": "Scaffold topogen.yaml in a GitOps repository.",
    "render": "Render admission policies, CLI tests and signals.",
    "snapshot": "Write a live cluster's nodes and policies to a snapshot file.",
}
_COMMANDS = tuple(SHORT_HELP)


# ctx.meta key: the output trees in which this command found an interrupted render
INTERRUPTED = "topogen.interrupted"


class _Command(click.Command):
    """Every command first finishes (or rolls back) a render interrupted in the output
    trees it names (emit/journal.py), before it does anything else."""

    def invoke(self, ctx: click.Context) -> Any:
        _finish_interrupted(ctx)
        return super().invoke(ctx)

    def make_parser(self, ctx: click.Context) -> Any:
        """click's parser, which tries a short option (-c) as a long one first and drops
        the miss at once: that miss is made without close matches (difflib, milliseconds
        on every start-up); a mistyped long option still gets them."""
        parser = super().make_parser(ctx)
        match_long, short, long = (
            getattr(parser, n, None) for n in ("_match_long_opt", "_short_opt", "_long_opt")
        )
        if match_long is None or not isinstance(short, dict) or not isinstance(long, dict):
            return parser  # another click: its own parsing, unchanged

        def _match_long_opt(opt: str, explicit_value: str | None, state: Any) -> None:
            if opt in short and opt not in long:  # matched as the short option next
                raise click.NoSuchOption(opt, ctx=ctx)
            match_long(opt, explicit_value, state)

        parser._match_long_opt = _match_long_opt  # type: ignore[method-assign]
        return parser


def _trees_named(params: dict[str, Any]) -> list[str]:
    """The output trees a command's options name: --out, else the config's folder; the
    folders it compares or scaffolds; else the working folder."""
    found = []
    if params.get("out_dir"):
        found.append(str(params["out_dir"]))
    elif params.get("config_path"):
        found.append(os.path.dirname(str(params["config_path"])) or ".")
    found += [str(t) for t in params.get("trees") or ()]
    against, directory = params.get("against"), params.get("directory")
    if against and os.path.isdir(str(against)):
        found.append(str(against))
    if directory:
        found.append(str(directory))
    return list(dict.fromkeys(found or ["."]))


def _finish_interrupted(ctx: click.Context) -> None:
    from pathlib import Path

    from topogen.emit.leftovers import interrupted

    for tree in _trees_named(ctx.params):
        if not interrupted(Path(tree)):
            continue  # (almost always: the journal's module stays unloaded)
        from topogen.emit.journal import finish

        done = finish(Path(tree))
        if done is None:
            continue
        if done.finished is not None or done.busy:
            ctx.meta.setdefault(INTERRUPTED, []).append(tree)
        if done.finished is not None:
            click.echo(
                f"topogen: finished a render that was interrupted in {tree}/ (from its "
                f"journal: {done.finished} file(s) still to write or remove)",
                err=True,
            )
        if done.removed:
            click.echo(
                f"topogen: removed what an interrupted render left: {', '.join(done.removed)}",
                err=True,
            )


class _Group(click.Group):
    """Maps TopogenError to its exit code with one line on stderr; never a traceback.
    Imports a command's module when the command is asked for."""

    command_class = _Command

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
            click.echo(exc.format_message())  # `topogen` alone asks for help: given, exit 0
            sys.exit(0)
        except click.ClickException as exc:
            click.echo(f"topogen: error: {_one_line(exc.format_message())}", err=True)
            sys.exit(2 if exc.exit_code in (1, 2) else exc.exit_code)
        except click.exceptions.Abort:
            click.echo("topogen: aborted", err=True)
            sys.exit(1)
        except OSError as exc:  # --version or --help written to a full disk
            if not _stdout_failed(exc):
                raise
            _stdout_refusal(exc)
        sys.exit(rv if isinstance(rv, int) else 0)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, SHORT_HELP.get(name, "")) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            import difflib  # only on a mistyped command: kept off every start-up

            close = difflib.get_close_matches(name, self.list_commands(ctx), n=2, cutoff=0.6)
            hint = " Did you mean " + " or ".join(repr(c) for c in close) + "?" if close else ""
            ctx.fail(f"No such command {name!r}.{hint}")
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        yamlio = sys.modules.get("topogen.sources.yamlio")
        if yamlio is not None:  # a command reads its files afresh (a test runs many)
            yamlio.new_run()
        try:
            return super().invoke(ctx)
        except InternalError as exc:  # a broken invariant: a bug, not the input
            if os.environ.get("TOPOGEN_DEBUG"):
                raise
            click.echo(f"topogen: internal error: {exc} ({_REPORT})", err=True)
            sys.exit(exc.exit_code)
        except TopogenError as exc:
            click.echo(f"topogen: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except RecursionError:
            click.echo("topogen: error: input nested too deeply", err=True)
            sys.exit(2)
        except (click.exceptions.Exit, click.ClickException, SystemExit, KeyboardInterrupt):
            raise
        except OSError as exc:
            if _stdout_failed(exc):
                _stdout_refusal(exc)
            _internal(exc)
        except Exception as exc:  # a bug: say so in one line, keep the trace on request
            _internal(exc)


_REPORT = "set TOPOGEN_DEBUG=1 for the traceback; please report it"


def _internal(exc: Exception) -> None:
    if os.environ.get("TOPOGEN_DEBUG"):
        raise exc
    click.echo(f"topogen: internal error: {type(exc).__name__}: {exc} ({_REPORT})", err=True)
    sys.exit(3)


def _stdout_failed(exc: OSError) -> bool:
    """Whether `exc` is standard output refusing a write (a full disk, a closed pipe's
    neighbour errors): the place the user sent the output to, not a bug."""
    try:
        sys.stdout.flush()
    except OSError:
        return True
    return exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG) and not exc.filename


def _stdout_refusal(exc: OSError) -> None:
    """One line, exit 2: what the output could not be written to and why."""
    with contextlib.suppress(OSError):
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - nothing more reaches the full file
    reason = exc.strerror or str(exc)
    click.echo(f"topogen: error: cannot write to standard output: {reason}", err=True)
    sys.exit(2)


def _one_line(text: str) -> str:
    return " ".join(text.split())


_UNFREED: list[BaseException] = []


def run() -> None:
    """The console script: main(), then a quick exit.

    A fleet-sized run builds millions of small objects. The process is about to end, so
    the cyclic collector is off for the whole run (it would walk them again and again and
    find nothing to free), and the exit skips freeing them one by one: output is flushed
    and atexit handlers run, then the process leaves (the command's objects never freed).
    """
    gc.disable()
    code: int | str | None = 0
    try:
        main(prog_name="topogen")
    except SystemExit as exc:
        code = exc.code
        # its traceback holds the command's frames: kept, they are not freed object by
        # object when the handler ends (a fleet's analysis took about 3% of the run)
        _UNFREED.append(exc)
    if isinstance(code, str):
        click.echo(code, err=True)
        code = 1
    try:
        sys.stdout.flush()
    except OSError as exc:  # the last of the output, to a full disk
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        click.echo(
            f"topogen: error: cannot write to standard output: {exc.strerror or exc}", err=True
        )
        code = 2
    sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(code or 0)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="topogen")
def main() -> None:
    """Co-locate distributed training groups where their network policy allows their traffic."""


def resolve_config_path(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """-c DIR reads DIR/topogen.yaml."""
    if value and os.path.isdir(value):
        return os.path.join(value, "topogen.yaml")
    return value


def config_option(f: F) -> F:
    return click.option(
        "-c",
        "--config",
        "config_path",
        default="topogen.yaml",
        show_default=True,
        metavar="FILE|DIR",
        type=click.Path(),
        callback=resolve_config_path,
        help="the topogen.yaml to read (a folder: its topogen.yaml)",
    )(f)


def cluster_option(f: F) -> F:
    return click.option(
        "--cluster",
        "clusters",
        metavar="NAME",
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


def cluster_choice_option(
    help: str = "the cluster of topogen.yaml to read (default: the first)",
) -> Callable[[F], F]:
    """--cluster where a command reads one cluster: repeatable in syntax as everywhere,
    but given twice it says so instead of keeping the last silently."""
    return click.option(
        "--cluster",
        "cluster",
        metavar="NAME",
        multiple=True,
        callback=_one_cluster,
        help=help,
    )


def _one_cluster(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> str | None:
    if len(set(value)) > 1:
        raise click.BadParameter(
            f"{ctx.info_name} reads one cluster at a time, got {', '.join(value)}: run it once "
            "per cluster",
            ctx,
            param,
        )
    return value[0] if value else None


def verbose_option(f: F) -> F:
    return click.option(
        "-v", "--verbose", is_flag=True, help="say more on stderr (skipped objects, counts)"
    )(f)
