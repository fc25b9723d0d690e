"""Arithmetic and comparisons in rule bodies: the frozen values and their one evaluator.

A number is a symbol whose key is a numeral: an integer (``25``, ``-4``) or a decimal (``2.5``). Every
engine and the proof checker evaluate with :func:`evaluate` and :func:`holds`, so they agree:

* ``+ - *`` of two integers is an integer; with a decimal it is a decimal. ``/`` is exact division: an
  integer when it divides evenly (``6 / 3`` is ``2``), else a decimal (``7 / 2`` is ``3.5``). ``%`` is
  the remainder with the divisor's sign (``-7 % 3`` is ``2``).
* An operation on a non-number, a division by zero, or a result that is not finite or has more than
  :data:`MAX_DIGITS` digits has no value: the match is dropped (like a premise finding no fact).
* ``= !=`` compare numbers by value (``3 = 3.0``) and other symbols by key; ``< <= > >=`` hold only
  between two numbers.
* ``?v := expr`` (written ``?v = expr`` with ``?v`` unbound) binds ``?v`` to the value's key.

>>> x, y = object(), object()
>>> env = {x: "7", y: "2"}
>>> evaluate(Arith("/", x, y), env), evaluate(Arith("-", Arith("-", "1", "2"), "3"), env)
('3.5', '-4')
>>> holds("<=", "5", "25"), holds("=", "3", "3.0"), holds("<", "a", "b")
(True, True, False)
"""

from __future__ import annotations

import math

from .errors import ValidationError
from .values import Value

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["Arith", "Constraint", "COMPARISONS", "OPERATORS", "MAX_DIGITS", "number", "key_of", "evaluate",
           "holds", "expr_variables", "format_expr"]

OPERATORS = ("+", "-", "*", "/", "%")
COMPARISONS = ("<", "<=", ">", ">=", "=", "!=")
ASSIGN = ":="
MAX_DIGITS = 100   # an integer result longer than this has no value (recursion through * can explode)
_set = object.__setattr__
_INT = r"[+-]?\d+\Z"
_DEC = r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?\Z"
_NUMBER: tuple | None = None   # (_INT, _DEC) compiled by the first number(): most processes compare no numbers


class Arith(Value):
    """``left op right``; operands are symbol keys (``str``), variables, or operations."""

    __slots__ = ("op", "left", "right")
    op: str
    left: Any
    right: Any

    def __init__(self, op: str, left: Any, right: Any) -> None:
        _set(self, "op", op)
        _set(self, "left", left)
        _set(self, "right", right)
        if op not in OPERATORS:
            raise ValidationError(f"unknown arithmetic operator {op!r}; expected one of {' '.join(OPERATORS)}")

    def __str__(self) -> str:
        return format_expr(self)


Expr = object   # str | Var | Arith: a name for annotations (typing.Any would import typing, ~3 ms cold)
"""A symbol key, a variable (:class:`thinkingdb.model.Var`) or an :class:`Arith`."""


class Constraint(Value):
    """A comparison ``left op right`` of a rule body, or an assignment (``op`` ``:=``, ``left`` a variable)."""

    __slots__ = ("op", "left", "right")
    op: str
    left: Any
    right: Any

    def __init__(self, op: str, left: Any, right: Any) -> None:
        _set(self, "op", op)
        _set(self, "left", left)
        _set(self, "right", right)
        if op not in COMPARISONS and op != ASSIGN:
            raise ValidationError(f"unknown comparison {op!r}; expected one of {' '.join(COMPARISONS)}")
        if op == ASSIGN and (isinstance(left, (str, Arith)) or left is None):
            raise ValidationError("an assignment binds a variable: its left side must be one")

    @property
    def assigns(self) -> bool:
        return self.op == ASSIGN

    def variables(self) -> tuple:
        """Every variable, the assigned one first."""
        return tuple(expr_variables(self.left) + expr_variables(self.right))

    def __str__(self) -> str:
        op = "=" if self.op == ASSIGN else self.op
        return f"{format_expr(self.left)} {op} {format_expr(self.right)}"


def expr_variables(e: Expr) -> list:
    """The variables of an expression, left to right (anything not a key and not an operation)."""
    if isinstance(e, Arith):
        return expr_variables(e.left) + expr_variables(e.right)
    return [] if isinstance(e, str) else [e]


