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

import time

from .answers import Answer, _conjoin, _proofs_builder, pattern_order as _order
from .arrays import array_answers
from ..errors import QueryError
from .graph import FactGraph
from ..model import Limits, Path, PathAlt, PathInv, PathRel, PathRepeat, PathSeq, Query, QueryPattern, Rule, Triple, Var
from .paths import PathWalk, nullable as _nullable, path_proof, relations as _relations
from .results import GraphView
from .rules import relevant_rules
from ..values import Value

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:   # built only when a proof is read: a plain question does not load them
    from typing import Callable, Iterable, Iterator
    from .proofs import Proof

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


class QueryResult(Value):
    """Sorted answers; ``truncated`` names the bound that cut the closure or a path walk short;
    ``more`` is True when ``max_answers`` dropped answers; ``variables`` in order of first appearance.
    Frozen (:class:`~thinkingdb.values.Value`)."""

    _fields = _compare = ("answers", "truncated", "variables", "more", "stats")

    def __init__(self, answers: list[Answer], truncated: str | None, variables: tuple[str, ...] = (),
                 more: bool = False, stats: object = None) -> None:
        object.__setattr__(self, "answers", answers)
        object.__setattr__(self, "truncated", truncated)
        object.__setattr__(self, "variables", variables)
        object.__setattr__(self, "more", more)
        object.__setattr__(self, "stats", stats)

    def to_json(self) -> dict:
        return {"answers": [a.to_json() for a in self.answers], "truncated": self.truncated}

    def __iter__(self):
        """The answers, best first."""
        return iter(self.answers)

    def __len__(self) -> int:
        return len(self.answers)


def _introducing(rules) -> list[Rule]:
    """The rules that can put a symbol in no asserted fact into a derived fact: a constant (or an n-ary
    node) in the head, or a head variable no positive premise binds (assigned by a constraint)."""
    out = []
    for r in rules:
        bound = {t for a in r.premises for t in (a.subject, a.object) if isinstance(t, Var)}
        if any(not isinstance(t, Var) or t not in bound for t in (r.head.subject, r.head.object)):
            out.append(r)
    return out


def _view_for(query: Query, g: FactGraph, rules, limits: Limits, alternatives: int, goal_directed: bool):
    rels = set().union(*(_relations(p.path) for p in query.patterns))
    zero = [p for p in query.patterns if _nullable(p.path)]
    if zero:
        # a zero-step match pairs every symbol of the model with itself (docs/closure.md, "zero steps"),
        # whichever rules the question's relations need. The symbols that only derived facts hold come
        # from the rules that introduce symbols: their relations are derived too, in full, when the
        # question may ask for every symbol (a free end) or names a symbol no asserted fact holds
        introducing = _introducing(rules)
        if introducing and any((isinstance(p.subject, Var) and isinstance(p.object, Var))
                               or any(not isinstance(t, Var) and g.symbol_id(t) is None
                                      for t in (p.subject, p.object)) for p in zero):
            rels |= {r.head.relation for r in introducing}
            goal_directed = False
    rel_rules = relevant_rules(rules, rels)
    if not rel_rules:
        return GraphView(g)
    from .closure import closure   # (a question no rule touches does not load the closure engines)
    if goal_directed:
        return closure(g, rel_rules, goals=[query], limits=limits, alternatives=alternatives)
    return closure(g, rel_rules, limits=limits, alternatives=alternatives)   # the full closure


