"""Start-up: a dataclass made from its recipe (topogen/classrecipes.py) is the class
dataclasses.py makes: every dataclass of topogen's, and classes of each shape a recipe
covers or leaves to dataclasses.py, described both ways and compared."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from topogen import classrecipes

# classes of each shape: covered by recipes (defaults, factories, init=False, options
# with order and unsafe_hash, __post_init__, a default inherited from a plain base) and
# not (ClassVar, a field named self, a dataclass base, slots, keyword-only fields, a
# dunder of its own, a mutable default refused)
_SAMPLES = """
from __future__ import annotations
import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar

CV = ClassVar

@dataclass(frozen=True)
class Point:
    x: int
    label: str = "a"

@dataclass
class Mutable:
    items: list[int] = field(default_factory=list)
    hidden: int = field(default=3, init=False, repr=False, compare=False)
    made: dict[str, int] = field(default_factory=dict, init=False)

@dataclass(eq=False, repr=False, match_args=False)
class Bare:
    a: int

@dataclass(init=False)
class NoInit:
    a: int = 1

@dataclass(frozen=True)
class Posted:
    a: int
    def __post_init__(self) -> None:
        object.__setattr__(self, "a", self.a + 1)

class Base:
    inherited = 7

@dataclass
class FromBase(Base):
    inherited: int

@dataclass(frozen=True)
class Hashed:
    a: int = field(hash=False)
    b: str = field(default="b", compare=False)

@dataclass
class Empty:
    pass

@dataclass
class WithClassVar:
    a: int
    counter: ClassVar[int] = 0
    other: CV[int] = 1

@dataclass
class SelfField:
    self: int

@dataclass(frozen=True)
class Child(Point):
    y: float = 0.5

@dataclass(slots=True)
class Slotted:
    x: int

@dataclass(order=True)
class Ordered:
    x: int

@dataclass(unsafe_hash=True)
class UnsafeHash:
    x: int

@dataclass(kw_only=True)
class KeywordOnly:
    x: int

@dataclass
class OwnRepr:
    x: int
    def __repr__(self) -> str:
        return "own"

try:
    @dataclass
    class Refused:
        x: list[int] = []
except ValueError as exc:
    REFUSED = str(exc)
"""

# run in a fresh interpreter: every dataclass of topogen's and of the samples module,
# described (JSON); argv[1]: "count" also prints how many classes were made from recipes
_DESCRIBE = """
import dataclasses, importlib, json, pkgutil, re, sys, types
import topogen
from topogen import classrecipes
replayed = []
replay = classrecipes.replay
def counted(cls, *args):
    replayed.append(cls.__module__ + "." + cls.__qualname__)
    return replay(cls, *args)
classrecipes.replay = counted

def code(c):
    consts = [code(k) if isinstance(k, types.CodeType) else repr(k) for k in c.co_consts]
    return [c.co_name, c.co_qualname, c.co_code.hex(), consts, c.co_names, c.co_varnames,
            c.co_freevars, c.co_cellvars, c.co_argcount, c.co_kwonlyargcount, c.co_flags,
            c.co_filename, c.co_firstlineno, c.co_linetable.hex()]

def value(v, cls):
    if v is cls:
        return "<the class>"
    if isinstance(v, types.FunctionType):
        return function(v, cls)
    if isinstance(v, type):
        return "<type " + v.__module__ + "." + v.__qualname__ + ">"
    if isinstance(v, set):
        return "<set of " + str(len(v)) + ">"
    if isinstance(v, tuple):
        return [value(x, cls) for x in v]
    return re.sub(" at 0x[0-9a-f]+", "", repr(v))  # a marker's address is the run's

def function(fn, cls):
    if not isinstance(fn, types.FunctionType):
        return value(fn, cls)
    return {"qualname": fn.__qualname__, "name": fn.__name__, "module": fn.__module__,
            "code": code(fn.__code__), "defaults": value(fn.__defaults__, cls),
            "kwdefaults": repr(fn.__kwdefaults__), "annotations": repr(fn.__annotations__),
            "closure": [value(c.cell_contents, cls) for c in fn.__closure__ or ()],
            "wrapped": function(fn.__wrapped__, cls) if hasattr(fn, "__wrapped__") else None,
            "dict": sorted(k for k in vars(fn) if k != "__wrapped__"),
            "globals": fn.__globals__ is sys.modules[cls.__module__].__dict__}

