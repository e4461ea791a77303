"""Templates run from their compiled code without Jinja2: the runtime a template needs
when it uses only plain output, topogen's filters, `is defined` and simple loops.

Jinja2 compiles a template to Python source whose `root(context)` yields the output's
pieces; that code asks its environment and context for a few things (its filters, how
to get an attribute, a variable by name) and imports its helpers from jinja2.runtime.
Loading jinja2.environment (lexer, parser, compiler, nodes, the default filters) to run
code compiled in an earlier run is most of a small render's template cost. lite_source()
takes Jinja2's compiled source and, when every name it uses is one this module provides
with Jinja2's own behaviour, gives it back without its import; Runtime runs it. Anything
else (macros, includes, blocks, escaping, a filter of Jinja2's, a loop attribute not
below) is left to Jinja2 itself: the output is the same byte for byte either way
(tests/core/test_template_run.py renders both ways).

An undefined value is Jinja2's own StrictUndefined, imported from jinja2.runtime only
when a template meets one.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import CodeType, ModuleType
from typing import Any

__all__ = ["LOOP_ATTRIBUTES", "Runtime", "lite_source"]

# the helpers of jinja2.runtime this module provides (the compiled code always binds
# Undefined, and names the last two in a missing filter's fallback, never run here)
_PROVIDED = frozenset({"LoopContext", "Undefined", "missing", "str_join"})
_FALLBACK_ONLY = frozenset({"internalcode", "TemplateRuntimeError"})
_ENVIRONMENT = frozenset({"undefined", "concat", "filters", "tests", "finalize", "getattr"})
_ENVIRONMENT |= {"getitem"}
_CONTEXT = frozenset({"resolve_or_missing", "vars", "exported_vars"})
# Jinja2's globals besides range and dict: Jinja2's own, loaded when a template asks for
# one its caller did not set
_OTHER_GLOBALS = ("lipsum", "cycler", "joiner", "namespace")
LOOP_ATTRIBUTES = ("index", "index0", "revindex", "revindex0", "first", "last", "length")
_TESTS = frozenset({"defined"})

_LOOP = re.compile(r"l_\d+_loop")  # the compiler's name of a `loop` variable


def lite_source(source: str, filters: Iterable[str]) -> str | None:
    """Jinja2's compiled source of a template without its import of jinja2.runtime, when
    it uses nothing but what Runtime gives with `filters`; None: Jinja2 runs it."""
    head, _, body = source.partition("\n")
    if not head.startswith("from jinja2.runtime import "):
        return None
    imported = {n.strip() for n in head.split(" import ", 1)[1].split(",")}
    tree = ast.parse(body)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not _lite_name(node, imported, parents):
            return None
        if isinstance(node, ast.Attribute) and not _lite_attribute(node, parents, filters):
            return None
    if not any(_empty_blocks(node) for node in tree.body):
        return None
    return "\n" + body  # the import's line kept empty: line numbers as Jinja2's


def _lite_name(node: ast.Name, imported: set[str], parents: dict[ast.AST, ast.AST]) -> bool:
    """A name the lite runtime gives, or a `loop` used only as Runtime's LoopContext is."""
    if node.id in imported:
        return node.id in _PROVIDED or node.id in _FALLBACK_ONLY
    if not _LOOP.fullmatch(node.id):
        return True
    up = parents[node]
    if isinstance(up, ast.Assign):  # `l_1_loop = missing`, after the loop too
        return isinstance(up.value, ast.Name) and up.value.id == "missing"
    if isinstance(up, ast.Call):  # environment.getattr(l_1_loop, 'index')
        func, args = up.func, up.args
        return (
            isinstance(func, ast.Attribute)
            and func.attr == "getattr"
            and len(args) == 2
            and args[0] is node
            and isinstance(args[1], ast.Constant)
            and args[1].value in LOOP_ATTRIBUTES
        )
    loop = parents.get(up)  # for x, l_1_loop in LoopContext(items, undefined)
    if isinstance(up, ast.Tuple) and isinstance(loop, ast.For) and loop.target is up:
        it = loop.iter
        return (
            up.elts[-1] is node
            and isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name)
            and it.func.id == "LoopContext"
            and len(it.args) == 2
            and not it.keywords
        )
    return False


def _lite_attribute(
    node: ast.Attribute, parents: dict[ast.AST, ast.AST], filters: Iterable[str]
) -> bool:
    """environment.X and context.X of what Runtime and its context give; a filter or test
    only by its name, one of `filters` or `defined`."""
    owner = node.value.id if isinstance(node.value, ast.Name) else ""
    if owner == "context":
        return node.attr in _CONTEXT
    if owner != "environment":
        return True
    if node.attr not in _ENVIRONMENT:
        return False
    if node.attr not in ("filters", "tests"):
        return True
    up = parents[node]
    if not isinstance(up, ast.Subscript) or not isinstance(up.slice, ast.Constant):
        return False
    return up.slice.value in (set(filters) if node.attr == "filters" else _TESTS)


