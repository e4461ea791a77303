"""The templates' compiled code, kept between runs: Jinja2's bytecode cache in the user's
cache folder ($XDG_CACHE_HOME/topogen/templates, else ~/.cache/topogen/templates).

Compiling the templates is most of a small render's start-up; loading their code is a
fraction of it. A cached template is used only when its source's checksum matches
(Jinja2's own check) and it was compiled by the same Jinja2 and Python for an environment
with the same options (the key), so the code run is the code a compile would give and
the output is the same byte for byte. A cache that cannot be read or written (a read-only
home, a full disk) is skipped: the templates are then compiled as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
from pathlib import Path

import jinja2
from jinja2.bccache import Bucket

from topogen.codecache import cache_root

__all__ = ["TemplateCache", "cache_folder"]


def cache_folder() -> Path | None:
    """$XDG_CACHE_HOME/topogen/templates or ~/.cache/topogen/templates (None: no home)."""
    root = cache_root()
    return root / "templates" if root is not None else None


def _environment_key(env: jinja2.Environment) -> str:
    """What the compiled code of a template depends on besides its source."""
    finalize = env.finalize
    options = (
        jinja2.__version__,
        sys.version,
        env.block_start_string,
        env.block_end_string,
        env.variable_start_string,
        env.variable_end_string,
        env.comment_start_string,
        env.comment_end_string,
        env.line_statement_prefix,
        env.line_comment_prefix,
        env.trim_blocks,
        env.lstrip_blocks,
        env.newline_sequence,
        env.keep_trailing_newline,
        repr(env.autoescape),
        env.optimized,
        env.undefined.__qualname__,
        None if finalize is None else f"{finalize.__module__}.{finalize.__qualname__}",
        tuple(sorted(env.extensions)),
        env.is_async,
    )
    return hashlib.sha256(repr(options).encode()).hexdigest()


class TemplateCache(jinja2.BytecodeCache):
    """A file per template (named by the hash of the environment's key, the template's
    name and path), written atomically; errors mean no cache, never a failed render."""

    def __init__(self, folder: Path, env: jinja2.Environment) -> None:
        self.folder = folder
        self.env_key = _environment_key(env)

    def get_cache_key(self, name: str, filename: str | None = None) -> str:
        return hashlib.sha256(f"{self.env_key}|{name}|{filename}".encode()).hexdigest()

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            with open(self.folder / bucket.key, "rb") as f:
                bucket.load_bytecode(f)
        except Exception:  # missing, unreadable or damaged: compile instead
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        with contextlib.suppress(OSError):
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    bucket.write_bytecode(f)
                os.replace(tmp, self.folder / bucket.key)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
