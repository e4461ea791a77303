"""What goes wrong, as data: one error root for the whole package (the CLI maps these to
exit codes), a refused group, and a warning about one cluster."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CheckFailed", "InputError", "Notice", "PlanError", "Refusal", "TopogenError"]


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


@dataclass(frozen=True)
class Refusal:
    """A group render refuses (no domain can hold it), or a cluster's engine it cannot
    render (group None): `reason` as the plan states it (naming its group)."""

    cluster: str
    group: str | None
    reason: str

    def __str__(self) -> str:
        return f"cluster {self.cluster}: {self.reason}"


class Notice(str):
    """A warning (or note) about one cluster and maybe one of its groups. It reads as its
    text, `cluster <name>: <message>`; the fields say whose it is."""

    cluster: str
    group: str | None
    message: str

    def __new__(cls, cluster: str, message: str, group: str | None = None) -> Notice:
        self = super().__new__(cls, f"cluster {cluster}: {message}")
        self.cluster, self.message, self.group = cluster, message, group
        return self

    def __getnewargs__(self) -> tuple[str, str, str | None]:  # type: ignore[override]
        return self.cluster, self.message, self.group
