"""MkDocs hook: links from a page to files of the repository outside docs/.

A page links to `../../examples/zone-split/` as it would on GitHub (the path relative to
the page's file, so the Markdown reads right in a checkout too). Such a link leaves the
site, so the hook turns it into a link to the repository (repo_url, branch main); a link
to a path that does not exist is a warning, which `mkdocs build --strict` makes fatal.
Links inside docs/ are left to MkDocs' own validation (mkdocs.yml: validation).
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.plugins.topogen")

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_LINK = re.compile(r"(\]\()([^)\s]+)(\))")
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)
BRANCH = "main"


def repo_link(target: str, page_src: Path, docs_dir: Path, repo_url: str) -> str | None:
    """The repository URL for a link leaving docs/; None: a link MkDocs checks itself.
    ValueError: the path is outside the repository or does not exist."""
    if _EXTERNAL.match(target) or target.startswith(("#", "/")):
        return None
    path, _, fragment = target.partition("#")
    # the path as written (no symlinks resolved): a copy of the site's folders may link them
    resolved = Path(os.path.normpath(page_src.parent / path))
    docs = Path(os.path.normpath(docs_dir))
    root = docs.parent
    if resolved == docs or docs in resolved.parents:
        return None
    if root != resolved and root not in resolved.parents:
        raise ValueError(f"{target} is outside the repository")
    if not resolved.exists():
        raise ValueError(f"{target} does not exist ({resolved.relative_to(root)})")
    kind = "tree" if resolved.is_dir() else "blob"
    rel = resolved.relative_to(root).as_posix()
    return f"{repo_url.rstrip('/')}/{kind}/{BRANCH}/{rel}" + (f"#{fragment}" if fragment else "")


def rewrite(markdown: str, page_src: Path, docs_dir: Path, repo_url: str) -> tuple[str, list[str]]:
    """The page with its repository links rewritten, and the broken ones (code aside)."""
    out: list[str] = []
    broken: list[str] = []
    fenced = False

    def link(m: re.Match[str]) -> str:
        try:
            url = repo_link(m[2], page_src, docs_dir, repo_url)
        except ValueError as exc:
            broken.append(str(exc))
            return m[0]
        return m[0] if url is None else f"{m[1]}{url}{m[3]}"

    for line in markdown.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        if fenced or _FENCE.match(line):
            out.append(line)
            continue
        pieces, last = [], 0
        for span in _CODE_SPAN.finditer(line):
            pieces.append(_LINK.sub(link, line[last : span.start()]))
            pieces.append(span[0])
            last = span.end()
        pieces.append(_LINK.sub(link, line[last:]))
        out.append("".join(pieces))
    return "".join(out), broken


def on_page_markdown(markdown: str, *, page: Any, config: Any, files: Any) -> str:
    docs_dir = Path(config["docs_dir"])
    src = docs_dir / page.file.src_path
    text, broken = rewrite(markdown, src, docs_dir, config["repo_url"])
    for problem in broken:
        log.warning(
            "Doc file '%s' contains a broken repository link: %s", page.file.src_path, problem
        )
    return text
