"""`record`, `NamedTuple`, `Protocol`: the value classes of a check (settings, findings, the
parsed tree), with the methods `dataclasses.dataclass` would give them, without importing
`dataclasses`.

`dataclasses` imports `inspect`, and with it `ast`, `dis`, `tokenize` and `copy`: ~12 ms, an
eighth of a small file's whole `--check` (docs/performance.md, "Start-up of the CLI"). The check
path's classes are declared as dataclasses are (annotations, defaults, `field(...)`) and get the
same `__init__`, `__repr__`, `__eq__` and `__hash__`; `replace` is `dataclasses.replace` for them.
What they use of dataclasses is all there is here: `frozen`, `slots`, `eq=False`, and fields with
`default`, `default_factory`, `repr=False` or `init=False`. No inheritance between records, no
`ClassVar`, `InitVar`, `__post_init__`, `order` or keyword-only fields (`record` refuses a class
whose base is a record, or whose annotation names ClassVar or InitVar).

`NamedTuple` is `typing.NamedTuple`'s class syntax (`class Span(NamedTuple): start: int ...`) made
with `collections.namedtuple`, and `Protocol` is a plain base at run time: `typing` (with `re`,
~4 ms) is imported by neither a check nor `--version`. Type checkers see typing's own.

Type checkers read `record` as a dataclass (PEP 681, `dataclass_transform`);
tests/test_records.py holds each generated method against `dataclasses.dataclass`'s, and
`NamedTuple` against typing's.
"""

from __future__ import annotations

from _thread import get_ident
from keyword import iskeyword

TYPE_CHECKING = False  # typing's, without importing typing (~4 ms)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NamedTuple, Protocol, TypeVar, dataclass_transform

    T = TypeVar("T")
else:
    def dataclass_transform(**_kwargs):
        return lambda decorated: decorated

_MISSING = object()


class FrozenInstanceError(AttributeError):
    """Assigning to a field of a frozen record (as `dataclasses.FrozenInstanceError`)."""


class Field:
    """A field's declaration: `field(default=..., default_factory=..., repr=..., init=...)`."""

    __slots__ = ("name", "default", "default_factory", "repr", "init")

    def __init__(self, default: Any, default_factory: Any, repr: bool, init: bool):
        if default is not _MISSING and default_factory is not _MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.default, self.default_factory, self.repr, self.init = default, default_factory, repr, init


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] | Any = _MISSING, repr: bool = True,
          init: bool = True) -> Any:
    return Field(default, default_factory, repr, init)


@dataclass_transform(field_specifiers=(field,))
def record(cls: type[T] | None = None, /, *, frozen: bool = False, slots: bool = False, eq: bool = True) -> Any:
    """`@record`, `@record(frozen=True, slots=True, eq=False)`: as `@dataclass` with those arguments."""
    def wrap(c: type[T]) -> type[T]:
        return _make(c, frozen, slots, eq)

    return wrap if cls is None else wrap(cls)


def replace(obj: T, **changes: Any) -> T:
    """A copy of the record `obj` with `changes` (`dataclasses.replace`): fields not given keep
    their values; an `init=False` field cannot be given, and gets its default again."""
    fields = type(obj).__record_fields__  # type: ignore[attr-defined]
    for name in changes:
        f = fields.get(name)
        if f is None:
            raise TypeError(f"{type(obj).__name__} has no field {name!r}")
        if not f.init:
            raise ValueError(f"field {name} is declared with init=False, it cannot be specified with replace()")
    for name, f in fields.items():
        if f.init and name not in changes:
            changes[name] = getattr(obj, name)
    return type(obj)(**changes)


def _fields(cls: type) -> dict[str, Field]:
    out: dict[str, Field] = {}
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if not (isinstance(name, str) and name.isidentifier() and not iskeyword(name)):  # goes into __init__'s source
            raise TypeError(f"{cls.__name__}: field name {name!r} is not an identifier")
        if "ClassVar" in str(annotation) or "InitVar" in str(annotation):
            raise TypeError(f"{cls.__name__}.{name}: ClassVar and InitVar are not supported by record")
        value = cls.__dict__.get(name, _MISSING)
        f = value if isinstance(value, Field) else Field(value, _MISSING, True, True)
        f.name = name
        out[name] = f
    return out