def evaluate(query: Query, g: FactGraph, rules: Iterable[Rule] = (), *, limits: Limits = Limits(),
             aggregate: str = "best", k: int = 5, max_answers: int | None = None,
             goal_directed: bool = True) -> QueryResult:
    """Answer ``query`` over the facts of ``g`` and what ``rules`` derive within ``limits``.

    Goal-directed (default): only the facts the query needs are derived, each with the score, depth
    and proof the full closure gives it. ``goal_directed=False`` computes the full closure first
    (the oracle the tests compare against).

    >>> from thinkingdb.model import Declaration, Fact
    >>> from thinkingdb.engine.rules import compile_declarations
    >>> g = FactGraph([Fact("a", "r", "b"), Fact("b", "r", "c"), Fact("x", "r", "a")])
    >>> rules = compile_declarations([Declaration("r", "transitive")])
    >>> q = Query((QueryPattern("a", PathRel("r"), Var("y")),))
    >>> [a.bindings["y"] for a in evaluate(q, g, rules).answers]
    ['b', 'c']
    """
    if aggregate not in AGGREGATES:
        raise QueryError(f"unknown aggregate {aggregate!r}; expected best or noisy-or")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise QueryError(f"k must be a positive integer, got {k!r}")
    t0 = time.perf_counter()
    deadline = None if limits.timeout_ms is None else t0 + limits.timeout_ms / 1000.0
    kk = k if aggregate == "noisy-or" else 1
    view = _view_for(query, g, tuple(rules), limits, kk - 1, goal_directed)
    if _absent_constant(view, query):
        return QueryResult([], view.truncated, tuple(v.name for v in query.variables()), False,
                           getattr(view, "stats", None))
    # one pattern with a constant end, or a conjunction run as arrays; not with a ?_ (which the arrays
    # would answer as a column): the join below makes the rows that differ only there one answer
    bulk = None if _anonymous(query) else array_answers(view, query, limits, deadline, aggregate)
    if bulk is not None:
        answers, truncated = bulk
        more = max_answers is not None and len(answers) > max_answers
        names = (answers.var,) if answers.var is not None else tuple(v.name for v in query.variables())
        return QueryResult(answers[:max_answers] if more else answers, truncated, names, more,
                           getattr(view, "stats", None))
    truncated = view.truncated
    ids = view.ids
    walks = [PathWalk(view, p.path, max_nodes=limits.max_nodes, deadline=deadline) for p in query.patterns]
    back = [None] * len(walks)
    order = _order(query.patterns)
    late = [False]   # the deadline passed while answers were enumerated: they stop there ("time")

    def past_deadline() -> bool:
        if deadline is not None and not late[0] and time.perf_counter() > deadline:
            late[0] = True
        return late[0]

    memo: dict[tuple, list] = {}   # (pattern, subject id, object id) -> its matches, shared by the rows

    def pattern_matches(i: int, s: int | None, o: int | None) -> list[tuple[int, int, float, Callable]]:
        """Ways pattern ``i`` matches with its ends bound to ``s`` / ``o`` (None: free): (subject,
        object, score, proofs builder); computed once per distinct binding of its ends."""
        got = memo.get((i, s, o))
        if got is not None:
            return got
        pat = query.patterns[i]
        out = []
        if s is not None and o is not None and isinstance(pat.path, PathRel):   # a ground fact: look it up
            rid = ids.find_rel(pat.path.relation)
            score = None if rid is None else view.fact_score((s, rid, o))
            if score is not None:
                out.append(((s, o), score, lambda key=(s, rid, o): [key]))
        elif s is not None or o is None:
            starts = [s] if s is not None else _all_starts(view, pat.path)
            for start in starts:
                if past_deadline():
                    break
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
        got = [(a, b, score, _proofs_builder(view, pat.path, a, b, score, steps, kk)) for (a, b), score, steps in out]
        if len(memo) >= 4096:
            memo.clear()
        memo[(i, s, o)] = got
        return got

    names = tuple(v.name for v in query.variables())
    hidden = [t.name for p in query.patterns for t in (p.subject, p.object) if isinstance(t, Var) and t.name not in names]
    slot = {n: j for j, n in enumerate(names + tuple(dict.fromkeys(hidden)))}   # (a statement's node: not answered)

    def matches(i: int, env: tuple) -> Iterator[tuple[tuple, float, Callable[[], list[Proof]]]]:
        """Ways pattern ``i`` matches under ``env`` (a symbol id or None per variable, in ``names``
        order): (new env, score, proofs builder)."""
        pat = query.patterns[i]
        si = slot[pat.subject.name] if isinstance(pat.subject, Var) else None
        oi = slot[pat.object.name] if isinstance(pat.object, Var) else None
        s = env[si] if si is not None else ids.find_sym(pat.subject)
        o = env[oi] if oi is not None else ids.find_sym(pat.object)
        if (si is None and s is None) or (oi is None and o is None):
            return
        free = [j for j, known in ((si, s), (oi, o)) if j is not None and known is None]
        for a, b, score, build in pattern_matches(i, s, o):   # a bound end matched as bound
            if not free:
                yield env, score, build
            elif si == oi:            # ?x P ?x with ?x free
                if a == b:
                    yield env[:si] + (a,) + env[si + 1:], score, build
            else:
                new = list(env)
                if s is None and si is not None:
                    new[si] = a
                if o is None and oi is not None:
                    new[oi] = b
                yield tuple(new), score, build

    # the join, pattern by pattern; each step holds at most ``max_rows`` rows ("rows" past it). A
    # row: (env, score, the proofs builders of its patterns in join order)
    cap, full = limits.max_rows, False
    partial = [((None,) * len(slot), 1.0, ())]
    for i in order:
        nxt = []
        for e, (env, score, builders) in enumerate(partial):
            if not e & 1023 and past_deadline():
                break
            for new, sc, build in matches(i, env):
                if cap is not None and len(nxt) >= cap:
                    full = True
                    break
                nxt.append((new, score * sc, builders + (build,)))
            if full:
                break
        partial = nxt
    if full:
        truncated = truncated or "rows"
    for w in walks + [b for b in back if b is not None]:
        truncated = truncated or w.truncated
    by_index = sorted(range(len(order)), key=order.__getitem__)   # join position of pattern 0, 1, ...
    if len(slot) > len(names):
        partial = _merge_hidden(partial, len(names), aggregate)
    answers = _answers(view, names, partial, by_index, aggregate, kk, past_deadline)
    del partial
    if late[0]:
        truncated = truncated or "time"
    more = max_answers is not None and len(answers) > max_answers
    if more:
        answers = answers[:max_answers]
    return QueryResult(answers, truncated, names, more, getattr(view, "stats", None))


