"""`records.record` gives the check path's classes what `dataclasses.dataclass` gave them: each
class below is made twice from the same body, once by each, and every difference a caller could
see (constructor, defaults, repr, equality, hashing, frozen assignment, replace, pickle) is
compared. tests/test_startup.py checks that a check no longer imports dataclasses."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from mlir_lsp_asserts import records

# Each of the argument sets the package uses, on a body with every kind of field it uses.
BODY = """
class Item:
    name: str
    start: int
    parent: object = None
    kids: list = field(default_factory=list)
    cache: dict | None = field(default=None, repr=False)
    lazy: object = field(default=None, init=False)
    label: str = "x"

    def size(self):
        return len(self.kids)
"""
OPTIONS = [{}, {"frozen": True}, {"slots": True}, {"slots": True, "eq": False}, {"eq": False},
           {"frozen": True, "slots": True}]


def make(decorator, field, options: dict):
    scope = {"field": field}
    exec(BODY, scope)
    cls = decorator(**options)(scope["Item"])
    cls.__module__ = __name__
    return cls


def pair(options: dict):
    return make(dataclasses.dataclass, dataclasses.field, options), make(records.record, records.field, options)


def observe(cls) -> dict:
    """What a caller sees of a class: what it builds, prints, compares and refuses."""
    a, b = cls("a", 1), cls("a", 1)
    seen: dict = {"repr": repr(a), "eq": a == b, "ne": a != cls("a", 2), "eq_other": a == ("a", 1),
                  "defaults": (a.parent, a.kids, a.cache, a.lazy, a.label), "fresh_factory": a.kids is not b.kids,
                  "kw": repr(cls(start=3, name="n", kids=[1], label="y")), "size": cls("a", 1, None, [1, 2]).size(),
                  "slots": hasattr(a, "__dict__"), "match_args": cls.__match_args__}
    try:
        seen["hash"] = hash(a) == hash(b)
    except TypeError as e:
        seen["hash"] = str(e)
    try:
        a.label = "z"
        seen["assign"] = a.label
    except AttributeError as e:
        seen["assign"] = type(e).__mro__[1].__name__  # FrozenInstanceError, an AttributeError
    for bad in ((), ("a",), ("a", 1, None, [], {}, "l", "extra")):
        try:
            cls(*bad)
            seen[f"args{len(bad)}"] = "ok"
        except TypeError:
            seen[f"args{len(bad)}"] = "TypeError"
    return seen


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "plain")
def test_a_record_behaves_as_the_same_dataclass(options):
    dc, rec = pair(options)
    assert observe(rec) == observe(dc)


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "plain")
def test_replace_and_pickle_as_dataclasses(options):
    dc, rec = pair(options)
    globals()["Item"] = rec  # pickle finds the class by its module and name
    try:
        original = rec("a", 1, None, [1], {"k": 2}, "y")
        again = pickle.loads(pickle.dumps(original))
        assert repr(again) == repr(original) and again.cache == {"k": 2}
    finally:
        del globals()["Item"]
    got = records.replace(rec("a", 1, kids=[5]), start=9)
    want = dataclasses.replace(dc("a", 1, kids=[5]), start=9)
    assert repr(got) == repr(want) == "Item(name='a', start=9, parent=None, kids=[5], lazy=None, label='x')"
    with pytest.raises(ValueError):
        records.replace(rec("a", 1), lazy=3)
    with pytest.raises(TypeError):
        records.replace(rec("a", 1), nosuch=3)


def test_a_parent_link_prints_as_dataclasses_prints_it():
    for cls in pair({"slots": True, "eq": False}):
        root = cls("root", 0)
        kid = cls("kid", 1, parent=root)
        root.kids.append(kid)
        assert repr(root) == "Item(name='root', start=0, parent=None, kids=[Item(name='kid', start=1, parent=..., " \
                             "kids=[], lazy=None, label='x')], lazy=None, label='x')"


def test_what_records_do_not_support_is_refused():
    with pytest.raises(TypeError, match="ClassVar"):
        @records.record
        class A:
            x: ClassVar[int] = 1  # type: ignore[name-defined]  # noqa: F821

    @records.record
    class B:
        x: int

    with pytest.raises(TypeError, match="cannot derive"):
        @records.record
        class C(B):
            y: int

    class E:
        pass

    E.__annotations__ = {"x": "int", "y=0): pass\nimport os\ndef f(": "int"}  # only a name goes into __init__
    with pytest.raises(TypeError, match="not an identifier"):
        records.record(E)

    with pytest.raises(TypeError, match="non-default argument"):
        @records.record
        class D:
            x: int = 0
            y: int


TUPLE_BODY = """
class Span(NamedTuple):
    \"\"\"A span.\"\"\"

    start: int
    end: int
    label: str = ""

    @property
    def size(self):
        return self.end - self.start

    def __str__(self):
        return f"{self.start}-{self.end}"
"""


def make_tuple(base):
    scope = {"NamedTuple": base}
    exec(TUPLE_BODY, scope)
    scope["Span"].__module__ = __name__
    return scope["Span"]


def test_a_light_named_tuple_behaves_as_typings():
    import typing

    def seen(cls):
        a = cls(1, 4)
        globals()["Span"] = cls
        try:
            again = pickle.loads(pickle.dumps(a))
        finally:
            del globals()["Span"]
        return (repr(a), str(a), a.size, a == (1, 4, ""), hash(a) == hash((1, 4, "")), a._replace(end=9),
                a._asdict(), cls._fields, cls._field_defaults, cls.__doc__, list(cls.__annotations__), again == a,
                isinstance(a, tuple), cls(start=2, end=3, label="x"), cls._make([5, 6, "y"]), cls.__qualname__,
                hasattr(a, "__dict__"))

    assert seen(make_tuple(records.NamedTuple)) == seen(make_tuple(typing.NamedTuple))
    with pytest.raises(TypeError, match="cannot follow"):
        exec("class Bad(NamedTuple):\n    a: int = 0\n    b: int\n", {"NamedTuple": records.NamedTuple})
    with pytest.raises(AttributeError, match="overwrite"):
        exec("class Bad(NamedTuple):\n    a: int\n    def _replace(self): pass\n", {"NamedTuple": records.NamedTuple})
