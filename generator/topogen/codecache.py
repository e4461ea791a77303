"""Start-up: compiled code kept between runs in the user's cache folder
($XDG_CACHE_HOME/topogen, else ~/.cache/topogen).

Every frozen dataclass has its __init__, __repr__, __eq__, __hash__, __setattr__ and
__delattr__ written as source text and compiled when its module is imported: for the
hundred dataclasses of a command, that compiling was most of topogen's own start-up.
The text of each method depends only on the class's fields and options, so its compiled
code is kept, keyed by the text, in one file per Python version (an item per module,
mapped: packfile.py):
the next run reads the files of the modules it imports and executes the same code
without compiling it: the functions made are those
a compile gives (tests/core/test_codecache.py compares them). dataclasses.py compiles
through one call, exec(text, globals, ns); install() gives that module a name `exec` of
its own that runs the kept code of `text` (Python 3.11 to 3.13 alike). A cache that
cannot be read or written is skipped.

Beside the code, the file keeps each dataclass's recipe (classrecipes.py): a class of a
shape met before is then made from it, without dataclasses.py writing the texts again.

A dataclass without a docstring gets one from dataclasses.py, its name and its
__init__'s signature: inspect.signature, a tenth of a millisecond a class, for a text
nothing reads at run time. install() has that text made when __doc__ is first read
instead (the same text, tests/core/test_codecache.py compares them).
"""

from __future__ import annotations

import atexit
import builtins
import dataclasses
import inspect
import os
import sys
from pathlib import Path
from types import CodeType
from typing import Any

from topogen import classrecipes
from topogen.packfile import Items, cache_root

__all__ = ["install"]

_MAX_ENTRIES = 512  # a module's texts or recipes: past this, a run keeps only what it used
_FORMAT = 3  # the file's format (packfile.py), in its name too: two versions of topogen
# on one machine each keep their own file instead of taking turns rewriting one
_MAGIC = b"topogen-dataclasses-%d\n" % _FORMAT
_TEXTS = "/texts"  # a module's texts' item: the module's name and this


class _CodeCache:
    """Per module: {text: its code} and {class shape: its recipe}, each an item of the file
    (packfile.Items) read when first asked for (a module whose classes are all made from
    recipes never reads its texts). Code is keyed by the text itself: no hash to compute,
    and no two texts share a code."""

    def __init__(self, file: Path | None) -> None:
        self.items = Items(file, _MAGIC, _MAX_ENTRIES)
        self.save = self.items.save

    def compiled(self, text: str, module: str = "") -> CodeType:
        name = module + _TEXTS
        codes = self.items.item(name, _is_code)
        self.items.used[name].add(text)
        code = codes.get(text)
        if code is None:
            # as exec(text) compiles it in dataclasses.py: no __future__ flags of ours
            code = codes[text] = compile(text, "<string>", "exec", dont_inherit=True)
            self.items.changed.add(name)
        return code

    def recipe(self, module: str, key: tuple[Any, ...]) -> classrecipes.Recipe | None:
        recipes = self.items.item(module, _is_recipe)
        self.items.used[module].add(key)
        return recipes.get(key)

    def keep_recipe(self, module: str, key: tuple[Any, ...], recipe: classrecipes.Recipe) -> None:
        self.items.item(module, _is_recipe)[key] = recipe
        self.items.changed.add(module)


def _is_code(key: object, value: object) -> bool:
    return type(key) is str and type(value) is CodeType


def _is_recipe(key: object, value: object) -> bool:
    return type(key) is tuple and type(value) is tuple


def _cached_exec(cache: _CodeCache, recorder: classrecipes.Recorder | None = None) -> Any:
    """exec for dataclasses.py: its one call, exec(text, globals, ns), runs the kept code
    of `text` (the code exec would compile: no __future__ flags, as in dataclasses.py),
    kept with the other texts of the class's module (globals are its namespace); the
    texts go to `recorder` too (what a recipe is made of)."""
    run = builtins.exec

    def exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
        if type(source) is str:
            if recorder is not None:
                recorder.seen(source)
            module = globals.get("__name__") if type(globals) is dict else None
            source = cache.compiled(source, module if type(module) is str else "")
        run(source, globals, locals)

    return exec


def _from_recipes(process: Any, cache: _CodeCache, recorder: classrecipes.Recorder) -> Any:
    """dataclasses._process_class that makes a class of a shape met before from its recipe,
    and records the recipe of a new one (classrecipes.py)."""

    def _process_class(cls: type, *options: Any, **kwargs: Any) -> Any:
        module = cls.__module__
        key = classrecipes.recipe_key(cls, options) if len(options) == 10 and not kwargs else None
        if key is None or type(module) is not str:
            return process(cls, *options, **kwargs)
        recipe = cache.recipe(module, key)
        if recipe is not None:
            return classrecipes.replay(cls, key, recipe)
        with recorder.recording() as texts:
            made = process(cls, *options)
        made_recipe = classrecipes.Recorder.recipe(made, texts, options)
        if made_recipe is not None:
            cache.keep_recipe(module, key, made_recipe)
        return made

    _process_class.__wrapped__ = process  # type: ignore[attr-defined]
    return _process_class


class _DataclassDoc:
    """A dataclass's __doc__ when its class has none: while dataclasses.py makes the
    class, a placeholder (it then leaves __doc__ alone); after, on first read, the text
    dataclasses.py would have set, which then replaces this in the class."""

    def __init__(self) -> None:
        self.made = False

    def __get__(self, instance: object, owner: type) -> str:
        if not self.made:
            return "..."
        try:  # as dataclasses.py: a signature may not be available
            text = owner.__name__ + str(inspect.signature(owner)).replace(" -> None", "")
        except (TypeError, ValueError):
            text = owner.__name__
        owner.__doc__ = text
        return text


def _doc_on_first_read(process: Any) -> Any:
    """dataclasses._process_class with the class docstring it makes (when the class has
    none) left to _DataclassDoc."""

    def _process_class(cls: type, *args: Any, **kwargs: Any) -> Any:
        if vars(cls).get("__doc__"):
            return process(cls, *args, **kwargs)
        doc = _DataclassDoc()
        cls.__doc__ = doc  # type: ignore[assignment]
        try:
            made = process(cls, *args, **kwargs)
        except BaseException:
            cls.__doc__ = None
            raise
        doc.made = True
        return made

    _process_class.__wrapped__ = process  # type: ignore[attr-defined]
    return _process_class


def install() -> None:
    """Keep the compiled methods of the dataclasses defined from now on (once a process):
    dataclasses.py's name `exec` (the builtin) becomes one that runs kept code."""
    if "exec" in vars(dataclasses):
        return  # installed already, or another tool's
    root = cache_root()
    name = f"dataclasses-{_FORMAT}-{sys.implementation.cache_tag}-{sys.hexversion:x}.marshal"
    cache = _CodeCache(root / name if root is not None else None)
    process = dataclasses._process_class  # type: ignore[attr-defined]
    recorder = None
    if classrecipes.supported() and os.environ.get("TOPOGEN_CLASS_RECIPES") != "0":
        recorder = classrecipes.Recorder()
        process = _from_recipes(process, cache, recorder)
    dataclasses.exec = _cached_exec(cache, recorder)  # type: ignore[attr-defined]
    dataclasses._process_class = _doc_on_first_read(process)  # type: ignore[attr-defined]
    atexit.register(cache.save)
