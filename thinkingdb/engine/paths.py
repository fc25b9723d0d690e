"""Property paths over asserted + derived facts: ``r``, ``^p``, ``p1/p2``, ``p1|p2``, ``p{m,n}``,
``p+``, ``p*`` (SPEC §6).

A path is evaluated from one bound end. The best answer for each reached symbol is the walk with the
highest product of fact scores, then the fewest steps, then the canonically smallest predecessor —
found by a best-first search over (symbol, automaton state) pairs, which is exact because scores only
shrink along a walk. A single relation repeated ``{m,n}`` (the common multi-hop query) takes a
layer-by-layer walk instead. Walks may revisit symbols (a cycle can satisfy ``{m,n}``), the search
visits at most ``max_nodes`` symbols and stops at the deadline, saying so in ``truncated``.

>>> from thinkingdb.engine.graph import FactGraph
>>> from thinkingdb.model import Fact, PathRel, PathRepeat
>>> from thinkingdb.engine.results import GraphView
>>> view = GraphView(FactGraph([Fact("a", "r", "b", 0.5), Fact("b", "r", "c")]))
>>> walk = PathWalk(view, PathRepeat(PathRel("r"), 1, None))
>>> sorted((view.ids.sym_key(v), s) for v, (s, _) in walk.run(view.ids.sym("a")).items())
[('b', 0.5), ('c', 0.5)]
"""

from __future__ import annotations

import time

from ..errors import QueryError

from ..model import Path, PathAlt, PathInv, PathRel, PathRepeat, PathSeq, Triple

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:   # built only when a proof is read: a plain question does not load them
    from .proofs import Proof

__all__ = ["PathWalk", "invert", "nullable", "relations"]


def relations(path: Path) -> set[str]:
    """The relations a path mentions.

    >>> sorted(relations(PathSeq((PathRel("a"), PathInv(PathRel("b"))))))
    ['a', 'b']
    """
    if isinstance(path, PathRel):
        return {path.relation}
    if isinstance(path, (PathInv, PathRepeat)):
        return relations(path.path)
    parts = path.parts if isinstance(path, PathSeq) else path.options
    return set().union(*(relations(p) for p in parts))


def nullable(path: Path) -> bool:
    """Can the path match zero steps (then every symbol of the graph relates to itself)?"""
    if isinstance(path, PathRel):
        return False
    if isinstance(path, PathInv):
        return nullable(path.path)
    if isinstance(path, PathSeq):
        return all(nullable(p) for p in path.parts)
    if isinstance(path, PathAlt):
        return any(nullable(p) for p in path.options)
    return path.min == 0 or nullable(path.path)


def invert(path: Path) -> Path:
    """The path walked backwards: ``invert(p)`` matches ``(o, s)`` whenever ``p`` matches ``(s, o)``.

    >>> str(invert(PathSeq((PathRel("a"), PathRel("b")))))
    '^b/^a'
    """
    if isinstance(path, PathRel):
        return PathInv(path)
    if isinstance(path, PathInv):
        return path.path
    if isinstance(path, PathSeq):
        return PathSeq(tuple(invert(p) for p in reversed(path.parts)))
    if isinstance(path, PathAlt):
        return PathAlt(tuple(invert(p) for p in path.options))
    return PathRepeat(invert(path.path), path.min, path.max)


MAX_STATES = 1_000_000   # automaton states a path may build; more is refused, never built


def _states(p: Path, cap: int | None) -> int:
    """Upper bound of the states :class:`_NFA` builds for ``p`` (repetitions capped as it caps them)."""
    if isinstance(p, PathRel):
        return 2
    if isinstance(p, PathInv):
        return _states(p.path, cap)
    if isinstance(p, (PathSeq, PathAlt)):
        return 2 + sum(_states(q, cap) for q in (p.parts if isinstance(p, PathSeq) else p.options))
    inner = _states(p.path, cap)
    extra = 1 if p.max is None or (cap is not None and p.max - p.min > cap * inner) else p.max - p.min
    return 1 + (inner + 2) * (p.min + extra)