def describe(cls):
    fields = [[f.name, f.type, value(f.default, cls), value(f.default_factory, cls), f.init, f.repr,
               repr(f.hash), f.compare, repr(dict(f.metadata)), repr(f.kw_only),
               repr(f._field_type)] for f in dataclasses.fields(cls)]
    own = {k: function(v, cls) if isinstance(v, types.FunctionType) else value(v, cls)
           for k, v in vars(cls).items()
           if k not in ("__dict__", "__weakref__", "__doc__", "__dataclass_fields__")}
    return {"keys": list(vars(cls)), "fields": fields, "own": own,
            "params": repr(cls.__dataclass_params__), "doc": cls.__doc__,
            "all_fields": sorted(vars(cls)["__dataclass_fields__"])}

sys.path.insert(0, sys.argv[2])
names = ["samples"] + [m.name for m in pkgutil.walk_packages(topogen.__path__, "topogen.")]
out = {}
for name in names:
    module = importlib.import_module(name)
    for v in list(vars(module).values()):
        if isinstance(v, type) and dataclasses.is_dataclass(v) and v.__module__ == name:
            out[name + "." + v.__qualname__] = describe(v)
out["refused"] = getattr(sys.modules["samples"], "REFUSED", None)
print(json.dumps({"classes": out, "replayed": sorted(replayed)}))
"""


def _describe(tmp_path: Path, recipes: str) -> dict[str, object]:
    run = subprocess.run(
        [sys.executable, "-c", _DESCRIBE, "x", str(tmp_path / "samples")],
        capture_output=True,
        text=True,
        timeout=300,
        env={
            **os.environ,
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "TOPOGEN_CLASS_RECIPES": recipes,
        },
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)  # type: ignore[no-any-return]


def test_every_class_made_from_its_recipe_is_the_one_dataclasses_makes(tmp_path: Path) -> None:
    (tmp_path / "samples").mkdir()
    (tmp_path / "samples" / "samples.py").write_text(_SAMPLES)
    plain = _describe(tmp_path, "0")
    recorded = _describe(tmp_path, "1")  # the first run records each recipe
    replayed = _describe(tmp_path, "1")  # the next makes the classes from them
    assert plain["replayed"] == [] and recorded["replayed"] == []
    assert plain["classes"] == recorded["classes"]
    assert plain["classes"] == replayed["classes"]
    classes = plain["classes"]
    assert isinstance(classes, dict) and classes["refused"]  # refused as ever
    assert len(classes) > 150  # topogen's classes and the samples
    every = set(replayed["replayed"])  # type: ignore[arg-type]
    if not classrecipes.supported():  # another Python: dataclasses.py makes every class
        assert not every
        return
    made = {n.removeprefix("samples.") for n in every if n.startswith("samples.")}
    covered = {"Point", "Mutable", "Bare", "NoInit", "Posted", "FromBase", "Hashed", "Empty"}
    covered |= {"Ordered", "UnsafeHash"}
    assert covered <= made
    left = {"WithClassVar", "SelfField", "Child", "Slotted", "OwnRepr", "KeywordOnly"}
    assert not left & made  # made by dataclasses.py, each run
    assert len(every) > 100  # most of topogen's classes are covered


def test_a_shape_changed_since_the_recipe_is_made_anew() -> None:
    """The key holds what the making depends on: a field's default kind, its annotation,
    the options, __post_init__."""
    import dataclasses

    def shape(body: str, **options: object) -> object:
        ns: dict[str, object] = {"__name__": __name__, "field": dataclasses.field}
        exec(compile(f"class C:\n{body}", "<shape>", "exec", dont_inherit=True), ns)
        cls = ns["C"]
        given = {"init": True, "repr": True, "eq": True, "order": False,
                 "unsafe_hash": False, "frozen": False, "match_args": True,
                 "kw_only": False, "slots": False, "weakref_slot": False, **options}  # fmt: skip
        return classrecipes.recipe_key(cls, tuple(given.values()))  # type: ignore[arg-type]

    base = shape("    x: 'int'\n")
    assert base is not None
    assert shape("    x: 'int' = 1\n") not in (None, base)
    assert shape("    x: 'str'\n") not in (None, base)
    assert shape("    x: 'int' = field(default=1)\n") not in (
        None,
        base,
        shape("    x: 'int' = 1\n"),
    )
    assert shape("    x: 'int'\n", frozen=True) not in (None, base)
    assert shape("    x: 'int'\n    def __post_init__(self): pass\n") not in (None, base)
    assert shape("    x: 'int'\n", order=True) not in (None, base)
    assert shape("    x: 'int'\n", slots=True) is None  # not covered
    assert shape("    x: 'list' = []\n") is None  # dataclasses.py's error, left to it
    assert shape("    x: int\n") is None  # an annotation not a string (no __future__ import)
