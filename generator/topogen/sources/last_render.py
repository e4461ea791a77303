"""The domains the last render gave each group and known job, read back from its output tree.

render writes them to policies/<cluster>/placements.yaml (render/placements.py), a plain
file of the tree beside the policies: it is committed with them, so it survives any git
checkout, and Argo CD streams it to the plugin with the rest of the repository (a file in
a plain folder, not under a dot-folder an operator's tarball exclusions may leave out).
The next render keeps each job where it is (plan/assignment.py). No file: a first render,
every job placed afresh. A file that does not read: an error naming it (fail closed; a
merge conflict is resolved by hand, or the file deleted to place every job afresh).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from topogen.errors import InputError
from topogen.model import LAST_PLACEMENTS_FILE, LastPlacements
from topogen.yamltext import display_path, load_yaml_text

__all__ = ["placements_path", "read_last_placements"]

_HINT = (
    "fix it (a merge conflict: keep either side, or delete the file and every job is "
    "placed afresh), then render again"
)


def placements_path(out: Path, cluster: str) -> Path:
    return out / "policies" / cluster / LAST_PLACEMENTS_FILE


def read_last_placements(out: Path, cluster: str) -> LastPlacements | None:
    """The cluster's placements file under the output tree `out`, or None when there is none."""
    path = placements_path(out, cluster)
    if not path.is_file():
        return None
    shown = display_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the last render's placements: {exc}", path=shown) from None
    docs = [d for d in load_yaml_text(text, shown) if d is not None]
    if len(docs) != 1 or not isinstance(docs[0], dict) or docs[0].get("kind") != "Placements":
        raise InputError("not a topogen Placements document", path=shown, hint=_HINT)
    groups: dict[str, str] = {}
    jobs: dict[tuple[str, str], str] = {}
    queued: set[tuple[str, str]] = set()
    for g in _items(docs[0], "groups", shown):
        name, domain = _text(g, "name", shown), g.get("domain")
        if isinstance(domain, str) and domain:
            groups[name] = domain
        for j in _items(g, "jobs", shown):
            key = (name, _text(j, "job", shown))
            jobs[key] = _text(j, "domain", shown)
            if j.get("queued") is True:
                queued.add(key)
    return LastPlacements(shown, groups, jobs, frozenset(queued))


def _items(doc: dict[str, Any], key: str, shown: str) -> list[dict[str, Any]]:
    value = doc.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise InputError(f"{key}: expected a list of mappings", path=shown, hint=_HINT)
    return value


def _text(doc: dict[str, Any], key: str, shown: str) -> str:
    value = doc.get(key)
    if not isinstance(value, str) or not value:
        raise InputError(f"{key}: expected a non-empty string", path=shown, hint=_HINT)
    return value