class _NFA:
    """Thompson automaton; transitions are ``(relation id, forward?, to)``, plus epsilon moves.

    ``{m,n}`` with ``n - m`` beyond ``n_symbols`` times the inner automaton's states is built as
    ``{m,}``: a best walk (highest score, then fewest steps) never repeats a (symbol, state) pair
    past the first ``m`` rounds, so no best walk is that long and the answers are the same. A path
    that would still need more than :data:`MAX_STATES` states is refused with a :class:`QueryError`.
    """

    def __init__(self, path: Path, rel_id, n_symbols: int | None = None) -> None:
        self.eps: list[list[int]] = []
        self.trans: list[list[tuple[int, bool, int]]] = []
        self.rel_id = rel_id
        self.cap = n_symbols
        need = _states(path, n_symbols)
        if need > MAX_STATES:
            raise QueryError(f"the path {path} would need about {need:,} automaton states (the limit is "
                             f"{MAX_STATES:,}); lower its repetition bounds or use + / *")
        self.start, self.accept = self._build(path, True)

    def _state(self) -> int:
        self.eps.append([])
        self.trans.append([])
        return len(self.eps) - 1

    def _build(self, p: Path, fwd: bool) -> tuple[int, int]:
        if isinstance(p, PathRel):
            a, b = self._state(), self._state()
            rid = self.rel_id(p.relation)
            self.trans[a].append((-1 if rid is None else rid, fwd, b))
            return a, b
        if isinstance(p, PathInv):
            return self._build(p.path, not fwd)
        if isinstance(p, PathSeq):
            parts = p.parts if fwd else tuple(reversed(p.parts))
            return self._chain([lambda q=q: self._build(q, fwd) for q in parts])
        if isinstance(p, PathAlt):
            a, b = self._state(), self._state()
            for q in p.options:
                x, y = self._build(q, fwd)
                self.eps[a].append(x)
                self.eps[y].append(b)
            return a, b
        pieces = [lambda: self._build(p.path, fwd)] * p.min
        if p.max is None or (self.cap is not None and p.max - p.min > self.cap * _states(p.path, self.cap)):
            pieces.append(lambda: self._star(p.path, fwd))
        else:
            pieces += [lambda: self._optional(p.path, fwd)] * (p.max - p.min)
        return self._chain(pieces)

    def _chain(self, builders) -> tuple[int, int]:
        a = b = self._state()
        for make in builders:
            x, y = make()
            self.eps[b].append(x)
            b = y
        return a, b

    def _star(self, p: Path, fwd: bool) -> tuple[int, int]:
        a, b = self._state(), self._state()
        x, y = self._build(p, fwd)
        self.eps[a] += [x, b]
        self.eps[y] += [x, b]
        return a, b

    def _optional(self, p: Path, fwd: bool) -> tuple[int, int]:
        a, b = self._state(), self._state()
        x, y = self._build(p, fwd)
        self.eps[a] += [x, b]
        self.eps[y].append(b)
        return a, b


def _simple(path: Path) -> tuple[str, bool, int, int | None] | None:
    """``(relation, forward, min, max)`` when the path is one relation (maybe inverted) repeated."""
    lo, hi = 1, 1
    if isinstance(path, PathRepeat):
        lo, hi, path = path.min, path.max, path.path
    fwd = True
    while isinstance(path, PathInv):
        fwd, path = not fwd, path.path
    return (path.relation, fwd, lo, hi) if isinstance(path, PathRel) else None


