"""`topogen completion bash|zsh|fish`: the shell completion script, from click's own."""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

from topogen.cli import SHORT_HELP, main

_SHELLS = ("bash", "zsh", "fish")


class _Shell(click.Choice[str]):
    """A shell click has a completion script for; any other is named as such."""

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> str:
        if value not in self.choices:
            raise click.UsageError(
                f"no completion script for the shell {value!r}: topogen has one for bash, "
                "zsh and fish",
                ctx,
            )
        return str(value)


@main.command("completion", short_help=SHORT_HELP["completion"])
@click.argument("shell", metavar="SHELL", type=_Shell(_SHELLS))
def completion_command(shell: str) -> None:
    """Print the completion script for SHELL: commands, options, formats and files.

    \b
    bash:  eval "$(topogen completion bash)"      (in ~/.bashrc)
    zsh:   eval "$(topogen completion zsh)"       (in ~/.zshrc)
    fish:  topogen completion fish > ~/.config/fish/completions/topogen.fish

    Exit 0, or 2 for an unknown shell.
    """
    cls = get_completion_class(shell)
    if cls is None:  # click knows all three; a guard for an older click
        raise click.UsageError(f"no completion for {shell}")
    click.echo(cls(main, {}, "topogen", "_TOPOGEN_COMPLETE").source())
