"""The templates' compiled code, kept between runs in the user's cache folder
($XDG_CACHE_HOME/topogen/templates, else ~/.cache/topogen/templates), and Jinja2 loaded
without the parts a render does not use.

Compiling the templates is most of a small render's start-up; loading their code is a
fraction of it. A template's code is kept in a file named by the hash of its source, its
name and path, the environment's options, Jinja2's and Python's versions: a kept code is
the code a compile would give, so the output is the same byte for byte. A cache that
cannot be read or written (a read-only home, a full disk) is skipped: the templates are
then compiled as before. kept_code() keeps any other code made from a template the same
way (render/base.py: a template's lite code, run without Jinja2).

Jinja2's package __init__ imports its bytecode cache and loaders, and with them hashlib
(OpenSSL), tempfile, shutil and pickle: milliseconds a render does not need. jinja()
imports jinja2.environment without running the package's __init__ when nothing has
imported jinja2 yet; the package's own names are filled in on first use, so any later
`import jinja2` in the process sees the whole package.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import marshal
import os
import sys
from _thread import RLock
from collections.abc import Callable, MutableMapping
from pathlib import Path
from types import CodeType, ModuleType
from typing import TYPE_CHECKING, Any

from topogen.packfile import cache_root, write_atomically

try:  # the built-in module: hashlib would load OpenSSL first
    from _blake2 import blake2b as _blake2b
except ImportError:  # pragma: no cover (a Python built without it)
    from hashlib import blake2b as _blake2b

if TYPE_CHECKING:
    import jinja2

__all__ = [
    "TemplateLoader",
    "cache_folder",
    "jinja",
    "jinja_runtime",
    "kept_code",
    "template_file",
    "template_source",
]


def cache_folder() -> Path | None:
    """$XDG_CACHE_HOME/topogen/templates or ~/.cache/topogen/templates (None: no home)."""
    root = cache_root()
    return root / "templates" if root is not None else None


# Threads rendering at once (a library caller's) load the package once, and none sees it
# half-filled: the names are asked for under this lock while __init__ runs.
_JINJA_LOCK = RLock()


def _package_on_first_use(package: ModuleType, spec: Any) -> None:
    """Run the package's __init__ when a name it defines is first asked for (its
    submodules' names are left to the import system)."""
    folder = Path(spec.origin).parent
    started: list[bool] = []

    def __getattr__(name: str) -> Any:
        if (folder / f"{name}.py").exists():
            raise AttributeError(name)
        with _JINJA_LOCK:
            if started:  # __init__ ran in another thread, or runs in this one
                if name in vars(package):
                    return vars(package)[name]
                raise AttributeError(name)
            started.append(True)
            spec.loader.exec_module(package)
            vars(package).pop("__getattr__", None)
        return getattr(package, name)

    vars(package)["__getattr__"] = __getattr__


def _jinja_package() -> None:
    """jinja2 in sys.modules, its __init__ run on first use of one of its names."""
    if "jinja2" in sys.modules:
        return
    with _JINJA_LOCK:
        if "jinja2" not in sys.modules:
            spec = importlib.util.find_spec("jinja2")
            if spec is not None and spec.origin and spec.loader is not None:
                package = importlib.util.module_from_spec(spec)
                _package_on_first_use(package, spec)
                sys.modules["jinja2"] = package


def jinja() -> tuple[ModuleType, ModuleType]:
    """jinja2.environment and jinja2.runtime, without jinja2/__init__.py's imports when
    the package is not imported yet."""
    _jinja_package()
    import jinja2.environment
    import jinja2.runtime

    return jinja2.environment, jinja2.runtime


def jinja_runtime() -> ModuleType:
    """jinja2.runtime alone (with what it imports), as jinja() loads it."""
    _jinja_package()
    import jinja2.runtime

    return jinja2.runtime


@functools.cache
def _jinja_version() -> bytes:
    """Jinja2's __init__.py (it holds __version__), read rather than run."""
    module = sys.modules.get("jinja2")
    spec = module.__spec__ if module is not None else importlib.util.find_spec("jinja2")
    init = Path((spec.origin if spec is not None else None) or "")
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


def template_file(templates: str, name: str) -> str | None:
    """The file of template `name` under `templates` (None: a name Jinja2's loader
    refuses, with a separator of the OS's or a `..`), as Jinja2's split_template_path."""
    pieces = []
    for piece in name.split("/"):
        if os.path.sep in piece or (os.path.altsep and os.path.altsep in piece):
            return None
        if piece == os.path.pardir:
            return None
        if piece and piece != ".":
            pieces.append(piece)
    return os.path.normpath(os.path.join(templates, *pieces))


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

        filename = template_file(self.templates, name)
        if filename is None:
            raise TemplateNotFound(name)
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
            write_atomically(kept, marshal.dumps(code))
        return code


def template_source(templates: Path, name: str) -> tuple[str, str] | None:
    """Template `name`'s file and text (None: no such template, Jinja2's loader says so)."""
    filename = template_file(str(templates), name)
    if filename is None:
        return None
    try:
        with open(filename, encoding="utf-8") as f:
            return filename, f.read()
    except OSError:
        return None


def kept_code(
    folder: Path | None, key: bytes, files: tuple[str, ...], make: Callable[[], CodeType | None]
) -> CodeType | None:
    """The code `make` gives (None too), kept in `folder` under `key` and the content of
    `files` (the whole of what it depends on besides Jinja2's and Python's versions)."""
    kept: Path | None = None
    if folder is not None:
        text = b"|".join((b"kept-1", _jinja_version(), sys.version.encode(), key))
        for name in files:
            content = _file_bytes(name)
            if content is None:
                return make()
            text += b"|" + content
        kept = folder / f"{_blake2b(text, digest_size=20).hexdigest()}.code"
        with contextlib.suppress(OSError, EOFError, ValueError, TypeError):
            entry = marshal.loads(kept.read_bytes())
            if _is_kept_code(entry):
                return entry[1]  # type: ignore[no-any-return]
    code = make()
    if kept is not None:
        write_atomically(kept, marshal.dumps(("code", code)))
    return code


@functools.cache
def _file_bytes(name: str) -> bytes | None:
    """A file a kept code depends on, read once a run (None: unreadable)."""
    try:
        with open(name, "rb") as f:
            return f.read()
    except OSError:
        return None


def _is_kept_code(entry: object) -> bool:
    """An entry kept_code() wrote: ("code", a code object or None)."""
    if type(entry) is not tuple or len(entry) != 2 or entry[0] != "code":
        return False
    return entry[1] is None or type(entry[1]) is CodeType
