"""Start-up: compiled code kept between runs (topogen/codecache.py, topogen/templatecache.py)
changes nothing but the time: every dataclass method made from the cache is the one a
compile makes, a command's output is the same with an empty, a warm, a damaged or an
unwritable cache, and the cache is written only in its folder."""

from __future__ import annotations

import inspect
import marshal
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from topogen import codecache
from topogen.packfile import Pack

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "examples" / "zone-split" / "topogen.yaml"

# every module of topogen imported with each dataclass's methods made from their text
# twice more, from the cached code (an in-memory cache: first a compile, then a hit), and
# compared with what the builtin exec made of the text
_SAME_METHODS = """
import builtins, dataclasses, importlib, pkgutil
made = []

def both(source, globals=None, ns=None, /):
    builtins.exec(source, globals, ns)
    for _ in range(2):
        again = {}
        cached(source, globals, again)
        assert again.keys() == ns.keys(), source
        for name, fn in ns.items():
            other = again[name]
            assert fn.__code__ == other.__code__, source
            assert fn.__globals__ is other.__globals__ and fn.__name__ == other.__name__
            assert fn.__defaults__ == other.__defaults__, source
    made.append(source)

dataclasses.exec = both  # before topogen: its install() then leaves this one alone
from topogen import codecache
assert dataclasses.exec is both
cached = codecache._cached_exec(codecache._CodeCache(None))
import topogen
for m in pkgutil.walk_packages(topogen.__path__, "topogen."):
    importlib.import_module(m.name)
print(len(made), len({s.split("(", 1)[0] for s in made}))
"""


# every dataclass of topogen and its __doc__, with install() (argv "cached") or with
# dataclasses.py left as it is ("plain": install() leaves another tool's exec alone)
_DOCS = """
import builtins, dataclasses, importlib, pkgutil, sys
if sys.argv[1] == "plain":
    dataclasses.exec = builtins.exec
import topogen
docs = {}
for m in pkgutil.walk_packages(topogen.__path__, "topogen."):
    for v in list(vars(importlib.import_module(m.name)).values()):
        if isinstance(v, type) and dataclasses.is_dataclass(v) and v.__module__ == m.name:
            docs[m.name + "." + v.__qualname__] = v.__doc__
print(repr(sorted(docs.items())))
"""


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(cache)}


def _run(args: list[str], cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "topogen", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(cache),
        cwd=REPO,
    )


def test_every_dataclass_method_from_the_cache_is_the_compiled_one(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _SAME_METHODS],
        capture_output=True,
        text=True,
        timeout=300,
        # (modulecache and patterncache write files of their own)
        env={**_env(tmp_path), "TOPOGEN_MODULE_CACHE": "0", "TOPOGEN_PATTERN_CACHE": "0"},
        check=True,
    )
    made, kinds = (int(n) for n in out.stdout.split())
    assert made > 300 and kinds >= 1  # every dataclass of topogen, each method or class
    assert not (tmp_path / "topogen").exists()  # an in-memory cache writes nothing


def test_a_dataclass_doc_made_on_first_read_is_the_one_dataclasses_makes(
    tmp_path: Path,
) -> None:
    docs = [
        subprocess.run(
            [sys.executable, "-c", _DOCS, how],
            capture_output=True,
            text=True,
            timeout=300,
            env=_env(tmp_path),
            check=True,
        ).stdout
        for how in ("plain", "cached")
    ]
    assert docs[0] == docs[1]
    made = [doc for name, doc in eval(docs[0]) if doc.startswith(name.rsplit(".", 1)[1] + "(")]
    assert len(made) > 20  # the classes without a docstring of their own


def _classes() -> list[type]:
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int
        label: str = "a"

    @dataclasses.dataclass(slots=True)
    class Slotted:
        x: int

    @dataclasses.dataclass(frozen=True)
    class Documented(Point):
        """Its own."""

    @dataclasses.dataclass(frozen=True)
    class Child(Point):
        y: float = 0.5

    class Plain(Child):
        pass

    return [Point, Slotted, Documented, Child, Plain]


