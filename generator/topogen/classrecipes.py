"""Start-up: a dataclass made again from the record of its first making (CPython 3.11).

dataclasses.py makes each method of a dataclass by writing its source text from the
class's fields, then running that text (codecache.py keeps the compiled code of each
text). Writing the texts, and the Field objects and checks around them, was the larger
part of the hundred dataclasses' cost at start-up. What it does depends only on the
class's "shape": its name, its decorator's options, each field's name, annotation text
and kind of default, and whether it has __post_init__. So the first making of a class of
a given shape is recorded (per method, in order: its function's code and the names of
the values it was made with, each checked to give the very value) and kept beside the
texts' code (codecache.py's file); a later run that meets the same shape makes the class
from the record: the Field objects, then each function (FunctionType) with the values
its names give (the field's type or default, the class, dataclasses' markers).

Only the plain case is recorded: no dataclass base, no slots, no keyword-only field, no
ClassVar, InitVar or KW_ONLY annotation (by the names they are bound to in the class's
module, as dataclasses.py looks them up), no metadata, no dunder of dataclasses' own
defined by the class, no mutable default; any other class is made by dataclasses.py as
ever. tests/core/test_classrecipes.py makes every dataclass of topogen both ways and
compares the classes: their fields, their methods' code, defaults, annotations and
closures, their attributes in order.
"""

from __future__ import annotations

import abc
import dataclasses
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import CellType, CodeType, FunctionType
from typing import Any

__all__ = ["Recorder", "recipe_key", "replay", "supported"]

# a kept recipe: per method made, in order: its name, its function's code, the names of
# the values its defaults are (in order) and of its annotations' values (per parameter);
# then __match_args__ (None: not set), and whether __hash__ is set None. The values of
# its closure are named by the code's free variables. Names, as dataclasses.py's texts
# give them: _type_<field>, _dflt_<field>, its markers, object, the class, None.
Method = tuple[str, CodeType, tuple[str, ...], tuple[tuple[str, str], ...]]
Recipe = tuple[tuple[Method, ...], tuple[str, ...] | None, bool]

# the dunders dataclasses.py sets (a class defining one of them is not recorded)
_DUNDERS: tuple[str, ...] = ("__init__", "__repr__", "__eq__", "__setattr__", "__delattr__")
_DUNDERS += ("__hash__", "__match_args__", "__lt__", "__le__", "__gt__", "__ge__")
_MARKERS = ("MISSING", "_HAS_DEFAULT_FACTORY", "FrozenInstanceError")
_UNNAMED = object()  # _value of a name replay does not know
_NEEDED = ("_create_fn", "_recursive_repr", "_FIELD", "_DataclassParams", "_MODULE_IDENTIFIER_RE")
_HEAD = "def __create_fn__("  # how each text dataclasses.py runs starts (_create_fn)


def supported() -> bool:
    """This Python's dataclasses.py is the one recipes are made for (3.11)."""
    return sys.version_info[:2] == (3, 11) and all(hasattr(dataclasses, n) for n in _NEEDED)


