"""One error root for the whole package; the CLI maps these to exit codes."""

from __future__ import annotations

__all__ = ["CheckFailed", "InputError", "PlanError", "TopogenError"]


class TopogenError(Exception):
    """Base of every error topogen raises on purpose."""

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        self.hint = hint

    def __str__(self) -> str:
        where = ""
        if self.path:
            where = f"{self.path}:{self.line}: " if self.line else f"{self.path}: "
        text = f"{where}{self.message}"
        if self.hint:
            text += f" ({self.hint})"
        return " ".join(text.split("\n"))


class InputError(TopogenError):
    """Bad input: a file, a config key, a manifest. Exit code 2."""


class PlanError(TopogenError):
    """No enforcement can be planned without leaving pods Pending. Exit code 1."""

    exit_code = 1


class CheckFailed(TopogenError):
    """A check found something (drift, conflicts). Exit code 1."""

    exit_code = 1
