"""Fail closed: what a render that refuses a group would have taken away, and the one line
that says so.

When a group is refused, `topogen render` writes nothing (unless asked for a partial
render): the tree keeps the group's policies, and an Argo CD sync of it prunes none.
This names those policies, so the message says what a partial render would remove. On a
fleet, a group's reason lists every job and domain (tens of kilobytes): the line keeps
the first job's reason (at most REASON characters), counts the rest, and names the
command that shows them all (`topogen analyze`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

from topogen.errors import Refusal
from topogen.render.vocabulary import GROUP_LABEL

__all__ = ["REASON", "policies_of", "refusal_line"]

REASON = 300  # characters of the first refusal's reason on the line
_JOBS = " | "  # how a plan joins its jobs' reasons (plan/planner.py)


def refusal_line(refused: Sequence[Refusal], what: str, config: str) -> str:
    """The line for a render's refusals: the first one's reason (its first job's, cut at
    REASON characters), `what` the render did instead, how many other groups were refused,
    and the command that shows every reason; `config` as the user gave it."""
    first, *others = refused
    jobs = first.reason.split(_JOBS)
    reason = _cut(jobs[0], REASON)
    if len(jobs) > 1:
        reason += f" (and {len(jobs) - 1} more job(s))"
    line = f"cluster {first.cluster}: {reason}; {what}"
    if others:
        names = [f"{r.cluster}/{r.group}" if r.group else f"cluster {r.cluster}" for r in others]
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        line += f"; {len(others)} more refused ({shown})"
    return f"{line}; `topogen analyze -c {config}` shows every reason"


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: text.rfind(" ", 0, limit)].rstrip(",;:") + " ..."


_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def policies_of(out: Path, refused: Iterable[tuple[str, str]]) -> list[str]:
    """`kind name` of every object of the refused (cluster, group)s in the tree at `out`
    (policies/<cluster>/, the objects labelled with the group; CLI tests aside)."""
    found: set[str] = set()
    for cluster, group in refused:
        root = out / "policies" / cluster
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "tests")
            for name in sorted(filenames):
                if name.endswith((".yaml", ".yml")):
                    found.update(_objects(Path(dirpath) / name, group))
    return sorted(found)


def _objects(path: Path, group: str) -> list[str]:
    try:
        docs = list(yaml.load_all(path.read_text(encoding="utf-8"), Loader=_Loader))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []
    out = []
    for d in docs:
        meta = d.get("metadata") if isinstance(d, dict) else None
        if not isinstance(meta, dict):
            continue
        labels = meta.get("labels")
        if isinstance(labels, dict) and labels.get(GROUP_LABEL) == group:
            out.append(f"{d.get('kind')} {meta.get('name')}")
    return out