def recipe_key(cls: type, options: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The class's shape (None: a class recipes do not cover). `options`: the decorator's
    (init, repr, eq, order, unsafe_hash, frozen, match_args, kw_only, slots,
    weakref_slot)."""
    kw_only, slots, weakref_slot = options[7:]
    if kw_only or slots or weakref_slot:
        return None
    own = cls.__dict__
    if any(n in own for n in _DUNDERS):
        return None
    if any(hasattr(b, "__dataclass_fields__") for b in cls.__mro__[1:]):
        return None
    module = sys.modules.get(cls.__module__)
    if module is None:
        return None
    namespace = module.__dict__
    annotations = own.get("__annotations__", {})
    shape = []
    for name, annotation in annotations.items():
        if type(annotation) is not str or name == "self" or _special(annotation, namespace):
            return None
        default = getattr(cls, name, dataclasses.MISSING)
        if isinstance(default, dataclasses.Field):
            f = default
            if f.metadata or f.kw_only is True or f.default.__class__.__hash__ is None:
                return None
            kind: tuple[Any, ...] = (
                "field",
                f.default is not dataclasses.MISSING,
                f.default_factory is not dataclasses.MISSING,
                f.init,
                f.repr,
                f.hash,
                f.compare,
            )
        elif default is dataclasses.MISSING:
            kind = ("none",)
        elif default.__class__.__hash__ is None:
            return None  # dataclasses.py refuses a mutable default: let it
        else:
            kind = ("value",)
        shape.append((name, annotation, kind))
    for name, value in own.items():  # a Field without an annotation: dataclasses.py's error
        if isinstance(value, dataclasses.Field) and name not in annotations:
            return None
    return (cls.__qualname__, options, tuple(shape), hasattr(cls, "__post_init__"))


def _special(annotation: str, namespace: dict[str, Any]) -> bool:
    """The annotation may be a ClassVar, InitVar or KW_ONLY to dataclasses.py: the name it
    would look up in the class's module is bound to one (whatever module it names)."""
    dc: Any = dataclasses
    match = dc._MODULE_IDENTIFIER_RE.match(annotation)
    if match is None:
        return False
    bound = namespace.get(match.group(2))
    if bound is None:
        return False
    if bound is dataclasses.KW_ONLY or bound is dataclasses.InitVar:
        return True
    if type(bound) is dataclasses.InitVar:
        return True
    typing: Any = sys.modules.get("typing")
    return typing is not None and (
        bound is typing.ClassVar
        or (type(bound) is typing._GenericAlias and bound.__origin__ is typing.ClassVar)
    )


class Recorder:
    """The texts dataclasses.py runs while it makes one class (codecache's exec hands
    them here while recording)."""

    def __init__(self) -> None:
        self.texts: list[str] | None = None

    def seen(self, text: str) -> None:
        if self.texts is not None:
            self.texts.append(text)

    @contextmanager
    def recording(self) -> Iterator[list[str]]:
        outer, self.texts = self.texts, []
        try:
            yield self.texts
        finally:
            self.texts = outer

    @staticmethod
    def recipe(cls: type, texts: list[str], options: tuple[Any, ...]) -> Recipe | None:
        """The record of the class just made from `texts`: each method's code and the names
        of the values it was made with, each checked to give the very value (None: a
        method not set, or made with a value replay could not name)."""
        fields = cls.__dict__.get("__dataclass_fields__", {})
        methods: list[Method] = []
        for text in texts:
            head, _, rest = text.partition("):\n def ")
            name = rest.partition("(")[0]
            if not head.startswith(_HEAD) or not name.isidentifier():
                return None
            made = cls.__dict__.get(name)
            fn = getattr(made, "__wrapped__", None) if name == "__repr__" else made
            if type(fn) is not FunctionType or fn.__code__.co_name != name:
                return None
            method = _method(cls, fn, fields)
            if method is None:
                return None
            methods.append(method)
        match_args = cls.__dict__.get("__match_args__") if options[6] else None  # match_args=
        if match_args is not None and type(match_args) is not tuple:
            return None
        hash_none = "__hash__" in cls.__dict__ and cls.__dict__["__hash__"] is None
        return tuple(methods), match_args, hash_none


def _method(cls: type, fn: FunctionType, fields: dict[str, Any]) -> Method | None:
    """fn's record, if every value it was made with has a name giving that very value."""
    code = fn.__code__
    cells = fn.__closure__ or ()
    if fn.__kwdefaults__ is not None or len(cells) != len(code.co_freevars):
        return None
    for name, cell in zip(code.co_freevars, cells, strict=True):
        if _value(name, cls, fields) is not cell.cell_contents:
            return None
    defaults = fn.__defaults__ or ()
    params = code.co_varnames[code.co_argcount - len(defaults) : code.co_argcount]
    default_names = []
    for param, given in zip(params, defaults, strict=True):
        f = fields.get(param)
        if f is None:
            return None
        name = "_HAS_DEFAULT_FACTORY" if f.default is dataclasses.MISSING else "_dflt_" + param
        if _value(name, cls, fields) is not given:
            return None
        default_names.append(name)
    annotations = []
    for param, given in fn.__annotations__.items():
        name = "_return_type" if param == "return" else "_type_" + param
        if _value(name, cls, fields) is not given:
            return None
        annotations.append((param, name))
    return fn.__name__, code, tuple(default_names), tuple(annotations)


def replay(cls: type, key: tuple[Any, ...], recipe: Recipe) -> type:
    """The class made from its recipe, as dataclasses._process_class makes it."""
    init, repr_, eq, order, unsafe_hash, frozen, _, _, _, _ = key[1]
    made: Any = cls  # given the attributes dataclasses.py gives it
    module = sys.modules[cls.__module__].__dict__
    missing: Any = dataclasses.MISSING
    dc: Any = dataclasses  # its private names: supported() checked them
    made.__dataclass_params__ = dc._DataclassParams(init, repr_, eq, order, unsafe_hash, frozen)
    fields: dict[str, Any] = {}
    for name, annotation, kind in key[2]:
        default = getattr(cls, name, missing)
        f: Any = default if kind[0] == "field" else dc.Field(default, missing, True, True, None, True, None, missing)  # fmt: skip
        f.name = name
        f.type = annotation
        f._field_type = dc._FIELD
        if f.kw_only is missing:
            f.kw_only = False
        fields[name] = f
        if kind[0] == "field":  # the class attribute: the default, or none
            if f.default is missing:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
    made.__dataclass_fields__ = fields
    methods, match_args, hash_none = recipe
    for name, code, default_names, annotation_names in methods:
        free = code.co_freevars
        closure = tuple(CellType(_value(n, cls, fields)) for n in free) if free else None
        defaults = tuple(_value(n, cls, fields) for n in default_names) or None
        fn: Any = FunctionType(code, module, None, defaults, closure)
        if annotation_names:
            fn.__annotations__ = {p: _value(n, cls, fields) for p, n in annotation_names}
        if name == "__repr__":
            fn = dc._recursive_repr(fn)
        fn.__qualname__ = f"{cls.__qualname__}.{fn.__name__}"
        setattr(cls, name, fn)
    if hash_none:
        made.__hash__ = None
    if match_args is not None:
        setattr(cls, "__match_args__", match_args)  # noqa: B010  (mypy: a read-only name)
    abc.update_abstractmethods(cls)
    return cls


def _value(name: str, cls: type, fields: dict[str, Any]) -> Any:
    """The value a name of dataclasses.py's texts stands for (_UNNAMED: none replay knows)."""
    if name.startswith("_type_") and name[6:] in fields:
        return fields[name[6:]].type
    if name.startswith("_dflt_") and name[6:] in fields:
        f = fields[name[6:]]
        return f.default_factory if f.default_factory is not dataclasses.MISSING else f.default
    if name == "__dataclass_builtins_object__":
        return object
    if name == "_return_type":
        return None
    if name == "cls":
        return cls
    return getattr(dataclasses, name) if name in _MARKERS else _UNNAMED