def _empty_blocks(node: ast.stmt) -> bool:
    """`blocks = {}`: the template defines no block (nor extends another)."""
    return (
        isinstance(node, ast.Assign)
        and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["blocks"]
        and isinstance(node.value, ast.Dict)
        and not node.value.keys
    )


def _jinja_runtime() -> ModuleType:
    from topogen.templatecache import jinja_runtime

    return jinja_runtime()


def _jinja_global(name: str) -> Any:
    _jinja_runtime()
    import jinja2.defaults

    return jinja2.defaults.DEFAULT_NAMESPACE[name]


class _Missing:
    """A variable neither the template nor its caller set (jinja2.utils.missing's role)."""

    def __repr__(self) -> str:
        return "missing"


missing = _Missing()


def _undefined(*args: Any, **kwargs: Any) -> Any:
    return _jinja_runtime().StrictUndefined(*args, **kwargs)


def _plain_undefined(*args: Any, **kwargs: Any) -> Any:
    return _jinja_runtime().Undefined(*args, **kwargs)


def _defined(value: Any) -> bool:
    # No Undefined exists before its class does: jinja2.runtime not loaded yet, or still
    # being imported by another thread (a partially initialised module without it yet)
    undefined = getattr(sys.modules.get("jinja2.runtime"), "Undefined", None)
    return undefined is None or not isinstance(value, undefined)


def _template_runtime_error(message: str) -> Exception:
    return _jinja_runtime().TemplateRuntimeError(message)  # type: ignore[no-any-return]


def str_join(seq: Iterable[Any]) -> str:
    return "".join(map(str, seq))


class LoopContext:
    """A `for` loop's `loop` with the attributes in LOOP_ATTRIBUTES, as Jinja2's."""

    def __init__(self, iterable: Iterable[Any], undefined: Any, *_: Any) -> None:
        self._items = list(iterable)
        self.index0 = -1

    def __iter__(self) -> Iterator[tuple[Any, LoopContext]]:
        for index0, item in enumerate(self._items):
            self.index0 = index0
            yield item, self

    @property
    def length(self) -> int:
        return len(self._items)

    @property
    def index(self) -> int:
        return self.index0 + 1

    @property
    def revindex0(self) -> int:
        return self.length - self.index

    @property
    def revindex(self) -> int:
        return self.length - self.index0

    @property
    def first(self) -> bool:
        return self.index0 == 0

    @property
    def last(self) -> bool:
        return self.index0 == self.length - 1


class _Context:
    """A render's variables: the template's own (set at its top level) over the caller's
    values and Jinja2's globals range and dict."""

    __slots__ = ("exported_vars", "parent", "vars")

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.parent = {"range": range, "dict": dict, **values}
        self.vars: dict[str, Any] = {}
        self.exported_vars: set[str] = set()

    def resolve_or_missing(self, key: str) -> Any:
        if key in self.vars:
            return self.vars[key]
        if key in self.parent:
            return self.parent[key]
        if key in _OTHER_GLOBALS:
            return _jinja_global(key)
        return missing


class Runtime:
    """What a template's lite code asks its environment for: the finalize hook and the
    filters it was checked against, Jinja2's attribute and item lookups."""

    def __init__(self, finalize: Callable[[Any], Any], filters: Mapping[str, Any]) -> None:
        self.finalize = finalize
        self.filters = dict(filters)
        self.tests = {"defined": _defined}
        self.undefined = _undefined
        self.concat = "".join

    def getattr(self, obj: Any, attribute: str) -> Any:
        try:
            return getattr(obj, attribute)
        except AttributeError:
            pass
        try:
            return obj[attribute]
        except (TypeError, LookupError, AttributeError):
            return self.undefined(obj=obj, name=attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        try:
            return obj[argument]
        except (AttributeError, TypeError, LookupError):
            if isinstance(argument, str):
                try:
                    return getattr(obj, argument)
                except AttributeError:
                    pass
            return self.undefined(obj=obj, name=argument)

    def load(self, code: CodeType) -> Callable[..., str]:
        """The render function of a template's lite code."""
        namespace: dict[str, Any] = {
            "environment": self,
            "__file__": code.co_filename,
            "LoopContext": LoopContext,
            "Undefined": _plain_undefined,
            "missing": missing,
            "str_join": str_join,
            "internalcode": lambda f: f,
            "TemplateRuntimeError": _template_runtime_error,
        }
        exec(code, namespace)
        root = namespace["root"]

        def render(values: Mapping[str, Any]) -> str:
            return "".join(root(_Context(values)))

        return render