class PathWalk:
    """Evaluate one path from bound start symbols over a fact view (see the module docstring).

    ``run(start)`` returns ``{end id: (score, steps)}`` where ``steps`` rebuilds the fact keys walked
    (call it for the proof); ``truncated`` is set when ``max_nodes`` or the deadline cut a walk short.
    """

    def __init__(self, view, path: Path, *, max_nodes: int | None = None, deadline: float | None = None) -> None:
        self.view, self.path = view, path
        self.max_nodes, self.deadline = max_nodes, deadline
        self.truncated: str | None = None
        self.rank = view.ids.sym_rank
        simple = _simple(path)
        self.simple = None
        if simple is not None:
            rid = view.ids.find_rel(simple[0])
            self.simple = (-1 if rid is None else rid,) + simple[1:]
        self.nfa = None if self.simple is not None else _NFA(path, view.ids.find_rel, view.ids.n_syms)

    def _nbrs(self, r: int, fwd: bool, u: int) -> dict[int, float]:
        if r < 0:
            return {}
        return self.view.out(r, u) if fwd else self.view.inn(r, u)

    def _tick(self, seen: int) -> bool:
        if self.max_nodes is not None and seen > self.max_nodes:
            self.truncated = self.truncated or "nodes"
            return True
        if self.deadline is not None and time.perf_counter() > self.deadline:
            self.truncated = self.truncated or "time"
            return True
        return False

    def run(self, start: int) -> dict[int, tuple[float, object]]:
        if self.simple is not None:
            r, fwd, lo, hi = self.simple
            if hi is not None:
                return self._layers(start, r, fwd, lo, hi)
            closed = getattr(self.view, "closed_ones", None)
            if lo <= 1 and r >= 0 and closed is not None and closed(r):
                return self._closed(start, r, fwd, lo)
        return self._best_first(start)

    def _closed(self, src: int, r: int, fwd: bool, lo: int):
        """``r+`` / ``r*`` over a transitively closed relation whose facts all score 1: every symbol
        the walk can reach is one step away with score 1, which no other walk beats (scores are at
        most 1, walks at least one step), so the best-first search would return exactly this."""
        answers: dict[int, tuple[float, object]] = {}
        for v in self._nbrs(r, fwd, src):
            key = (src, r, v) if fwd else (v, r, src)
            answers[v] = (1.0, lambda key=key: [key])
        if lo == 0:
            answers[src] = (1.0, lambda: [])
        self._tick(len(answers))
        return answers

    def _layers(self, src: int, r: int, fwd: bool, lo: int, hi: int):
        rank = self.rank
        answers: dict[int, tuple[float, int]] = {}
        if lo == 0:
            answers[src] = (1.0, 0)
        frontier = {src: 1.0}
        best_any = {src: 1.0}
        layers: list[dict[int, int]] = []
        seen = 1
        for i in range(1, hi + 1):
            nxt: dict[int, float] = {}
            preds: dict[int, int] = {}
            for u, su in frontier.items():
                for v, c in self._nbrs(r, fwd, u).items():
                    sv = su * c
                    cur = nxt.get(v)
                    if cur is None or sv > cur or (sv == cur and rank(u) < rank(preds[v])):
                        nxt[v] = sv
                        preds[v] = u
            layers.append(preds)
            if i >= lo:
                for v, sv in nxt.items():
                    old = answers.get(v)
                    if old is None or sv > old[0]:
                        answers[v] = (sv, i)
            if lo <= 1:   # an earlier arrival with a score at least as high dominates
                frontier = {}
                for v, sv in nxt.items():
                    b = best_any.get(v)
                    if b is None:
                        seen += 1
                    if b is None or sv > b:
                        best_any[v] = sv
                        frontier[v] = sv
            else:
                frontier = nxt
                seen += len(nxt)
            if not frontier or self._tick(seen):
                break

        def steps_of(end: int, layer: int):
            def build():
                keys, v, i = [], end, layer
                while i > 0:
                    u = layers[i - 1][v]
                    keys.append((u, r, v) if fwd else (v, r, u))
                    v, i = u, i - 1
                return keys[::-1]
            return build

        return {v: (sc, steps_of(v, i)) for v, (sc, i) in answers.items()}

    def _best_first(self, src: int):
        import heapq   # (a plain lookup walks no heap: issue 20)
        nfa, rank = self.nfa, self.rank
        if self.simple is not None:   # r+ / r*: one relation, unbounded: a one-state automaton
            r, fwd, lo, _ = self.simple
            nfa = _NFA(PathRepeat(PathRel("_"), lo, None), lambda _k: r)
            if not fwd:
                nfa.trans = [[(rr, False, to) for rr, _f, to in t] for t in nfa.trans]
        done: dict[tuple[int, int], tuple] = {}
        heap = [(-1.0, 0, rank(src), nfa.start, 0, -1, -1, src, None, None)]
        answers: dict[int, tuple[float, object]] = {}
        seen: set[int] = set()
        while heap:
            neg, hops, _rk, q, _prk, _pq, _rr, u, pred, key = heapq.heappop(heap)
            if (u, q) in done:
                continue
            done[(u, q)] = (pred, key)
            if u not in seen:
                seen.add(u)
                if self._tick(len(seen)):
                    break
            if q == nfa.accept and u not in answers:
                answers[u] = (-neg, self._steps_builder(done, (u, q)))
            ru = rank(u)
            for q2 in nfa.eps[q]:
                if (u, q2) not in done:
                    heapq.heappush(heap, (neg, hops, ru, q2, ru, q, -1, u, (u, q), None))
            for r, fwd, q2 in nfa.trans[q]:
                rr = self.view.ids.rel_rank(r) * 2 + fwd if r >= 0 else -1
                for v, c in self._nbrs(r, fwd, u).items():
                    if (v, q2) not in done:
                        heapq.heappush(heap, (neg * c, hops + 1, rank(v), q2, ru, q, rr, v, (u, q),
                                              (u, r, v) if fwd else (v, r, u)))
        return answers

    @staticmethod
    def _steps_builder(done, node):
        def build():
            keys = []
            cur = node
            while cur is not None:
                pred, key = done[cur]
                if key is not None:
                    keys.append(key)
                cur = pred
            return keys[::-1]
        return build


def path_proof(view, path: Path, subject: int, obj: int, score: float, keys: list) -> Proof:
    """The proof of one path answer: the fact proofs of the steps, in walking order."""
    steps = tuple(view.fact_proof(k) for k in keys)
    depth = max((p.depth for p in steps), default=0)
    t = Triple(view.ids.sym_key(subject), str(path), view.ids.sym_key(obj))
    from .proofs import Proof
    return Proof(t, score, depth, "path", str(path), 1.0, steps)
