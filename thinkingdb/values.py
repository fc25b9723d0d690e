"""Frozen value classes declared without ``dataclasses``' generated code: :class:`Value`.

A frozen dataclass compiles its generated methods from source in every process that imports it
(about 0.5 ms a class, and ``import dataclasses`` loads ``inspect``). The values a cold question loads
— the syntax tree, the model (``Fact``, ``Rule``, ``Limits`` ...), an answer, the query result, the
caller and its view — are :class:`Value` classes instead: one shared set of methods with the same
behaviour (frozen; equality, hash and order over the compared fields; dataclass-style repr;
``replace``; ``dataclasses.fields``, ``replace`` and ``asdict`` still work). It is defined in
:mod:`grammar.values` (the language package is the lowest layer and its syntax tree uses it too).

>>> class Pair(Value):
...     _fields = ("a", "b")
...     def __init__(self, a, b=0):
...         object.__setattr__(self, "a", a)
...         object.__setattr__(self, "b", b)
>>> Pair(1), Pair(1) == Pair(1, 0), Pair(1) == Pair(2), hash(Pair(1)) == hash((1, 0)), Pair(1).replace(b=2)
(Pair(a=1, b=0), True, False, True, Pair(a=1, b=2))
"""

from __future__ import annotations

from grammar.values import Record, Value

__all__ = ["Record", "Value"]
