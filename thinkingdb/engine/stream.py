"""Answers as they are found: the streaming twin of :func:`thinkingdb.engine.query.evaluate`.

:func:`answer_stream` evaluates the same query with the same closure (goal-directed by default), the
same pattern order and the same scores, but joins the patterns depth first and yields each answer the
moment its last pattern matches, in the order they are found (not sorted by score). Proofs are built
only when an answer's ``proof`` is read. Stopping the iteration stops the work: ``limit`` (or simply
not asking for more) leaves the rest of the join undone. Over asserted facts alone, a pattern with
both ends free walks the subjects of its relations lazily, so ``limit`` also spares decoding the rest
of a memory-mapped graph. A question with a ``?_`` is the exception: rows that differ only in it are one
answer, whose score is known once every row is, so it is answered whole (:func:`evaluate`), best first.

>>> from thinkingdb.engine.graph import FactGraph
>>> from thinkingdb.model import Fact, Query, QueryPattern, PathRel, Var
>>> g = FactGraph([Fact("a", "r", "b"), Fact("b", "r", "c", 0.5), Fact("c", "r", "d")])
>>> q = Query((QueryPattern(Var("x"), PathRel("r"), Var("y")), QueryPattern(Var("y"), PathRel("r"), Var("z"))))
>>> s = answer_stream(q, g, ())
>>> [(a.bindings, a.score) for a in s]
[({'x': 'a', 'y': 'b', 'z': 'c'}, 0.5), ({'x': 'b', 'y': 'c', 'z': 'd'}, 0.5)]
>>> s.count, s.truncated
(2, None)
>>> [a.bindings["x"] for a in answer_stream(q, g, (), limit=1)]
['a']
"""

from __future__ import annotations

import time
from typing import Callable, Iterable, Iterator

from ..errors import QueryError
from ..model import Limits, PathRel, Query, Rule, Var
from .graph import FactGraph
from .paths import PathWalk, invert, nullable, relations
from .query import AGGREGATES, Answer, _absent_constant, _all_starts, _anonymous, _combine, _conjoin, _order, \
    _proofs_builder, _reversed, _view_for, combined_scores, evaluate, noisy_or
from .results import GraphView

__all__ = ["AnswerStream", "answer_stream"]


class AnswerStream:
    """An iterable of :class:`~thinkingdb.engine.query.Answer` in the order they are found.

    ``variables``: the query's variables in order of first appearance. ``count``: answers yielded so
    far. ``truncated``: the bound that cut the closure or a path walk short (final once the stream is
    exhausted; the closure's part is known before the first answer). ``stats``: the closure's."""

    def __init__(self, gen: Iterator[Answer], variables: tuple[str, ...], view, walks: list[list]) -> None:
        # walks: lists of what may cut (path walks; None until made), read when asked: a pattern's
        # backward walk is made during the join, after the stream itself
        self._gen, self.variables, self._view, self._walks = gen, variables, view, walks
        self.count = 0
        self.stats = getattr(view, "stats", None)

    @property
    def truncated(self) -> str | None:
        t = self._view.truncated
        for group in self._walks:
            for w in group:
                if w is not None:
                    t = t or w.truncated
        return t

    def __iter__(self) -> Iterator[Answer]:
        for a in self._gen:
            self.count += 1
            yield a

    def close(self) -> None:
        self._gen.close()


