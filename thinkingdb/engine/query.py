"""Answering queries: conjunctions of triple patterns and property paths over asserted + derived facts.

:func:`evaluate` first keeps only the rules that can contribute a relation the query mentions. With
none, the query runs on the asserted facts directly (the graph's indexes; nothing is rebuilt). With
some, it runs a closure — seeded from the query's constant symbols, or in full mode when there are
none — within the limits, then evaluates the patterns over asserted and derived facts. An asserted
fact that matches is always an answer, with its own confidence.

Scores (docs/closure.md): a pattern's score is its best proof's score; a conjunction multiplies its
patterns' scores. ``aggregate="noisy-or"`` combines up to ``k`` distinct proofs of an answer as
``1 - Π(1 - s_i)``. Answers are sorted by score, highest first, then by their bindings.

>>> from thinkingdb.engine.graph import FactGraph
>>> from thinkingdb.model import Fact, Query, QueryPattern, PathRel, Var
>>> g = FactGraph([Fact("nginx", "depends_on", "openssl", 0.9), Fact("nginx", "depends_on", "zlib")])
>>> res = evaluate(Query((QueryPattern("nginx", PathRel("depends_on"), Var("x")),)), g, ())
>>> [(a.bindings, a.score) for a in res.answers]
[({'x': 'zlib'}, 1.0), ({'x': 'openssl'}, 0.9)]
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

from .closure import closure
from ..errors import QueryError
from .graph import FactGraph
from ..model import Limits, Path, PathAlt, PathInv, PathRel, PathRepeat, PathSeq, Query, QueryPattern, Rule, Triple, Var
from .paths import PathWalk, path_proof
from .proofs import Proof
from .results import GraphView
from .rules import relevant_rules

__all__ = ["evaluate", "why", "Answer", "QueryResult", "noisy_or"]

AGGREGATES = ("best", "noisy-or")


def noisy_or(scores: Iterable[float]) -> float:
    """Evidence from independent proofs: ``1 - Π(1 - s_i)``.

    >>> round(noisy_or([0.5, 0.5]), 6)
    0.75
    """
    miss = 1.0
    for s in scores:
        miss *= 1.0 - s
    return 1.0 - miss


@dataclass(frozen=True)
class Answer:
    """One answer: ``bindings`` (variable name → symbol key), ``score``, and ``proof`` — a
    :class:`Proof`, or with ``aggregate="noisy-or"`` a tuple of the proofs combined. The proof is
    built when first read."""

    bindings: dict[str, str]
    score: float
    _make: Callable[[], Proof | tuple[Proof, ...]] = field(repr=False, compare=False)

    @property
    def proof(self) -> Proof | tuple[Proof, ...]:
        cached = self.__dict__.get("_proof")
        if cached is None:
            cached = self._make()
            object.__setattr__(self, "_proof", cached)
        return cached

    def to_json(self) -> dict:
        p = self.proof
        return {"bindings": dict(self.bindings), "score": self.score,
                "proof": [x.to_json() for x in p] if isinstance(p, tuple) else p.to_json()}


@dataclass(frozen=True)
class QueryResult:
    """Sorted answers; ``truncated`` names the bound that cut the closure or a path walk short;
    ``more`` is True when ``max_answers`` dropped answers; ``variables`` in order of first appearance."""

    answers: list[Answer]
    truncated: str | None
    variables: tuple[str, ...] = ()
    more: bool = False
    stats: object = None

    def to_json(self) -> dict:
        return {"answers": [a.to_json() for a in self.answers], "truncated": self.truncated}


def _relations(path: Path) -> set[str]:
    if isinstance(path, PathRel):
        return {path.relation}
    if isinstance(path, (PathInv, PathRepeat)):
        return _relations(path.path)
    parts = path.parts if isinstance(path, PathSeq) else path.options
    return set().union(*(_relations(p) for p in parts))


FORWARD, BACKWARD = 1, 2   # the directions a relation's edges are walked in, as bits


def _flip(bits: int) -> int:
    return ((bits & FORWARD) << 1) | ((bits & BACKWARD) >> 1)


def chain(rule: Rule) -> list[tuple[str, int]] | None:
    """The premises of ``rule`` as a chain of edges from the head's subject to its object, each with
    the direction it is walked in, or None when the rule has another shape (a constant, a premise off
    the chain, a branch).

    >>> x, y, z = Var("x"), Var("y"), Var("z")
    >>> from thinkingdb.model import Atom
    >>> chain(Rule("t", (Atom(x, "r", y), Atom(y, "r", z)), Atom(x, "r", z)))
    [('r', 1), ('r', 1)]
    >>> chain(Rule("sym", (Atom(x, "r", y),), Atom(y, "r", x)))
    [('r', 2)]
    >>> chain(Rule("c", (Atom(x, "r", "k"),), Atom(x, "s", x))) is None
    True
    """
    terms = [t for a in rule.premises + (rule.head,) for t in (a.subject, a.object)]
    if not all(isinstance(t, Var) for t in terms) or rule.head.subject == rule.head.object:
        return None
    cur, left, out = rule.head.subject, list(rule.premises), []
    seen = {cur}
    while left:
        touching = [a for a in left if cur in (a.subject, a.object)]
        if len(touching) != 1 or touching[0].subject == touching[0].object:
            return None
        a = touching[0]
        left.remove(a)
        forward = a.subject == cur
        out.append((a.relation, FORWARD if forward else BACKWARD))
        cur = a.object if forward else a.subject
        if cur in seen:
            return None
        seen.add(cur)
    return out if cur == rule.head.object else None


def _walk_bits(path: Path, bits: int, out: dict[str, int]) -> None:
    if isinstance(path, PathRel):
        out[path.relation] = out.get(path.relation, 0) | bits
    elif isinstance(path, PathInv):
        _walk_bits(path.path, _flip(bits), out)
    elif isinstance(path, PathRepeat):
        _walk_bits(path.path, bits, out)
    else:
        for part in (path.parts if isinstance(path, PathSeq) else path.options):
            _walk_bits(part, bits, out)


def demand(query: Query, rules) -> tuple[str, dict[str, int]] | None:
    """For a one-pattern query with a constant end, the constant the answers are walked from and the
    directions in which each relation's edges can lie on a walk or a proof from it; None otherwise.

    Every relevant rule must be a :func:`chain`: a derived edge then stands for a chain of edges
    between its own ends, so every fact any proof of an answer uses is reachable from the constant
    along these directions, and a closure scoped to that region derives exactly the answers' facts
    with the same best proofs. With the default rule shapes (transitive, symmetric, subrelation,
    composition) a query such as ``? GO:0006915 ancestor ?y`` then reaches only the term's ancestors,
    not its whole connected component.
    """
    if len(query.patterns) != 1:
        return None
    p = query.patterns[0]
    if not isinstance(p.subject, Var):
        start, bits = p.subject, FORWARD
    elif not isinstance(p.object, Var):
        start, bits = p.object, BACKWARD
    else:
        return None
    chains = [(r.head.relation, chain(r)) for r in rules]
    if any(c is None for _, c in chains):
        return None
    out: dict[str, int] = {}
    _walk_bits(p.path, bits, out)
    changed = True
    while changed:
        changed = False
        for head, edges in chains:
            want = out.get(head, 0)
            if not want:
                continue
            for rel, d in edges:
                add = want if d == FORWARD else _flip(want)
                if out.get(rel, 0) | add != out.get(rel, 0):
                    out[rel] = out.get(rel, 0) | add
                    changed = True
    return start, out


def _view_for(query_rels: set[str], constants: list[str], g: FactGraph, rules, limits: Limits, alternatives: int,
              query: Query | None = None):
    rel_rules = relevant_rules(rules, query_rels)
    if not rel_rules:
        return GraphView(g)
    plan = demand(query, rel_rules) if query is not None else None
    if plan is not None:
        start, directions = plan
        return closure(g, rel_rules, seeds=[start], limits=limits, alternatives=alternatives, directions=directions)
    via = query_rels | {p.relation for r in rel_rules for p in r.premises} | {r.head.relation for r in rel_rules}
    return closure(g, rel_rules, seeds=constants or None, limits=limits, alternatives=alternatives, via=via)


def evaluate(query: Query, g: FactGraph, rules: Iterable[Rule] = (), *, limits: Limits = Limits(),
             aggregate: str = "best", k: int = 5, max_answers: int | None = None) -> QueryResult:
    """Answer ``query`` over the facts of ``g`` and what ``rules`` derive within ``limits``."""
    if aggregate not in AGGREGATES:
        raise QueryError(f"unknown aggregate {aggregate!r}; expected best or noisy-or")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise QueryError(f"k must be a positive integer, got {k!r}")
    t0 = time.perf_counter()
    deadline = None if limits.timeout_ms is None else t0 + limits.timeout_ms / 1000.0
    kk = k if aggregate == "noisy-or" else 1
    rels = set().union(*(_relations(p.path) for p in query.patterns))
    constants = sorted({t for p in query.patterns for t in (p.subject, p.object) if not isinstance(t, Var)})
    view = _view_for(rels, constants, g, tuple(rules), limits, kk - 1, query)
    truncated = view.truncated
    ids = view.ids
    walks = [PathWalk(view, p.path, max_nodes=limits.max_nodes, deadline=deadline) for p in query.patterns]
    back = [None] * len(walks)
    order = _order(query.patterns)

    def matches(i: int, env: dict) -> list[tuple[dict, float, Callable[[], list[Proof]]]]:
        """Ways pattern ``i`` matches under ``env``: (new bindings, score, proofs builder)."""
        pat = query.patterns[i]
        s = env.get(pat.subject.name) if isinstance(pat.subject, Var) else ids.find_sym(pat.subject)
        o = env.get(pat.object.name) if isinstance(pat.object, Var) else ids.find_sym(pat.object)
        if (not isinstance(pat.subject, Var) and s is None) or (not isinstance(pat.object, Var) and o is None):
            return []
        out = []
        if s is not None or o is None:
            starts = [s] if s is not None else _all_starts(view, pat.path)
            for start in starts:
                for end, (score, steps) in walks[i].run(start).items():
                    if o is not None and end != o:
                        continue
                    out.append(((start, end), score, steps))
        else:
            if back[i] is None:
                from .paths import invert
                back[i] = PathWalk(view, invert(pat.path), max_nodes=limits.max_nodes, deadline=deadline)
            for start, (score, steps) in back[i].run(o).items():
                out.append(((start, o), score, _reversed(steps)))
        result = []
        for (a, b), score, steps in out:
            new = dict(env)
            ok = True
            for term, val in ((pat.subject, a), (pat.object, b)):
                if isinstance(term, Var):
                    if new.setdefault(term.name, val) != val:
                        ok = False
            if ok:
                result.append((new, score, _proofs_builder(view, pat.path, a, b, score, steps, kk)))
        return result

    partial = [({}, 1.0, ())]
    for i in order:
        nxt = []
        for env, score, builders in partial:
            for new, sc, build in matches(i, env):
                nxt.append((new, score * sc, builders + ((i, build),)))
        partial = nxt
    for w in walks + [b for b in back if b is not None]:
        truncated = truncated or w.truncated
    names = tuple(v.name for v in query.variables())
    answers = []
    for env, score, builders in partial:
        bindings = {n: ids.sym_key(env[n]) for n in names}
        if aggregate == "noisy-or":
            combos = _combine([b for _, b in sorted(builders)], kk)
            score = noisy_or(c.score for c in combos)
            make = (lambda combos=combos: tuple(combos))
        else:
            make = (lambda builders=builders, score=score: _conjoin([b()[0] for _, b in sorted(builders)], score))
        answers.append(Answer(bindings, score, make))
    answers.sort(key=lambda a: (-a.score, tuple(a.bindings[n] for n in names)))
    more = max_answers is not None and len(answers) > max_answers
    if more:
        answers = answers[:max_answers]
    return QueryResult(answers, truncated, names, more, getattr(view, "stats", None))


def _order(patterns: tuple[QueryPattern, ...]) -> list[int]:
    """Patterns with a constant first, then those sharing a bound variable, else in written order."""
    bound: set[str] = set()
    left = list(range(len(patterns)))
    order = []
    while left:
        def cost(i):
            p = patterns[i]
            terms = (p.subject, p.object)
            known = sum(1 for t in terms if not isinstance(t, Var) or t.name in bound)
            return -known, i
        best = min(left, key=cost)
        left.remove(best)
        order.append(best)
        bound.update(v.name for v in patterns[best].variables())
    return order


def _nullable(path: Path) -> bool:
    """Can the path match zero steps (then every symbol of the graph relates to itself)?"""
    if isinstance(path, PathRel):
        return False
    if isinstance(path, PathInv):
        return _nullable(path.path)
    if isinstance(path, PathSeq):
        return all(_nullable(p) for p in path.parts)
    if isinstance(path, PathAlt):
        return any(_nullable(p) for p in path.options)
    return path.min == 0 or _nullable(path.path)


def _all_starts(view, path: Path) -> list[int]:
    if _nullable(path):
        return list(range(len(view.g._syms)))
    first = _relations(path)
    out: set[int] = set()
    for rel in first:
        rid = view.ids.find_rel(rel)
        if rid is not None:
            out.update(view.subjects(rid))
            if rid < len(view.g._in):
                out.update(view.g._in[rid])
            d_in = getattr(getattr(view, "_store", None), "d_in", {}).get(rid, {})
            out.update(d_in)
    return sorted(out)


def _reversed(steps):
    return lambda: steps()[::-1]


def _proofs_builder(view, path: Path, s: int, o: int, score: float, steps, k: int):
    def build() -> list[Proof]:
        keys = steps()
        if isinstance(path, PathRel) and len(keys) == 1:
            return view.fact_proofs(keys[0], k)
        return [path_proof(view, path, s, o, score, keys)]
    return build


def _conjoin(proofs: list[Proof], score: float) -> Proof:
    if len(proofs) == 1:
        return proofs[0]
    return Proof(None, score, max(p.depth for p in proofs), "query", None, 1.0, tuple(proofs))


def _combine(builders, k: int) -> list[Proof]:
    """Up to ``k`` distinct proofs of a conjunction: the best combinations of its patterns' proofs."""
    lists = [b() for b in builders]
    combos = []
    for choice in itertools.islice(itertools.product(*lists), 10 * k * k):
        score = 1.0
        for p in choice:
            score *= p.score
        combos.append((score, choice))
    combos.sort(key=lambda c: -c[0])
    return [_conjoin(list(choice), score) for score, choice in combos[:k]]


