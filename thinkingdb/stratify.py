"""Stratification of a rule set with ``not`` premises (stratified negation).

A relation depends on the relations of its rules' premises; through a ``not`` premise it depends on
that relation *strictly*: every fact of it must be known before the rule may conclude from its
absence. :func:`strata` orders the rules so: a stratum holds the rules whose head relations it
defines, and every relation a rule negates is complete in a lower stratum. A cycle through a ``not``
premise has no such order; :class:`StratificationError` then names the cycle, rule by rule.

A rule set without ``not`` premises is one stratum. The engines use :func:`strata` (re-exported by
:mod:`thinkingdb.engine.rules`): the reference closure evaluates stratum by stratum.

>>> from thinkingdb.model import Atom, Rule, Var
>>> x, y = Var("x"), Var("y")
>>> rules = [Rule("lacks", (Atom(x, "requires", y),), Atom(x, "lacks", y), negated=(Atom(x, "has", y),)),
...          Rule("has", (Atom(x, "uses", y),), Atom(x, "has", y))]
>>> strata(rules)
((1,), (0,))
"""

from __future__ import annotations

from typing import Iterable

from .errors import ValidationError
from .model import Rule

__all__ = ["StratificationError", "strata", "has_negation"]


class StratificationError(ValidationError):
    """The rules cannot be ordered: a relation depends on its own absence through ``cycle``, a tuple
    of ``(relation, rule name, negated, relation it needs)`` steps; ``rule`` has the ``not`` premise."""

    code = "cyclic_negation"

    def __init__(self, message: str, cycle: tuple[tuple[str, str, bool, str], ...], rule: str):
        super().__init__(message)
        self.cycle, self.rule = cycle, rule


def has_negation(rules: Iterable[Rule]) -> bool:
    """Whether any rule has a ``not`` premise."""
    return any(r.negated for r in rules)


def _edges(rules: tuple[Rule, ...]) -> dict[str, list[tuple[str, str, bool]]]:
    """head relation -> [(premise relation, rule name, negated)]."""
    out: dict[str, list[tuple[str, str, bool]]] = {}
    for r in rules:
        deps = out.setdefault(r.head.relation, [])
        deps.extend((p.relation, r.name, False) for p in r.premises)
        deps.extend((p.relation, r.name, True) for p in r.negated)
        for p in r.premises + r.negated:
            out.setdefault(p.relation, [])
    return out


def _components(graph: dict[str, list[tuple[str, str, bool]]]) -> dict[str, int]:
    """Strongly connected components (iterative Tarjan): relation -> component number, numbered so
    that a component's dependencies come first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    comp: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    count = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w, _, _ in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp[w] = count
                    if w == v:
                        break
                count += 1
    return comp


def _cycle(graph, comp, head: str, dep: str, rule: str) -> tuple[tuple[str, str, bool, str], ...]:
    """The steps ``(relation, rule, negated, relation it needs)`` from ``head`` through ``not dep``
    back to ``head`` (breadth first inside their component, so the cycle is a shortest one)."""
    steps = [(head, rule, True, dep)]
    if dep == head:
        return tuple(steps)
    prev: dict[str, tuple[str, str, bool]] = {}
    todo, seen = [dep], {dep}
    while todo and head not in seen:
        nxt = []
        for v in todo:
            for w, name, neg in sorted(graph[v]):
                if comp[w] == comp[head] and w not in seen:
                    seen.add(w)
                    prev[w] = (v, name, neg)
                    nxt.append(w)
        todo = nxt
    back, cur = [], head
    while cur != dep:
        v, name, neg = prev[cur]
        back.append((v, name, neg, cur))
        cur = v
    return tuple(steps + back[::-1])


def strata(rules: Iterable[Rule]) -> tuple[tuple[int, ...], ...]:
    """The indices of ``rules`` grouped into strata, lowest first, each in rule order; raises
    :class:`StratificationError` naming a cycle through negation. Without negation: one stratum.

    >>> from thinkingdb.model import Atom, Rule, Var
    >>> x = Var("x")
    >>> strata([Rule("r", (Atom(x, "a", "t"),), Atom(x, "ok", "t"), negated=(Atom(x, "ok", "t"),))])
    Traceback (most recent call last):
    ...
    thinkingdb.stratify.StratificationError: the rules are not stratifiable: a cycle through negation: ok needs not ok (rule r)
    """
    rules = tuple(rules)
    if not rules:
        return ()
    if not has_negation(rules):
        return (tuple(range(len(rules))),)
    graph = _edges(rules)
    comp = _components(graph)
    for head in sorted(graph):
        for dep, rule, neg in sorted(graph[head]):
            if neg and comp[dep] == comp[head]:
                cycle = _cycle(graph, comp, head, dep, rule)
                text = ", ".join(f"{a} needs {'not ' if n else ''}{b} (rule {r})" for a, r, n, b in cycle)
                raise StratificationError(f"the rules are not stratifiable: a cycle through negation: {text}",
                                          cycle, rule)
    level: dict[int, int] = {}
    for c in sorted(set(comp.values())):   # dependencies first
        members = [v for v in graph if comp[v] == c]
        best = 0
        for v in members:
            for dep, _, neg in graph[v]:
                if comp[dep] != c:
                    best = max(best, level[comp[dep]] + (1 if neg else 0))
        level[c] = best
    groups: dict[int, list[int]] = {}
    for i, r in enumerate(rules):
        groups.setdefault(level[comp[r.head.relation]], []).append(i)
    return tuple(tuple(groups[k]) for k in sorted(groups))