def answer_stream(query: Query, g: FactGraph, rules: Iterable[Rule] = (), *, limits: Limits = Limits(),
                  aggregate: str = "best", k: int = 5, limit: int | None = None,
                  goal_directed: bool = True) -> AnswerStream:
    """Stream the answers of ``query`` (at most ``limit``); see the module docstring."""
    if aggregate not in AGGREGATES:
        raise QueryError(f"unknown aggregate {aggregate!r}; expected best or noisy-or")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise QueryError(f"k must be a positive integer, got {k!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise QueryError(f"limit must be a non-negative integer, got {limit!r}")
    deadline = None if limits.timeout_ms is None else time.perf_counter() + limits.timeout_ms / 1000.0
    if _anonymous(query):
        # rows that differ only in a ?_ are one answer (its best row; with noisy-or the k best proofs of all
        # its rows), known only once every row is: answered whole, as evaluate answers it, best first
        res = evaluate(query, g, rules, limits=limits, aggregate=aggregate, k=k, goal_directed=goal_directed)
        whole = type("Whole", (), {"truncated": res.truncated, "stats": res.stats})()
        return AnswerStream(iter(res.answers if limit is None else res.answers[:limit]), res.variables, whole, [])
    kk = k if aggregate == "noisy-or" else 1
    view = _view_for(query, g, tuple(rules), limits, kk - 1, goal_directed)
    if _absent_constant(view, query):   # a constant in no fact of the model: no answer, as evaluate says
        return AnswerStream(iter(()), tuple(v.name for v in query.variables()), view, [[view]])
    from .arrays import array_answers   # one pattern with a constant end, or a conjunction run as arrays
    bulk = array_answers(view, query, limits, deadline, aggregate)
    if bulk is not None:
        answers, cut = bulk
        held = type("Cut", (), {"truncated": cut})()
        names = (answers.var,) if answers.var is not None else tuple(v.name for v in query.variables())
        return AnswerStream(iter(answers if limit is None else answers[:limit]), names, view, [[held]])
    ids = view.ids
    pats = query.patterns
    walks: list = [PathWalk(view, p.path, max_nodes=limits.max_nodes, deadline=deadline) for p in pats]
    back: list = [None] * len(pats)
    order = _order(pats)
    names = tuple(v.name for v in query.variables())

    def matches(i: int, env: dict) -> Iterator[tuple[dict, float, Callable]]:
        pat = pats[i]
        s = env.get(pat.subject.name) if isinstance(pat.subject, Var) else ids.find_sym(pat.subject)
        o = env.get(pat.object.name) if isinstance(pat.object, Var) else ids.find_sym(pat.object)
        if (not isinstance(pat.subject, Var) and s is None) or (not isinstance(pat.object, Var) and o is None):
            return
        if s is not None and o is not None and isinstance(pat.path, PathRel):   # a ground fact: looked up, as
            rid = ids.find_rel(pat.path.relation)                               # evaluate does (no walk to cut)
            score = None if rid is None else view.fact_score((s, rid, o))
            if score is not None:
                yield env, score, _proofs_builder(view, pat.path, s, o, score, lambda key=(s, rid, o): [key], kk)
            return
        if s is not None or o is None:
            starts = [s] if s is not None else _starts(view, pat.path)
            found = ((start, end, score, steps) for start in starts
                     for end, (score, steps) in walks[i].run(start).items() if o is None or end == o)
        else:
            if back[i] is None:
                back[i] = PathWalk(view, invert(pat.path), max_nodes=limits.max_nodes, deadline=deadline)
            found = ((start, o, score, _reversed(steps)) for start, (score, steps) in back[i].run(o).items())
        for a, b, score, steps in found:
            new = dict(env)
            ok = True
            for term, val in ((pat.subject, a), (pat.object, b)):
                if isinstance(term, Var) and new.setdefault(term.name, val) != val:
                    ok = False
            if ok:
                yield new, score, _proofs_builder(view, pat.path, a, b, score, steps, kk)

    late = type("Late", (), {"truncated": None})()   # the deadline passed inside the join: "time"

    def join(depth: int, env: dict, score: float, builders: tuple) -> Iterator[Answer]:
        if late.truncated or (deadline is not None and time.perf_counter() > deadline):
            late.truncated = "time"
            return
        if depth == len(order):
            bindings = {n: ids.sym_key(env[n]) for n in names}
            if aggregate == "noisy-or":
                bs = [b for _, b in sorted(builders, key=lambda x: x[0])]   # the scores now, the proofs when read
                yield Answer(bindings, noisy_or(combined_scores(bs, kk)), lambda bs=bs: tuple(_combine(bs, kk)))
            else:
                yield Answer(bindings, score, lambda builders=builders, score=score: _conjoin(
                    [b()[0] for _, b in sorted(builders, key=lambda x: x[0])], score))
            return
        i = order[depth]
        for new, sc, build in matches(i, env):
            yield from join(depth + 1, new, score * sc, builders + ((i, build),))

    def run() -> Iterator[Answer]:
        n = 0
        if limit == 0:
            return
        for answer in join(0, {}, 1.0, ()):
            yield answer
            n += 1
            if limit is not None and n >= limit:
                return

    return AnswerStream(run(), names, view, [walks, back, [late]])


def _starts(view, path) -> Iterable[int]:
    """Where a pattern with both ends free is walked from. Over asserted facts only (no rule can
    contribute) and a path that needs at least one step: its relations' subjects and objects, read
    lazily from the graph's indexes; otherwise the evaluator's own list."""
    if type(view) is not GraphView or nullable(path):
        return _all_starts(view, path)
    return _lazy_ends(view, path)


def _lazy_ends(view, path) -> Iterator[int]:
    g, seen = view.g, set()
    for rel in sorted(relations(path)):
        rid = view.ids.find_rel(rel)
        if rid is None or rid >= len(g._out):
            continue
        for index in (g._out[rid], g._in[rid]):
            keys = index.iter_keys() if hasattr(index, "iter_keys") else list(index)
            for x in keys:
                if x not in seen:
                    seen.add(x)
                    yield x