def test_a_dataclass_doc_is_the_one_dataclasses_makes_for_each_class(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import dataclasses

    import topogen  # noqa: F401  (install() has run)

    cached = [(c.__doc__, c.__dict__.get("__doc__") is None) for c in _classes()]
    assert _classes()[0](1).__doc__ == cached[0][0]  # an instance reads it too
    plain = inspect.unwrap(dataclasses._process_class)  # dataclasses.py's own
    monkeypatch.setattr(dataclasses, "_process_class", plain)
    assert cached == [(c.__doc__, c.__dict__.get("__doc__") is None) for c in _classes()]
    assert cached[0][0] == "Point(x: 'int', label: 'str' = 'a')" and cached[2][0] == "Its own."
    assert cached[4] == (None, True)  # a plain subclass: no doc of its own, as ever


def test_a_command_writes_the_cache_once_and_reads_it_after(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _run(["render", "--stdout", "-c", str(CONFIG)], cache)
    files = sorted(p for p in cache.rglob("*") if p.is_file())
    assert [p.parent.name for p in files].count("templates") >= 5
    (dataclass_code,) = [p for p in files if p.name.startswith("dataclasses-")]  # one file
    kept = Pack(dataclass_code, codecache._MAGIC).index  # an item per module
    assert {"topogen.model", "topogen.errors"} <= set(kept)
    written = {p: p.stat().st_mtime_ns for p in files}
    second = _run(["render", "--stdout", "-c", str(CONFIG)], cache)
    assert (second.returncode, second.stdout, second.stderr) == (
        first.returncode,
        first.stdout,
        first.stderr,
    )
    assert {p: p.stat().st_mtime_ns for p in files} == written  # hits: nothing rewritten
    assert not [p for p in cache.rglob(".tmp-*")]
    assert {p.relative_to(cache).parts[0] for p in cache.rglob("*")} == {"topogen"}


@pytest.mark.parametrize("command", [["analyze"], ["render", "--stdout"]])
def test_output_is_the_same_whatever_the_cache(tmp_path: Path, command: list[str]) -> None:
    args = [*command, "-c", str(CONFIG)]
    cold = _run(args, tmp_path / "a")
    warm = _run(args, tmp_path / "a")
    damaged_root = tmp_path / "b"
    _run(args, damaged_root)
    for p in damaged_root.rglob("*"):
        if p.is_file():
            p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2])
    damaged = _run(args, damaged_root)
    unwritable = tmp_path / "file"
    unwritable.write_text("not a folder", encoding="utf-8")
    nowhere = _run(args, unwritable)
    for other in (warm, damaged, nowhere):
        assert (other.returncode, other.stdout, other.stderr) == (
            cold.returncode,
            cold.stdout,
            cold.stderr,
        )
    assert cold.returncode in (0, 1) and cold.stdout


def _loader_env(templates: Path, folder: Path | None, **options: Any) -> Any:
    from topogen.templatecache import TemplateLoader, jinja

    environment, runtime = jinja()
    env = environment.Environment(undefined=runtime.StrictUndefined, **options)
    env.loader = TemplateLoader(templates, folder, env)
    return env


def test_a_kept_template_is_used_only_for_its_own_source_and_options(tmp_path: Path) -> None:
    templates, cache = tmp_path / "templates", tmp_path / "cache"
    templates.mkdir()
    (templates / "t.j2").write_text("a={{ x }}\n", encoding="utf-8")
    assert _loader_env(templates, cache).get_template("t.j2").render(x=1) == "a=1"
    assert len(list(cache.iterdir())) == 1
    (templates / "t.j2").write_text("b={{ x }}\n", encoding="utf-8")  # stale code kept
    assert _loader_env(templates, cache).get_template("t.j2").render(x=1) == "b=1"
    kept = _loader_env(templates, cache, keep_trailing_newline=True)  # other options
    assert kept.get_template("t.j2").render(x=1) == "b=1\n"
    assert len(list(cache.iterdir())) == 3
    for p in cache.iterdir():  # damaged, or not code: compiled again, output the same
        p.write_bytes(marshal.dumps("not code"))
    assert _loader_env(templates, cache).get_template("t.j2").render(x=2) == "b=2"
    assert not list(cache.glob(".tmp-*"))


def test_templates_load_as_the_file_system_loader_does(tmp_path: Path) -> None:
    import jinja2

    unwritable = tmp_path / "file"
    unwritable.write_text("not a folder", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "t.j2").write_text("{% include 'sub/u.j2' %}!", encoding="utf-8")
    (tmp_path / "sub" / "u.j2").write_text("u\r\n", encoding="utf-8")
    env = _loader_env(tmp_path, unwritable / "templates")
    plain = jinja2.Environment(loader=jinja2.FileSystemLoader(str(tmp_path)))
    for name in ("sub/t.j2", "./sub//t.j2"):
        mine, theirs = env.get_template(name), plain.get_template(name)
        assert (mine.render(), mine.filename) == (theirs.render(), theirs.filename)
    for name in ("../x.j2", "sub/missing.j2", "sub\\t.j2"):
        with pytest.raises(jinja2.TemplateNotFound):
            env.get_template(name)


def test_kept_code_is_made_again_when_its_entry_is_damaged_or_its_inputs_change(
    tmp_path: Path,
) -> None:
    from topogen import templatecache

    made: list[str] = []
    rules = tmp_path / "rules.py"
    rules.write_text("one", encoding="utf-8")

    def make() -> Any:
        made.append("x")
        return compile("a = 1", "<t>", "exec")

    def kept(key: bytes = b"k") -> Any:
        return templatecache.kept_code(tmp_path / "cache", key, (str(rules),), make)

    assert kept() is not None and kept() is not None and len(made) == 1  # kept, then read
    (entry,) = (tmp_path / "cache").iterdir()
    for damaged in (b"\x00garbage", marshal.dumps(("code", "not code")), marshal.dumps(1)):
        entry.write_bytes(damaged)
        assert kept() is not None
    assert len(made) == 4
    kept(b"other key")  # another key: made
    assert len(made) == 5
    templatecache._file_bytes.cache_clear()
    rules.unlink()  # what it depends on cannot be read: made, not kept
    kept()
    assert len(made) == 6 and len(list((tmp_path / "cache").iterdir())) == 2
    templatecache._file_bytes.cache_clear()
    unwritable = tmp_path / "file"
    unwritable.write_text("not a folder", encoding="utf-8")
    assert templatecache.kept_code(unwritable / "cache", b"k", (), make) is not None
