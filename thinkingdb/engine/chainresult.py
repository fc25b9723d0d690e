"""The result of :mod:`thinkingdb.engine.chain`: the replays of a linear chain rule's goals, the
searches that choose what each goal is replayed over, and what the result keeps (``rec``, ``alts``)
for the read interface queries use (:mod:`thinkingdb.engine.chainread`, a
:class:`~thinkingdb.engine.results.ClosureResult` look-alike). The model, the searches and why they
give the full closure's facts are described in :mod:`thinkingdb.engine.chain`."""

from __future__ import annotations

import heapq
import time

from .chainread import ChainReads, _at

__all__ = ["DELTA", "ChainResult", "Timeout"]

# The relative slack of the node-bound search (engine/chain.py): chains within it of the best are
# kept; float products over k steps are off by about 2k·2⁻⁵³, far below it.
DELTA = 1e-9


class Timeout(Exception):
    """The deadline passed during a search (the chain engine then declines)."""


class ChainResult(ChainReads):
    """A :class:`~thinkingdb.engine.results.ClosureResult` look-alike: the ``T`` facts of one bound
    end (and those their proofs go through) over the inner closure of the step relation."""

    delta = DELTA   # (read by engine/chaindepth.py, which does not import this module)

    def __init__(self, g, inner, shape, rules, deadline, alternatives: int = 0,
                 depth: int | None = None) -> None:   # shape: chain.Shape
        self.g, self.inner, self.shape, self.rules = g, inner, shape, rules
        self._k = alternatives
        self.depth = depth   # max_depth: the closure's rounds (None: unbounded)
        self._at_memo: dict[tuple[int, int], dict] = {}   # (node, round) -> its steps as they stood
        # T key -> its best other derivations [(score, depth, next node, the goal's replay {node:
        # versions} the next node's proof is read from)], at most alternatives + 1, best first
        self.alts: dict[tuple[int, int, int], list] = {}
        self.ids = inner.ids
        self.T = self.ids.rel(shape.head)
        self.E = self.ids.find_rel(shape.step)
        self.w, self.name = shape.rule.weight, shape.rule.name
        self.rec: dict[tuple[int, int, int], list] = {}   # T key -> [(score, depth, next node)], oldest first
        self.touched: set[int] = set()
        self.stats = None
        self.truncated = None
        self._deadline = deadline
        self._ticks = 0
        self.rechecked = 0   # goals searched again with their asserting nodes as ends
        self._evers: dict[tuple[int, int, int], list] = {}   # step fact -> its versions (shared by the goals)
        self._proofs: dict[tuple, object] = {}   # (step fact, version's depth) -> its proof
        self.near = False   # the inner run is over the cone within the depth bound's reach only

    # -- the model ------------------------------------------------------------------------------
    def _tick(self) -> None:
        self._ticks += 1
        if self._ticks & 1023 == 0 and self._deadline is not None and time.perf_counter() > self._deadline:
            raise Timeout

    def steps(self, n: int) -> dict[int, float]:
        """``{next node: step score}`` from node ``n``."""
        if self.E is None:
            return {}
        return (self.inner.out if self.shape.right else self.inner.inn)(self.E, n)

    def back_steps(self, c: int) -> dict[int, float]:
        """``{node: step score}`` of the steps into node ``c``."""
        if self.E is None:
            return {}
        return (self.inner.inn if self.shape.right else self.inner.out)(self.E, c)

    def ekey(self, n: int, c: int) -> tuple[int, int, int]:
        return (n, self.E, c) if self.shape.right else (c, self.E, n)

    def tkey(self, n: int, goal: int) -> tuple[int, int, int]:
        return (n, self.T, goal) if self.shape.right else (goal, self.T, n)

    def premises(self, n: int, c: int, goal: int) -> tuple:
        e, t = self.ekey(n, c), self.tkey(c, goal)
        return (e, t) if self.shape.e_at == 0 else (t, e)

    def combine(self, e: float, v: float) -> float:
        """The rule's score from a step's score and the next node's value, in the engines' float
        order: weight, then the premises in rule order."""
        return (self.w * e) * v if self.shape.e_at == 0 else (self.w * v) * e

    def asserted_at(self, n: int) -> dict[int, float]:
        """``{goal: confidence}`` of the ``T`` facts asserted at node ``n``."""
        if self.T >= len(self.g._out):
            return {}
        return (self.g._out if self.shape.right else self.g._in)[self.T].get(n, {})

    def asserted_for(self, goal: int) -> dict[int, float]:
        """``{node: confidence}`` of the ``T`` facts asserted for ``goal``."""
        if self.T >= len(self.g._out):
            return {}
        return (self.g._in if self.shape.right else self.g._out)[self.T].get(goal, {})

    def versions(self, key) -> tuple[tuple[int, float], ...]:
        """``[(depth, score)]`` of a step fact, oldest first: the versions the inner run kept (a fact
        improved in a later round keeps its old version, which derivations of earlier rounds used)."""
        got = self._evers.get(key)
        if got is None:
            got = self._evers[key] = self._versions(key)
        return got

    def _versions(self, key) -> tuple[tuple[int, float], ...]:   # (tuples: the collector skips them)
        c = self.inner.asserted(key)
        if c is not None:
            return ((0, c),)
        inner = self.inner
        if hasattr(inner, "_run"):   # the columnar result
            fid = inner._fid(key)
            facts = inner._run.facts
            old = [(h[0], h[1]) for h in facts.history.get(fid, ())]
            return tuple(old) + ((int(facts.round.a[fid]), float(facts.score.a[fid])),)
        v = inner._store.rec[key]    # the reference engine's result
        return tuple((h[1], h[0]) for h in inner._hist.get(key, ())) + ((v[1], v[0]),)

    def step_proof(self, key, limit: int):
        """The step fact's proof as it stood after round ``limit``: memoised by the version it is
        (the answers' chains share their first steps, and noisy-or builds every answer's proofs)."""
        got = self._proofs.get((key, limit))   # (key, n): the proof as it stood after round n
        if got is None:
            d = next(v[0] for v in reversed(self.versions(key)) if v[0] <= limit)
            got = self._proofs.get((key, d))
            if got is None:
                from .proofs import Proof
                c = self.inner.asserted(key)
                got = Proof.asserted(self.ids.triple(key), c) if c is not None else self.inner._build(key, d)
                self._proofs[(key, d)] = got
            self._proofs[(key, limit)] = got
        return got

    # -- the searches ---------------------------------------------------------------------------
    def _simulate(self, goal: int, terms: dict[int, float], back, cap: int | None = None) -> dict[int, list]:
        """The rounds of the full closure for ``goal`` over the nodes ``back`` leads to from the
        asserting nodes ``terms``: ``{node: [(score, depth, next node)]}``, every version oldest
        first. Round ``r`` fires the steps whose step fact got a version in round ``r - 1`` or whose
        next node did (semi-naive, as the engines do); each node keeps the best new derivation (score,
        then depth, then the premises' canonical order) when it beats the node's current score.
        ``cap``: the last round (a depth bound)."""
        preds: dict[int, list[int]] = {}
        region, stack = set(terms), list(terms)
        while stack:
            c = stack.pop()
            row = preds[c] = []
            for n, _ in back(c):
                self._tick()
                row.append(n)
                if n not in region:
                    region.add(n)
                    stack.append(n)
        evs: dict[tuple[int, int], list] = {}
        events: dict[int, list] = {}
        for c, ns in preds.items():
            for n in ns:
                if n in terms:
                    continue
                v = evs[(n, c)] = self.versions(self.ekey(n, c))
                for d, sc in v:
                    if sc <= 0:
                        raise ValueError("zero score")
                    events.setdefault(d + 1, []).append((n, c))
        if any(a <= 0 for a in terms.values()):
            raise ValueError("zero score")
        vers: dict[int, list] = {c: [(a, 0, None)] for c, a in terms.items()}
        last = max(events, default=0)
        changed, r = list(terms), 1
        rank = self.ids.key_rank
        while (changed or r <= last) and (cap is None or r <= cap):
            fire = set(events.get(r, ()))
            for c in changed:
                fire.update((n, c) for n in preds.get(c, ()) if n not in terms)
            pending: dict[int, tuple] = {}
            for n, c in fire:
                self._tick()
                tv = vers.get(c)
                if tv is None:
                    continue
                ev = next((v for v in reversed(evs[(n, c)]) if v[0] <= r - 1), None)
                if ev is None:
                    continue
                ts, td, _ = tv[-1]
                score, depth = self.combine(ev[1], ts), 1 + max(ev[0], td)
                cur = vers.get(n)
                if cur is not None and score <= cur[-1][0]:
                    continue
                p = pending.get(n)
                canon = None
                if p is not None:
                    if score < p[0] or (score == p[0] and depth > p[1]):
                        continue
                    if score == p[0] and depth == p[1]:
                        canon = tuple(rank(k) for k in self.premises(n, c, goal))
                        theirs = p[3] or tuple(rank(k) for k in self.premises(n, p[2], goal))
                        if canon >= theirs:
                            continue
                pending[n] = (score, depth, c, canon)
            changed = list(pending)
            for n, p in pending.items():
                vers.setdefault(n, []).append(p[:3])
            r += 1
        return vers

    def _keep(self, goal: int, start: int, vers: dict) -> None:
        """Keep ``start``'s fact for ``goal`` and the versions its proof goes through."""
        n, limit = start, None
        while n in vers and vers[n][-1][2] is not None:
            self.rec.setdefault(self.tkey(n, goal), vers[n])
            v = _at(vers[n], limit)
            n, limit = v[2], v[1] - 1

    def to_goal(self, goal: int) -> bool:
        """Goal bound: every node's fact for ``goal``."""
        terms = dict(self.asserted_for(goal))
        self.touched.update(terms)
        self.touched.add(goal)
        try:
            vers = self._simulate(goal, terms, lambda c: self.back_steps(c).items())
        except ValueError:
            return False
        d = self.depth
        if d is not None:   # the rounds up to the bound; any later version is a fact the bound cut
            cut = {n: [x for x in v if x[1] <= d] for n, v in vers.items()}
            if any(len(cut[n]) != len(v) for n, v in vers.items()):
                self.truncated = "depth"
            vers = {n: v for n, v in cut.items() if v}
        for n, v in vers.items():
            self.touched.add(n)
            if n not in terms:
                self.rec[self.tkey(n, goal)] = v
        if self._k:   # every node's versions are the full closure's: each step's derivation from them
            from .chainalts import keep_alternatives  # noqa: PLC0415
            for n in vers:
                keep_alternatives(self, n, goal, vers.get, lambda c: vers)
        return True

    def _forward(self, start: int, blocked=frozenset()) -> dict[int, float]:
        """``P``: the best product of steps (rule weight times step score) from ``start`` to each node;
        nodes in ``blocked`` are reached but not left."""
        w = self.w
        best = {start: 1.0}
        heap = [(-1.0, start)]
        done: set[int] = set()
        while heap:
            p, u = heapq.heappop(heap)
            if u in done:
                continue
            done.add(u)
            if u in blocked and u != start:
                continue
            p = -p
            for c, e in self._steps(u).items():
                self._tick()
                if e <= 0:
                    raise ValueError("zero score")
                q = p * (w * e)
                if q > best.get(c, -1.0):
                    best[c] = q
                    heapq.heappush(heap, (-q, c))
        return best

    def _steps(self, u: int) -> dict[int, float]:
        got = self._memo.get(u)
        if got is None:
            got = self._memo[u] = self.steps(u)
        return got

    def _slack(self, P: dict[int, float], blocked=frozenset()) -> dict[int, list]:
        """``{v: [(u, step score)]}``: the steps ``u → v`` within ``DELTA`` of ``v``'s best product."""
        w, parents = self.w, {}
        for u, pu in P.items():
            if u in blocked:
                continue
            for c, e in self._steps(u).items():
                self._tick()
                if pu * (w * e) >= P[c] * (1 - DELTA):
                    parents.setdefault(c, []).append((u, e))
        return parents

    def _one_goal(self, start, goal, ends, P, parents, links=None) -> tuple | None:
        """The solution for ``goal`` over the slack steps into the nodes within ``DELTA`` of the
        best end, or None when the search's value is not within ``DELTA / 10`` of that bound; read
        off the chain when the region is one (:func:`~thinkingdb.engine.chainalts.replay_paths`)."""
        from .chainalts import replay_paths  # noqa: PLC0415
        got = replay_paths(self, [(start, P, parents, {} if links is None else links)], goal, ends)
        if got is not None:
            return got.get(start)
        top, sub = self._region(ends, P, parents)
        terms = {a: c for a, c in ends.items() if a in sub}
        vers = self._simulate(goal, terms, lambda c: [(u, e) for u, e in parents.get(c, ()) if u in sub])
        if start not in vers or vers[start][-1][0] < top * (1 - DELTA / 10):
            return None
        return vers

    @staticmethod
    def _region(ends, P, parents) -> tuple[float, set[int]]:
        """``(bound, nodes)``: the best ``P(a) · conf`` over the ends ``P`` reaches, and the nodes
        the slack steps lead back from the ends within ``DELTA`` of it."""
        bound = {a: P[a] * c for a, c in ends.items() if a in P}
        top = max(bound.values())
        sub: set[int] = set()
        stack = [a for a, b in bound.items() if b >= top * (1 - DELTA)]
        while stack:
            v = stack.pop()
            if v in sub:
                continue
            sub.add(v)
            stack.extend(u for u, _ in parents.get(v, ()) if u not in sub)
        return top, sub

    def from_node(self, start: int, only: int | None) -> bool:
        """Node bound: ``start``'s fact for every goal (or only for ``only``)."""
        self._memo: dict[int, dict[int, float]] = {}
        try:
            P = self._forward(start)
            parents = self._slack(P)
        except ValueError:
            return False
        self.touched.update(P)
        by_goal: dict[int, dict[int, float]] = {}
        for a in P:
            for goal, c in self.asserted_at(a).items():
                if only is None or goal == only:
                    by_goal.setdefault(goal, {})[a] = c
        mine = self.asserted_at(start)
        self._searched = {start: (P, parents, {})}
        self._succ = None   # the start's steps, for its alternatives (chainalts.from_successors)
        self._layered: dict[tuple[int, int], list] = {}
        for goal in sorted(by_goal):
            self.touched.add(goal)
            ends = by_goal[goal]
            got = None
            try:
                if goal not in mine:   # (asserted facts win)
                    got = self._solve(start, goal, ends) if self.depth is None else self._bounded(start, goal, ends)
                    if got:
                        self._keep(goal, start, got)
                if self._k:
                    from .chainalts import from_successors  # noqa: PLC0415
                    from_successors(self, start, goal, ends, got)
            except ValueError:
                return False
        self._memo = {}
        self._searched = {}
        self._succ = None
        return True

    def _bounded(self, start, goal, ends) -> dict[int, list]:
        """The replay of ``start``'s fact for ``goal`` within the depth bound
        (:func:`~thinkingdb.engine.chaindepth.solve`; ``{}``: none). Until a goal shows it,
        ``truncated`` is found out goal by goal: ``"depth"`` when the unbounded fact is another —
        none within the bound, or its last version deeper (a later round would change an answer).
        Over the cone within the chains' reach (``near``: the inner run holds the step facts the
        bound lets the chains use, exact, and some of the others) only a goal reached by steps but
        not within the bound shows it; when none does, :mod:`~thinkingdb.engine.chain` runs again
        over the whole cone."""
        from .chaindepth import solve  # noqa: PLC0415
        got = solve(self, start, goal, ends, self.depth, self._layers(start, self.depth))
        if self.near:   # the cone within the chains' reach: a goal reached past the bound is new
            if not got:
                self.truncated = "depth"
        elif self.truncated is None:
            free = self._solve(start, goal, ends)
            if not got or free[start][-1][1] > self.depth:
                self.truncated = "depth"
        return got

    def _layers(self, start: int, budget: int) -> list:
        got = self._layered.get((start, budget))
        if got is None:
            from .chaindepth import layers  # noqa: PLC0415
            got = self._layered[(start, budget)] = layers(self, start, budget)
        return got

    def _search(self, start: int) -> tuple[dict, dict, dict]:
        """``(P, slack parents, links)`` of the search from ``start``, memoised (``links``: what
        :func:`~thinkingdb.engine.chainalts.replay_paths` read of each node's one slack parent)."""
        got = self._searched.get(start)
        if got is None:
            P = self._forward(start)
            got = self._searched[start] = (P, self._slack(P), {})
        return got

    def _solve(self, start, goal, ends) -> dict[int, list]:
        """``_one_goal`` from ``start`` (its search memoised), searched again with the nodes asserting
        the goal as ends when a better chain runs through one of them (the chain stops there)."""
        vers = self._one_goal(start, goal, ends, *self._search(start))
        if vers is None:
            blocked = frozenset(ends)
            self.rechecked += 1
            Pg = self._forward(start, blocked)
            vers = self._one_goal(start, goal, ends, Pg, self._slack(Pg, blocked))
        if vers is None:
            raise ValueError("no solution within the bound")
        return vers
