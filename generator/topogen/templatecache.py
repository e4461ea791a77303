"""The templates' compiled code, kept between runs in the user's cache folder
($XDG_CACHE_HOME/topogen/templates, else ~/.cache/topogen/templates), and Jinja2 loaded
without the parts a render does not use.

Compiling the templates is most of a small render's start-up; loading their code is a
fraction of it. A template's code is kept in a file named by the hash of its source, its
name and path, the environment's options, Jinja2's and Python's versions: a kept code is
the code a compile would give, so the output is the same byte for byte. A cache that
cannot be read or written (a read-only home, a full disk) is skipped: the templates are
then compiled as before.

Jinja2's package __init__ imports its bytecode cache and loaders, and with them hashlib
(OpenSSL), tempfile, shutil and pickle: milliseconds a render does not need. jinja()
imports jinja2.environment without running the package's __init__ when nothing has
imported jinja2 yet; the package's own names are filled in on first use, so any later
`import jinja2` in the process sees the whole package.
"""

from __future__ import annotations

import contextlib
import importlib.util
import marshal
import os
import sys
from collections.abc import MutableMapping
from pathlib import Path
from types import CodeType, ModuleType
from typing import TYPE_CHECKING, Any

from topogen.codecache import cache_root

try:  # the built-in module: hashlib would load OpenSSL first
    from _blake2 import blake2b as _blake2b
except ImportError:  # pragma: no cover (a Python built without it)
    from hashlib import blake2b as _blake2b

if TYPE_CHECKING:
    import jinja2

__all__ = ["TemplateLoader", "cache_folder", "jinja"]


def cache_folder() -> Path | None:
    """$XDG_CACHE_HOME/topogen/templates or ~/.cache/topogen/templates (None: no home)."""
    root = cache_root()
    return root / "templates" if root is not None else None


def _package_on_first_use(package: ModuleType, spec: Any) -> None:
    """Run the package's __init__ when a name it defines is first asked for (its
    submodules' names are left to the import system)."""
    folder = Path(spec.origin).parent

    def __getattr__(name: str) -> Any:
        if (folder / f"{name}.py").exists():
            raise AttributeError(name)
        vars(package).pop("__getattr__", None)
        spec.loader.exec_module(package)
        return getattr(package, name)

    vars(package)["__getattr__"] = __getattr__


def jinja() -> tuple[ModuleType, ModuleType]:
    """jinja2.environment and jinja2.runtime, without jinja2/__init__.py's imports when
    the package is not imported yet."""
    if "jinja2" not in sys.modules:
        spec = importlib.util.find_spec("jinja2")
        if spec is not None and spec.origin and spec.loader is not None:
            package = importlib.util.module_from_spec(spec)
            _package_on_first_use(package, spec)
            sys.modules["jinja2"] = package
    import jinja2.environment
    import jinja2.runtime

    return jinja2.environment, jinja2.runtime


def _jinja_version() -> bytes:
    """Jinja2's __init__.py (it holds __version__), read rather than run."""
    init = Path(sys.modules["jinja2"].__spec__.origin or "")  # type: ignore[union-attr]
    try:
        return init.read_bytes()
    except OSError:
        return b"?"


def _environment_key(env: jinja2.Environment) -> bytes:
    """What the compiled code of a template depends on besides its source."""
    finalize = env.finalize
    options = (
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
    return _jinja_version() + repr(options).encode()


class TemplateLoader:
    """A Jinja2 loader of the files under `templates` (as FileSystemLoader: UTF-8, the
    same file names and up-to-date check) whose compiled code is kept in `folder`, a
    file per template and source, written atomically; a cache error means a compile,
    never a failed render."""

    def __init__(self, templates: Path, folder: Path | None, env: jinja2.Environment) -> None:
        self.templates = str(templates)
        self.folder = folder
        self.env_key = _environment_key(env)

    def load(
        self,
        environment: jinja2.Environment,
        name: str,
        globals: MutableMapping[str, Any] | None = None,
    ) -> jinja2.Template:
        from jinja2.exceptions import TemplateNotFound

        pieces = []  # as Jinja2's split_template_path
        for piece in name.split("/"):
            if os.path.sep in piece or (os.path.altsep and os.path.altsep in piece):
                raise TemplateNotFound(name)
            if piece == os.path.pardir:
                raise TemplateNotFound(name)
            if piece and piece != ".":
                pieces.append(piece)
        filename = os.path.normpath(os.path.join(self.templates, *pieces))
        try:
            with open(filename, encoding="utf-8") as f:
                source = f.read()
            mtime = os.path.getmtime(filename)
        except OSError:
            raise TemplateNotFound(name) from None

        def uptodate() -> bool:
            try:
                return os.path.getmtime(filename) == mtime
            except OSError:
                return False

        code = self._code(environment, source, name, filename)
        return environment.template_class.from_code(environment, code, globals or {}, uptodate)

    def _code(
        self, environment: jinja2.Environment, source: str, name: str, filename: str
    ) -> CodeType:
        kept: Path | None = None
        if self.folder is not None:
            text = b"|".join((self.env_key, name.encode(), filename.encode(), source.encode()))
            kept = self.folder / _blake2b(text, digest_size=20).hexdigest()
            with contextlib.suppress(OSError, EOFError, ValueError, TypeError):
                code = marshal.loads(kept.read_bytes())
                if type(code) is CodeType:
                    return code
        code = environment.compile(source, name, filename)
        if kept is not None:
            _write_atomically(kept, marshal.dumps(code))
        return code


def _write_atomically(path: Path, data: bytes) -> None:
    """path's new content, or (an error) the old one: a temporary file of this process
    in the same folder, renamed; never a link followed."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.parent / f".tmp-{os.getpid()}-{path.name}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(tmp, flags, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