TABLE_ROWS = 4096   # more rows than this: the answers are held as arrays (a TableAnswers)


def _anonymous(query: Query) -> bool:
    """Whether a pattern has a ``?_`` (an anonymous variable that occurs once: an n-ary statement's node
    variable, also anonymous, joins its role edges)."""
    seen: dict[str, int] = {}
    for p in query.patterns:
        for t in (p.subject, p.object):
            if isinstance(t, Var) and t.anonymous:
                seen[t.name] = seen.get(t.name, 0) + 1
    return 1 in seen.values()


def _merge_hidden(rows: list, n: int, aggregate: str) -> list:
    """The join's rows with one row per binding of the answered variables (the first ``n`` of a row's
    env): the rows that differ only in variables no answer shows (``?_``, a statement's node) are one
    answer -- scored by its best row, or with noisy-or by the proofs of all of them (the row then
    holds a :class:`_Merged` of each row's builders)."""
    out: dict[tuple, tuple] = {}
    for env, score, builders in rows:
        key = env[:n]
        cur = out.get(key)
        if cur is None:
            out[key] = (env, score, builders)
        elif aggregate == "noisy-or":
            held = cur[2] if isinstance(cur[2], _Merged) else _Merged((cur[2],))
            out[key] = (cur[0], max(cur[1], score), _Merged(held + (builders,)))
        elif score > cur[1]:
            out[key] = (env, score, builders)
    return list(out.values())


class _Merged(tuple):
    """The builders of the rows of one answer (noisy-or), each a tuple of its patterns' builders."""


