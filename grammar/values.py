"""Value classes declared without ``dataclasses``' generated code: :class:`Value` (frozen) and
:class:`Record` (mutable).

``@dataclass(frozen=True)`` compiles its ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__`` and ``__delattr__`` (and four comparisons with ``order=True``) from source in every
process that imports the class: about 0.5 ms a class, and ``import dataclasses`` loads ``inspect``
besides. The syntax tree and the model declare about forty such classes, most of what a cold
``thinkingdb query`` spent before answering (docs/closure.md, issue 20). :class:`Value` gives them the
same behaviour with one shared set of methods; each class writes its fields and its ``__init__``.
A :class:`Record` is the same without freezing and hashing (a plain ``@dataclass``).

A subclass names its fields in ``__slots__`` (init and repr order; a class whose instances keep a
``__dict__`` names them in ``_fields`` instead), those it compares and hashes in ``_compare``
(default: every field), and those its repr leaves out in ``_hidden``. ``order=True`` in the class
statement adds ``<``, ``<=``, ``>`` and ``>=`` over ``_compare`` between instances of the same class.
Its ``__init__`` sets the fields with ``object.__setattr__`` and validates them. Equality, hashing,
ordering and repr are those of the matching dataclass (``hash`` of the tuple of compared fields).

The functions of :mod:`dataclasses` work on these classes too: ``fields``, ``replace``, ``asdict``
and ``is_dataclass`` read ``__dataclass_fields__``, which is made when first read (only then is
:mod:`dataclasses` imported).

>>> class Pair(Value, order=True):
...     __slots__ = ("a", "b")
...     def __init__(self, a, b=0):
...         object.__setattr__(self, "a", a)
...         object.__setattr__(self, "b", b)
>>> Pair(1), Pair(1) == Pair(1, 0), Pair(1) == Pair(2), Pair(1) < Pair(1, 1), hash(Pair(1)) == hash((1, 0))
(Pair(a=1, b=0), True, False, True, True)
>>> import dataclasses
>>> dataclasses.replace(Pair(1), b=2), [f.name for f in dataclasses.fields(Pair)], dataclasses.asdict(Pair(3))
(Pair(a=1, b=2), ['a', 'b'], {'a': 3, 'b': 0})
>>> Pair(1).a = 2
Traceback (most recent call last):
...
dataclasses.FrozenInstanceError: cannot assign to field 'a'
"""

from __future__ import annotations

from operator import attrgetter

__all__ = ["Record", "Value"]