def _make(cls: type[T], frozen: bool, slots: bool, eq: bool) -> type[T]:
    if any(hasattr(base, "__record_fields__") for base in cls.__mro__[1:]):
        raise TypeError(f"{cls.__name__}: a record cannot derive from a record")
    fields = _fields(cls)
    names = tuple(fields)
    if slots:
        body = {k: v for k, v in cls.__dict__.items() if k not in names and k not in ("__dict__", "__weakref__")}
        body["__slots__"] = names
        qualname = cls.__qualname__
        metaclass: Any = type(cls)
        cls = metaclass(cls.__name__, cls.__bases__, body)
        cls.__qualname__ = qualname
    else:
        for name, f in fields.items():  # class attributes keep plain defaults only, as dataclasses does
            if isinstance(cls.__dict__.get(name), Field):
                if f.default is _MISSING:
                    delattr(cls, name)
                else:
                    setattr(cls, name, f.default)
    namespace: dict[str, Any] = {"_MISSING": _MISSING, "_object_setattr": object.__setattr__}
    params, lines = [], []
    seen_default = False
    for name, f in fields.items():
        if f.default_factory is not _MISSING:
            namespace[f"_factory_{name}"] = f.default_factory
            value = f"_factory_{name}() if {name} is _MISSING else {name}" if f.init else f"_factory_{name}()"
            param = f"{name}=_MISSING"
        else:
            namespace[f"_default_{name}"] = f.default
            value = name if f.init else f"_default_{name}"
            param = name if f.default is _MISSING else f"{name}=_default_{name}"
        if f.init:
            if param == name and seen_default:
                raise TypeError(f"{cls.__name__}: non-default argument {name!r} follows default argument")
            seen_default = param != name
            params.append(param)
        lines.append(f"_object_setattr(self, {name!r}, {value})" if frozen else f"self.{name} = {value}")
    # The methods are made from source, as dataclasses makes them: plain functions that read each
    # field by name (an Op is built, a Settings hashed, as fast as by hand-written ones).
    own = tuple(f"self.{n}," for n in names)
    other = tuple(f"other.{n}," for n in names)
    source = (f"def __init__(self, {', '.join(params)}):\n    " + ("\n    ".join(lines) or "pass") + "\n"
              "def __eq__(self, other):\n"
              "    if other.__class__ is not self.__class__:\n"
              "        return NotImplemented\n"
              f"    return ({''.join(own)}) == ({''.join(other)})\n"
              "def __hash__(self):\n"
              f"    return hash(({''.join(own)}))\n")
    exec(source, namespace)
    methods: dict[str, Any] = {"__init__": namespace["__init__"], "__repr__": _repr_of(fields),
                               "__record_fields__": fields,
                               "__match_args__": tuple(n for n, f in fields.items() if f.init)}
    own_hash = cls.__dict__.get("__hash__", _MISSING)
    explicit_hash = not (own_hash is _MISSING or (own_hash is None and "__eq__" in cls.__dict__))
    if eq:
        methods["__eq__"] = namespace["__eq__"]
        if not explicit_hash:  # dataclasses' rule: frozen and eq hash the fields, eq alone is unhashable
            methods["__hash__"] = namespace["__hash__"] if frozen else None
    if frozen:
        methods["__setattr__"] = _frozen_setattr
        methods["__delattr__"] = _frozen_delattr
        if slots:  # pickle would set the slots through the refusing __setattr__
            methods["__getstate__"], methods["__setstate__"] = _slot_state(names)
    for name, method in methods.items():
        if name not in cls.__dict__ or name == "__hash__":
            if callable(method):
                method.__qualname__ = f"{cls.__qualname__}.{name}"
            setattr(cls, name, method)
    return cls


_repr_running: set[tuple[int, int]] = set()


def _repr_of(fields: dict[str, Field]) -> Callable[[Any], str]:
    shown = tuple(n for n, f in fields.items() if f.repr)

    def __repr__(self) -> str:
        key = (id(self), get_ident())
        if key in _repr_running:  # a tree's parent links: `...`, as dataclasses' repr
            return "..."
        _repr_running.add(key)
        try:
            return f"{type(self).__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in shown)})"
        finally:
            _repr_running.discard(key)

    return __repr__


def _slot_state(names: tuple[str, ...]) -> tuple[Callable[[Any], tuple], Callable[[Any, tuple], None]]:
    def __getstate__(self) -> tuple:
        return tuple(getattr(self, n) for n in names)

    def __setstate__(self, state: tuple) -> None:
        for n, v in zip(names, state, strict=True):
            object.__setattr__(self, n, v)

    return __getstate__, __setstate__


def _frozen_setattr(self, name, value):
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self, name):
    raise FrozenInstanceError(f"cannot delete field {name!r}")


# `NamedTuple` and `Protocol` as run-time bases, for the modules a check or `--version` imports.
if not TYPE_CHECKING:
    _NOT_OVERWRITTEN = frozenset({"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults",
                                  "_make", "_replace", "_asdict", "_source"})
    _NOT_COPIED = frozenset({"__module__", "__qualname__", "__annotations__", "__orig_bases__", "__doc__"})

    class _NamedTupleMeta(type):
        """`class X(NamedTuple): a: int; b: str = ""` makes `collections.namedtuple("X", "a b",
        defaults=[""])` with X's methods, properties and docstring, as typing.NamedTuple does."""

        def __new__(mcls, name, bases, namespace):
            if not bases:  # NamedTuple itself
                return super().__new__(mcls, name, bases, namespace)
            if bases != (NamedTuple,):
                raise TypeError("a NamedTuple derives from NamedTuple only")
            from collections import namedtuple

            annotations = namespace.get("__annotations__", {})
            defaults = []
            for field_name in annotations:
                if field_name in namespace:
                    defaults.append(namespace[field_name])
                elif defaults:
                    raise TypeError(f"Non-default namedtuple field {field_name} cannot follow a default field")
            made = namedtuple(name, annotations, defaults=defaults, module=namespace.get("__module__"))
            made.__annotations__ = dict(annotations)
            made.__qualname__ = namespace.get("__qualname__", name)
            if namespace.get("__doc__") is not None:
                made.__doc__ = namespace["__doc__"]
            for key, value in namespace.items():
                if key in _NOT_OVERWRITTEN:
                    raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
                if key not in _NOT_COPIED and key not in annotations:
                    setattr(made, key, value)
            return made

    class NamedTuple(metaclass=_NamedTupleMeta):
        pass

    class Protocol:
        """A structural type for type checkers; a plain base class at run time (never instantiated)."""

        def __class_getitem__(cls, _params):
            return cls