_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "%": 2}


def format_expr(e: Expr) -> str:
    """``?x - (?y - 1)``: the parentheses the tree needs.

    >>> format_expr(Arith("*", Arith("+", "1", "2"), "3"))
    '(1 + 2) * 3'
    """
    if not isinstance(e, Arith):
        return str(e)
    left, right = format_expr(e.left), format_expr(e.right)
    if isinstance(e.left, Arith) and _PRECEDENCE[e.left.op] < _PRECEDENCE[e.op]:
        left = f"({left})"
    if isinstance(e.right, Arith) and _PRECEDENCE[e.right.op] <= _PRECEDENCE[e.op]:
        right = f"({right})"
    return f"{left} {e.op} {right}"


def number(key: str) -> int | float | None:
    """The number a symbol key stands for, or None.

    >>> number("-4"), number("2.5"), number("1e3"), number("nginx"), number("v1.2")
    (-4, 2.5, 1000.0, None, None)
    """
    global _NUMBER
    if _NUMBER is None:
        import re
        _NUMBER = (re.compile(_INT), re.compile(_DEC))
    whole, dec = _NUMBER
    if whole.match(key):
        return int(key) if len(key) <= MAX_DIGITS + 1 else None
    if dec.match(key):
        value = float(key)
        return value if math.isfinite(value) else None
    return None


def key_of(value: int | float) -> str | None:
    """The symbol key of a computed number (None when it is not finite or too long).

    >>> key_of(3), key_of(-0.5), key_of(float("inf"))
    ('3', '-0.5', None)
    """
    if isinstance(value, int):
        text = str(value)
        return text if len(text.lstrip("-")) <= MAX_DIGITS else None
    return repr(value) if math.isfinite(value) else None


def _apply(op: str, a: int | float, b: int | float) -> int | float | None:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if b == 0:
        return None
    if op == "%":
        return a % b
    if isinstance(a, int) and isinstance(b, int) and a % b == 0:
        return a // b
    return a / b


def evaluate(e: Expr, env: Mapping) -> str | None:
    """The key of ``e``'s value under ``env`` (variable -> key); None when it has none (see above)."""
    if not isinstance(e, Arith):
        return e if isinstance(e, str) else env.get(e)
    left, right = evaluate(e.left, env), evaluate(e.right, env)
    if left is None or right is None:
        return None
    a, b = number(left), number(right)
    if a is None or b is None:
        return None
    try:
        value = _apply(e.op, a, b)
    except OverflowError:
        return None
    return None if value is None else key_of(value)


def holds(op: str, left: str, right: str) -> bool:
    """Whether ``left op right`` holds between two keys (see the module docstring)."""
    a, b = number(left), number(right)
    if op in ("=", "!="):
        same = (a == b) if a is not None and b is not None else left == right
        return same if op == "=" else not same
    if a is None or b is None:
        return False
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def run(constraints, env: dict) -> list[str] | None:
    """Run ``constraints`` in order over ``env`` (variable -> key), binding what they assign; the text of
    each step (``3 = 1 + 2``, ``5 <= 25``) when all hold, else None.

    >>> v = object()
    >>> env = {v: "5"}
    >>> run([Constraint("<=", v, "25")], env), run([Constraint(">", v, "25")], env)
    (['5 <= 25'], None)
    """
    steps: list[str] = []
    for c in constraints:
        if c.op == ASSIGN:
            value = evaluate(c.right, env)
            if value is None:
                return None
            env[c.left] = value
            steps.append(f"{value} = {_shown(c.right, env)}")
            continue
        left, right = evaluate(c.left, env), evaluate(c.right, env)
        if left is None or right is None or not holds(c.op, left, right):
            return None
        steps.append(f"{_shown(c.left, env)} {c.op} {_shown(c.right, env)}")
    return steps


def _shown(e: Expr, env: Mapping) -> str:
    """An expression with its variables replaced by their values."""
    if isinstance(e, Arith):
        return format_expr(Arith(e.op, _ground(e.left, env), _ground(e.right, env)))
    return str(_ground(e, env))


def _ground(e: Expr, env: Mapping) -> Expr:
    if isinstance(e, Arith):
        return Arith(e.op, _ground(e.left, env), _ground(e.right, env))
    return e if isinstance(e, str) else env.get(e, str(e))