def _getter(names: tuple[str, ...]):
    """A function from an instance to the tuple of its ``names`` (``attrgetter`` in C for two or more)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _comparisons(names: tuple[str, ...]) -> dict:
    """``__eq__``, ``__hash__`` and the orderings over the tuple of ``names``: closures over an
    ``attrgetter``, so nothing is compiled. Dataclass's generated methods read each field directly and
    are about 1.5x as fast; a class compared in hot loops writes its own (``thinkingdb.model.Triple``)."""
    if len(names) == 1:
        one = attrgetter(names[0])
        key = lambda obj: (one(obj),)  # noqa: E731

        def __eq__(self, other):
            if other.__class__ is self.__class__:
                return (one(self),) == (one(other),)
            return NotImplemented

        def __hash__(self):
            return hash((one(self),))
    else:
        key = _getter(names)

        def __eq__(self, other):
            if other.__class__ is self.__class__:
                return key(self) == key(other)
            return NotImplemented

        def __hash__(self):
            return hash(key(self))

    def __lt__(self, other):
        if other.__class__ is self.__class__:
            return key(self) < key(other)
        return NotImplemented

    def __le__(self, other):
        if other.__class__ is self.__class__:
            return key(self) <= key(other)
        return NotImplemented

    def __gt__(self, other):
        if other.__class__ is self.__class__:
            return key(self) > key(other)
        return NotImplemented

    def __ge__(self, other):
        if other.__class__ is self.__class__:
            return key(self) >= key(other)
        return NotImplemented

    return {"_key_of": staticmethod(key), "__eq__": __eq__, "__hash__": __hash__,
            "__lt__": __lt__, "__le__": __le__, "__gt__": __gt__, "__ge__": __ge__}


class _DataclassFields:
    """``__dataclass_fields__`` of a :class:`Value` class, made on first read from a dataclass of the
    same fields (names, defaults of ``__init__``, keyword-only, compare and repr flags)."""

    made: dict[type, dict] = {}

    def __get__(self, obj, cls):
        fields = self.made.get(cls)
        if fields is None:
            fields = self.made[cls] = _dataclass_fields(cls)
        return fields


def _dataclass_fields(cls) -> dict:
    import dataclasses
    code = cls.__init__.__code__
    positional = code.co_varnames[1:code.co_argcount]
    keyword = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
    defaults = dict(zip(positional[len(positional) - len(cls.__init__.__defaults__ or ()):],
                        cls.__init__.__defaults__ or ()))
    defaults.update(cls.__init__.__kwdefaults__ or {})
    types: dict[str, object] = {}
    for klass in reversed(cls.__mro__):
        types.update(klass.__dict__.get("__annotations__", {}))
    spec = []
    for name in cls._fields:
        options = {"compare": name in cls._compare, "repr": name not in cls._hidden,
                   "init": name in positional or name in keyword, "kw_only": name in keyword}
        if name in defaults:
            options["default"] = defaults[name]
        spec.append((name, types.get(name, "object"), dataclasses.field(**options)))
    return dataclasses.make_dataclass(cls.__name__, spec, frozen=cls._frozen).__dataclass_fields__


def _rebuild(cls, values: tuple):
    """An instance of ``cls`` with ``values`` (as unpickling a dataclass: ``__init__`` does not run)."""
    obj = object.__new__(cls)
    for name, value in zip(cls._fields, values):
        object.__setattr__(obj, name, value)
    return obj


_ORDER = ("__lt__", "__le__", "__gt__", "__ge__")


class Value:
    """Immutable, compared and hashed by ``_compare``, shown by ``_fields`` less ``_hidden`` (the
    behaviour of ``@dataclass(frozen=True)`` with ``field(compare=False, repr=False)``)."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()
    _compare: tuple[str, ...] = ()
    _hidden: tuple[str, ...] = ()
    _key_of = staticmethod(_getter(()))
    _frozen = True
    __dataclass_fields__ = _DataclassFields()

    def __init_subclass__(cls, order: bool = False, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__
        if "_fields" not in own and own.get("__slots__"):
            cls._fields = cls._fields + tuple(own["__slots__"])
        if "_fields" in own and "_compare" not in own:
            cls._compare = cls._fields
        methods = _comparisons(cls._compare)
        if not cls._frozen:
            methods["__hash__"] = None
        for name, method in methods.items():
            if name not in own and (order or name not in _ORDER):
                setattr(cls, name, method)
        if "__init__" in own:
            code = cls.__init__.__code__
            cls.__match_args__ = code.co_varnames[1:code.co_argcount]

    def __setattr__(self, name: str, value) -> None:
        from dataclasses import FrozenInstanceError
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        from dataclasses import FrozenInstanceError
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def replace(self, **changes):
        """A copy with ``changes`` (what ``dataclasses.replace`` does: ``__init__`` runs again)."""
        values = {name: getattr(self, name) for name in self._fields}
        values.update(changes)
        return type(self)(**values)

    __replace__ = replace

    def _key(self) -> tuple:
        return self._key_of(self)

    def __eq__(self, other) -> bool:
        if other.__class__ is self.__class__:
            return self._key_of(self) == other._key_of(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key_of(self))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields if name not in self._hidden)
        return f"{type(self).__qualname__}({shown})"

    def __reduce__(self):
        return _rebuild, (type(self), tuple(getattr(self, name) for name in self._fields))


class Record(Value):
    """A :class:`Value` whose fields can be set again (the behaviour of a plain ``@dataclass``:
    compared by its fields, not hashable).

    >>> class Box(Record):
    ...     _fields = ("items", "name")
    ...     def __init__(self, items=None, name=""):
    ...         self.items, self.name = [] if items is None else items, name
    >>> b = Box(name="b"); b.items.append(1); b.name = "c"
    >>> b, b == Box([1], "c"), Box.__hash__ is None
    (Box(items=[1], name='c'), True, True)
    """

    __slots__ = ()
    _frozen = False
    __setattr__ = object.__setattr__
    __delattr__ = object.__delattr__
    __hash__ = None  # type: ignore[assignment]
