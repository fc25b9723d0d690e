"""Which comparisons of a rule body assign a variable, in what order they run, and what stays unbound.

A variable is *bound* when a positive premise matches it. ``?v = expr`` (or ``expr = ?v``) whose ``?v``
is not bound is an *assignment*: once every variable of ``expr`` is bound, it binds ``?v``. Assignments
may build on each other in any written order; every other comparison needs all its variables bound.
The parser reports what stays unbound; the compiler evaluates the comparisons in the order given here.

>>> from grammar import parse
>>> rule = parse("rule r: ?x n ?a, ?w = ?v * 2, ?v = ?a + 1, ?w < 10 => ?x m ?w.").statements[0]
>>> order, bound, unbound = order_comparisons(rule.premises)
>>> [(f"?{t.name}" if t else "test") for _, t in order], sorted(bound), unbound
(['?v', '?w', 'test'], ['a', 'v', 'w', 'x'], [])
"""

from __future__ import annotations

from . import ast

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:
    from typing import Iterable

__all__ = ["expr_variables", "order_comparisons"]

_ANONYMOUS = "_"


def expr_variables(e: ast.Expr) -> list[ast.Variable]:
    """The variables of an expression, left to right.

    >>> expr_variables(ast.Arith("+", ast.Variable("x"), ast.Arith("*", ast.Symbol("2"), ast.Variable("y"))))
    [Variable(name='x'), Variable(name='y')]
    """
    if isinstance(e, ast.Variable):
        return [e]
    if isinstance(e, ast.Arith):
        return expr_variables(e.left) + expr_variables(e.right)
    return []


def _positive_variables(premises: Iterable) -> set[str]:
    out: set[str] = set()
    for p in premises:
        if isinstance(p, ast.Comparison) or p.negated:
            continue
        terms = p.args if isinstance(p, ast.NaryAtom) else (p.subject, p.object)
        out.update(t.name for t in terms if isinstance(t, ast.Variable) and t.name != _ANONYMOUS)
    return out


def _target(c: ast.Comparison, bound: set[str]) -> ast.Variable | None:
    """The variable ``c`` would assign: a lone unbound variable on one side of ``=``."""
    if c.op != "=":
        return None
    for side in (c.left, c.right):
        if isinstance(side, ast.Variable) and side.name != _ANONYMOUS and side.name not in bound:
            return side
    return None


def order_comparisons(premises: Iterable) -> tuple[list[tuple[ast.Comparison, ast.Variable | None]], set[str],
                                                   list[ast.Variable]]:
    """``(ordered, bound, unbound)``: the comparisons that can run, each with the variable it assigns
    (None for a test), in an order where every variable is bound before use; the names bound in the end
    (premises and assignments); the variable occurrences of the comparisons that can never be bound."""
    premises = tuple(premises)
    bound = _positive_variables(premises)
    pending = [p for p in premises if isinstance(p, ast.Comparison)]
    ordered: list[tuple[ast.Comparison, ast.Variable | None]] = []
    progress = True
    while pending and progress:
        progress = False
        for c in list(pending):
            target = _target(c, bound)
            needed = [v for v in expr_variables(c.left) + expr_variables(c.right) if v is not target]
            if all(v.name in bound for v in needed):
                ordered.append((c, target))
                if target is not None:
                    bound.add(target.name)
                pending.remove(c)
                progress = True
    unbound: list[ast.Variable] = []
    for c in pending:   # each unbound name once, where first written; an assignment's target is no cause
        target = _target(c, bound)
        for v in expr_variables(c.left) + expr_variables(c.right):
            if v is not target and v.name not in bound and all(u.name != v.name or v.name == _ANONYMOUS
                                                                  for u in unbound):
                unbound.append(v)
    return ordered, bound, unbound