def _answers(view, names, rows, by_index, aggregate, kk, past_deadline):
    """The answers of the join's rows, sorted by score (highest first) then by their bindings' keys:
    with ``aggregate="best"`` and more than :data:`TABLE_ROWS` rows, as id columns and scores (a
    :class:`~thinkingdb.engine.bulk.TableAnswers`, about 30 bytes a row, each answer made when read);
    else a list of :class:`Answer`. Rows past the deadline are dropped (it says "time")."""
    ids, n = view.ids, len(view.g._syms)
    if aggregate != "noisy-or" and len(rows) > TABLE_ROWS and not past_deadline():
        import numpy as np
        from .bfs import rank_array
        from .bulk import TableAnswers
        cols = [np.fromiter((env[j] for env, _, _ in rows), np.int64, len(rows)) for j in range(len(names))]
        if all(int(c.max(initial=0)) < n for c in cols):
            scores = np.fromiter((sc for _, sc, _ in rows), np.float64, len(rows))
            builders = [b for _, _, b in rows]
            rank = rank_array(view.g)
            keys = [c if rank is None else rank[c] for c in cols]
            sort = np.lexsort(tuple(keys[::-1]) + (-scores,))
            cols, scores = [c[sort] for c in cols], scores[sort]

            def make(row: list, score: float, tag: int):
                bs = builders[tag]
                return score, lambda: _conjoin([bs[j]()[0] for j in by_index], score)
            return TableAnswers(ids, names, cols, scores, make, rows=sort)
    answers = []
    for e, (env, score, builders) in enumerate(rows):
        if not e & 4095 and past_deadline():
            break
        bindings = {nm: ids.sym_key(env[j]) for j, nm in enumerate(names)}
        if aggregate == "noisy-or" and isinstance(builders, _Merged):   # rows differing only in a ?_
            groups = [[b[j] for j in by_index] for b in builders]
            score = noisy_or(sorted((x for bs in groups for x in combined_scores(bs, kk)), reverse=True)[:kk])
            make = (lambda groups=groups: tuple(sorted((p for bs in groups for p in _combine(bs, kk)),
                                                       key=lambda p: -p.score)[:kk]))
        elif aggregate == "noisy-or":   # the scores now, the proofs when read
            bs = [builders[j] for j in by_index]
            score = noisy_or(combined_scores(bs, kk))
            make = (lambda bs=bs: tuple(_combine(bs, kk)))
        else:
            make = (lambda bs=builders, score=score: _conjoin([bs[j]()[0] for j in by_index], score))
        answers.append(Answer(bindings, score, make))
    answers.sort(key=lambda a: (-a.score, tuple(a.bindings[nm] for nm in names)))
    return answers


def _in_model(view, sid: int) -> bool:
    """Whether symbol ``sid`` is in the model: in an asserted fact (the graph's symbols) or in a fact
    of the view (a symbol only interned, e.g. a rule-head constant of a rule that never fired, is not)."""
    n = len(view.g._syms)
    if sid < n:
        return True
    return any(view.out(r, sid) or view.inn(r, sid) for r in range(len(view.g._rels) + len(view.ids.local_rels)))


def _absent_constant(view, query: Query) -> bool:
    """Whether a constant end of a path that can match zero steps is in no fact of the model: then
    the query has no answer (a zero-step match needs the symbol in the model; any other match needs
    a fact of it anyway)."""
    ids = view.ids
    for p in query.patterns:
        if not _nullable(p.path):
            continue
        for t in (p.subject, p.object):
            if not isinstance(t, Var):
                sid = ids.find_sym(t)
                if sid is None or not _in_model(view, sid):
                    return True
    return False


def _all_starts(view, path: Path) -> list[int]:
    """The symbols a pattern with both ends free is walked from: the ends of its relations' facts
    (asserted and derived); for a path that can match zero steps, every symbol of the model — the
    graph's and those that exist only through a rule-head constant of a derived fact."""
    ids = view.ids
    if _nullable(path):
        n = len(view.g._syms)
        rels = range(len(view.g._rels) + len(ids.local_rels))
        extra = [x for x in range(n, ids.n_syms) if any(view.out(r, x) or view.inn(r, x) for r in rels)]
        return list(range(n)) + extra
    out: set[int] = set()
    for rel in _relations(path):
        rid = ids.find_rel(rel)
        if rid is not None:
            out.update(view.subjects(rid))
            out.update(view.objects(rid))
            d_in = getattr(getattr(view, "_store", None), "d_in", None)   # engines without objects()
            if d_in is not None:
                out.update(d_in.get(rid, None) or ())
    return sorted(out)


