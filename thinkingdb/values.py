"""Frozen value classes declared without ``dataclasses``' generated code.

A frozen dataclass compiles its ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``
and ``__delattr__`` from source in every process that imports it: about 0.4-0.6 ms a class. A plain
question in a fresh process loads five such classes (an answer, the query result, the caller, the view
and the caller's view), a fifth of its own time (docs/closure.md, issue 20). :class:`Value` gives them
the same behaviour with one shared set of methods; each class writes only its ``__init__``.

A subclass names its fields in ``_fields`` (repr order), those it compares and hashes in ``_compare``,
and those its repr leaves out in ``_hidden``; its ``__init__`` sets them with ``object.__setattr__``.

>>> class Pair(Value):
...     _fields = _compare = ("a", "b")
...     def __init__(self, a, b=0):
...         object.__setattr__(self, "a", a)
...         object.__setattr__(self, "b", b)
>>> Pair(1), Pair(1) == Pair(1, 0), Pair(1) == Pair(2), hash(Pair(1)) == hash((1, 0)), Pair(1).replace(b=2)
(Pair(a=1, b=0), True, False, True, Pair(a=1, b=2))
>>> Pair(1).a = 2
Traceback (most recent call last):
...
dataclasses.FrozenInstanceError: cannot assign to field 'a'
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError

__all__ = ["Value"]


class Value:
    """Immutable, compared and hashed by ``_compare``, shown by ``_fields`` less ``_hidden`` (the
    behaviour of ``@dataclass(frozen=True)`` with ``field(compare=False, repr=False)``)."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()
    _compare: tuple[str, ...] = ()
    _hidden: tuple[str, ...] = ()

    def __setattr__(self, name: str, value) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def replace(self, **changes):
        """A copy with ``changes`` (what ``dataclasses.replace`` does: ``__init__`` runs again)."""
        values = {name: getattr(self, name) for name in self._fields}
        values.update(changes)
        return type(self)(**values)

    def _key(self) -> tuple:
        return tuple(getattr(self, name) for name in self._compare)

    def __eq__(self, other) -> bool:
        if other.__class__ is self.__class__:
            return self._key() == other._key()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields if name not in self._hidden)
        return f"{type(self).__qualname__}({shown})"
