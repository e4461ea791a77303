"""`topogen completion bash|zsh|fish`: the shell completion script, from click's own."""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

from topogen.cli import SHORT_HELP, main

_SHELLS = ("bash", "zsh", "fish")


@main.command("completion", short_help=SHORT_HELP["completion"])
@click.argument("shell", type=click.Choice(_SHELLS))
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