def _reversed(steps):
    return lambda: steps()[::-1]


def _combine(builders, k: int) -> list[Proof]:
    """Up to ``k`` distinct proofs of a conjunction: its ``k`` best combinations of one proof per
    pattern (:func:`_top_choices`), each pattern's proofs built by its builder."""
    lists = [b() for b in builders]
    choices = _top_choices([[p.score for p in ps] for ps in lists], k)
    return [_conjoin([ps[j] for ps, j in zip(lists, idx)], score) for score, idx in choices]


def combined_scores(builders, k: int) -> list[float]:
    """The scores of :func:`_combine`'s proofs, in its order, without building the proofs when the
    builders can score them (``scores()``: :class:`~thinkingdb.engine.answers._Proofs`): what
    noisy-or needs to rank the answers, the same floats.

    >>> combined_scores([lambda: [], ], 2)
    []
    """
    return [score for score, _ in _top_choices(
        [b.scores() if hasattr(b, "scores") else [p.score for p in b()] for b in builders], k)]


def _top_choices(lists: list[list[float]], k: int) -> list[tuple[float, tuple[int, ...]]]:
    """The ``k`` best combinations of one score per list, ``(product, index in each list)``, highest
    product first (the product in list order, from 1.0); equal products in the order of the lists'
    indices, each list read best first (stably). Found best first: a combination leaves a heap only
    when none left is better, and brings in its successors (one list's next score), so about ``k``
    times the lists are read, not the product.

    >>> _top_choices([[0.5, 0.9], [1.0, 0.2]], 3)
    [(0.9, (1, 0)), (0.5, (0, 0)), (0.18000000000000002, (1, 1))]
    """
    import heapq
    order = [sorted(range(len(ps)), key=lambda j, ps=ps: -ps[j]) for ps in lists]   # (stable)
    if any(not ps for ps in lists):
        return []

    def entry(pos: tuple) -> tuple:
        idx = tuple(o[p] for o, p in zip(order, pos))
        score = 1.0
        for ps, j in zip(lists, idx):
            score *= ps[j]
        return -score, idx, pos

    start = (0,) * len(lists)
    heap, seen, out = [entry(start)], {start}, []
    while heap and len(out) < k:
        neg, idx, pos = heapq.heappop(heap)
        out.append((-neg, idx))
        for i, p in enumerate(pos):
            if p + 1 < len(lists[i]):
                nxt = pos[:i] + (p + 1,) + pos[i + 1:]
                if nxt not in seen:
                    seen.add(nxt)
                    heapq.heappush(heap, entry(nxt))
    return out


def why(triple: Triple, g: FactGraph, rules: Iterable[Rule] = (), *, limits: Limits = Limits(),
        alternatives: int = 0, goal_directed: bool = True) -> Proof | None:
    """The best proof of ``triple`` (with up to ``alternatives`` others attached), or None when it is
    neither asserted nor derivable within ``limits``. Goal-directed: only what the triple needs is
    derived (``goal_directed=False``: the full closure).

    >>> from thinkingdb.model import Fact, Triple
    >>> g = FactGraph([Fact("a", "r", "b", 0.5)])
    >>> why(Triple("a", "r", "b"), g).score
    0.5
    """
    rel_rules = relevant_rules(tuple(rules), {triple.relation})
    if not rel_rules:
        c = g.confidence(triple)
        from .proofs import Proof
        return None if c is None else Proof.asserted(triple, c)
    goal = Query((QueryPattern(triple.subject, PathRel(triple.relation), triple.object),))
    from .closure import closure
    res = closure(g, rel_rules, goals=[goal] if goal_directed else None, limits=limits, alternatives=alternatives)
    return res.proof(triple)