def why(triple: Triple, g: FactGraph, rules: Iterable[Rule] = (), *, limits: Limits = Limits(),
        alternatives: int = 0) -> Proof | None:
    """The best proof of ``triple`` (with up to ``alternatives`` others attached), or None when it is
    neither asserted nor derivable within ``limits``. Seeded from the triple's two symbols.

    >>> from thinkingdb.model import Fact, Triple
    >>> g = FactGraph([Fact("a", "r", "b", 0.5)])
    >>> why(Triple("a", "r", "b"), g).score
    0.5
    """
    rel_rules = relevant_rules(tuple(rules), {triple.relation})
    if not rel_rules:
        c = g.confidence(triple)
        return None if c is None else Proof.asserted(triple, c)
    plan = demand(Query((QueryPattern(triple.subject, PathRel(triple.relation), triple.object),)), rel_rules)
    if plan is not None:   # every proof of the fact is a chain from its subject: scope along it only
        res = closure(g, rel_rules, seeds=[plan[0]], limits=limits, alternatives=alternatives, directions=plan[1])
    else:
        via = {triple.relation} | {p.relation for r in rel_rules for p in r.premises} | {r.head.relation for r in rel_rules}
        res = closure(g, rel_rules, seeds=[triple.subject, triple.object], limits=limits,
                      alternatives=alternatives, via=via)
    return res.proof(triple)
