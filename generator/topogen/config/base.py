"""Config: Record, what a command holds of topogen.yaml: plain frozen objects with the
fields, values and the pydantic-style surface (model_copy, model_fields_set, model_dump,
model_validate, model_fields) of the pydantic model of the same name (models.py), its
twin. A record reads itself from YAML data without pydantic when every value passes its
Key's check (checks.py); anything else goes to the twin, which words the errors."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Self

from topogen.config.checks import Check, Unsure

__all__ = ["Key", "Record", "from_model", "twin"]

_REQUIRED = object()
_RECORDS: dict[str, type[Record]] = {}


class Key:
    """One field: its name, its key in topogen.yaml (the alias), the check of its value
    (None: set by topogen, never read from the file), and its default (or a factory)."""

    __slots__ = ("check", "default", "factory", "key", "name")

    def __init__(
        self,
        name: str,
        check: Check | None,
        default: Any = _REQUIRED,
        *,
        alias: str | None = None,
        factory: Callable[[], Any] | None = None,
    ) -> None:
        self.name = name
        self.key = alias or name
        self.check = check
        self.default = default
        self.factory = factory

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED and self.factory is None

    def default_value(self) -> Any:
        return self.factory() if self.factory is not None else self.default


def twin(cls: type) -> Any:
    """The pydantic model of a record class (imports pydantic: slow paths only)."""
    from topogen.config import models

    return getattr(models, cls.__name__)


class _RecordType(type):
    @property
    def model_fields(cls) -> dict[str, Any]:
        """The twin's fields (aliases, defaults, annotations)."""
        return dict(twin(cls).model_fields)


class Record(metaclass=_RecordType):
    """A frozen config object; subclasses list their fields, in the twin's order, in KEYS."""

    KEYS: ClassVar[tuple[Key, ...]] = ()
    EXCLUDED: ClassVar[frozenset[str]] = frozenset()  # not in model_dump (the twin's exclude)
    _BY_KEY: ClassVar[dict[str, Key]] = {}
    model_fields_set: set[str]

    def __init_subclass__(cls) -> None:
        cls._BY_KEY = {k.key: k for k in cls.KEYS}
        _RECORDS[cls.__name__] = cls

    @classmethod
    def _build(cls, values: Mapping[str, Any], given: set[str]) -> Self:
        obj = object.__new__(cls)
        obj.__dict__.update(values)
        obj.__dict__["model_fields_set"] = given
        return obj

    @classmethod
    def read(cls, data: Any) -> Self:
        """`data` as the twin would validate it; Unsure: the twin must decide."""
        if type(data) is not dict:
            raise Unsure
        by_key = cls._BY_KEY
        for key in data:
            if key not in by_key:
                raise Unsure
        values: dict[str, Any] = {}
        given: set[str] = set()
        for k in cls.KEYS:
            if k.key in data:
                if k.check is None:
                    raise Unsure
                values[k.name] = k.check(data[k.key])
                given.add(k.name)
            elif k.required:
                raise Unsure
            else:
                values[k.name] = k.default_value()
        record = cls._build(values, given)
        record.check()
        return record

    def check(self) -> None:
        """The rules across fields (the twin's model validators); Unsure when one fails."""

    @classmethod
    def model_validate(cls, data: Any) -> Self:
        """As the twin's: a record of valid data, else pydantic's ValidationError."""
        try:
            return cls.read(data)
        except Unsure:
            pass
        record = from_model(twin(cls).model_validate(data))
        assert isinstance(record, cls)
        return record

    @classmethod
    def model_json_schema(cls, **kwargs: Any) -> dict[str, Any]:
        schema: dict[str, Any] = twin(cls).model_json_schema(**kwargs)
        return schema

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> Self:
        """A copy with the fields of `update` replaced (unchecked, as pydantic's)."""
        values = {k.name: self.__dict__[k.name] for k in self.KEYS}
        values.update(update or {})
        return self._build(values, self.model_fields_set | set(update or ()))

    def model_dump(self) -> dict[str, Any]:
        return {
            k.name: _dumped(self.__dict__[k.name]) for k in self.KEYS if k.name not in self.EXCLUDED
        }

    def _values(self) -> tuple[Any, ...]:
        return tuple(self.__dict__[k.name] for k in self.KEYS)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Record)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{k.name}={self.__dict__[k.name]!r}" for k in self.KEYS)
        return f"{type(self).__name__}({fields})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: use model_copy(update=...)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __reduce__(self) -> tuple[Any, ...]:
        values = {k.name: self.__dict__[k.name] for k in self.KEYS}
        return (_rebuilt, (type(self), values, self.model_fields_set))


def _rebuilt(cls: type[Record], values: dict[str, Any], given: set[str]) -> Record:
    return cls._build(values, given)


def _dumped(value: Any) -> Any:
    if isinstance(value, Record):
        return value.model_dump()
    if isinstance(value, list):
        return [_dumped(v) for v in value]
    if isinstance(value, dict):
        return {k: _dumped(v) for k, v in value.items()}
    return value


def from_model(model: Any) -> Record:
    """The record of a validated pydantic model (its values, its fields set)."""
    cls = _RECORDS[type(model).__name__]
    values = {k.name: _plain(getattr(model, k.name)) for k in cls.KEYS}
    return cls._build(values, set(model.model_fields_set))


def _plain(value: Any) -> Any:
    if hasattr(value, "model_fields_set"):
        return from_model(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
