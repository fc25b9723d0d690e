"""Goal-directed evaluation: which facts a question needs, and to which depth (docs/closure.md).

A question (a query, a ``why``, the closure lane's goals) is first evaluated *at the level of sets*
by tabling, the top-down form of the magic-set transformation: every subgoal is a *table*
``(relation, subject or free, object or free, budget)``; a table starts with the asserted facts that
match it and, while its depth budget lasts, every rule whose head unifies with it is joined premise
by premise — the next premise is the one with most bound terms, and each premise's bindings come
from the answers of the premises before it (sideways information passing), so the premise becomes a
table of its own at budget − 1. Answers flow to the joins waiting on a table until nothing changes.
Property paths are walked over the tables from their bound end; a conjunction passes its bindings
from pattern to pattern the same way.

The tables' patterns and budgets are the *demand*: a derivation of a demanded fact of depth at most
its budget uses only premises that are demanded with at least the budget minus one (by induction
over the SIPS order). The semi-naive engine then runs unchanged, except that a new or better fact is
admitted in round ``d`` only when it is demanded with a budget of at least ``d``: every admitted fact
has the same score, depth and proof (the same candidates, the same tie-breaks) as in the full
closure, while the run touches only the symbols of the tables.

A rule with ``not`` premises joins its positive premises as above (ignoring the ``not``: the tables
then over-approximate, which only demands more), and each complete match demands its ``not`` atoms
as tables of their own at an unbounded budget: the stratified engine checks an absence against
everything the pattern could ever hold (:func:`thinkingdb.engine.stratified.stratified_closure`).

Under a depth bound the demand is first computed without budgets (at most :data:`EXACT_STEPS`
set-level steps): it is then closed for every round, and the engine's own probing round, over the
demanded facts, reports ``"depth"`` exactly when a fact the question depends on would be new or
better one round later. When that demand is too large (a transitive relation's whole reachable
region, say), budgets keep the run small and the depth bound is reported when a table at budget 0
has a rule whose head unifies with it and the set-level evaluation without a budget finds a derived
fact for it: every deeper derivation of an answer crosses such a table, so nothing is cut silently,
but the check is conservative — it may report ``"depth"`` for a deeper derivation that would not
have won.

>>> from thinkingdb.engine.graph import FactGraph
>>> from thinkingdb.engine.results import Ids
>>> from thinkingdb.model import Atom, Fact, PathRel, QueryPattern
>>> g = FactGraph([Fact("n1", "a", "n2"), Fact("n7", "c", "n8"), Fact("z", "a", "w")])
>>> x, y, z, w = (Var(n) for n in "xyzw")
>>> rule = Rule("k", (Atom(x, "a", y), Atom(z, "c", w)), Atom(x, "h", w))
>>> ids = Ids(g)
>>> d = demand_of(g, ids, (rule,), [Query((QueryPattern("n1", PathRel("h"), Var("v")),))], max_depth=None)
>>> sorted(ids.sym_key(s) for s in d.symbols)    # a premise sharing no variable: its facts, not z or w
['n1', 'n2', 'n7', 'n8']
>>> d.budget((ids.sym("n1"), ids.rel("h"), ids.sym("n8"))) == INF, d.budget((ids.sym("z"), ids.rel("h"), ids.sym("n8")))
(True, -1)
"""

from __future__ import annotations

import time
from collections import deque

from ..model import Path, PathInv, PathRel, Query, Rule, Var
from .paths import _NFA, invert, nullable, relations

INF = 1 << 30
FREE = -1
NONE = -2   # a query constant no fact and no rule mentions: it matches nothing
EXISTENCE_STEPS = 50_000   # set-level steps spent deciding whether the depth bound cut something
EXACT_STEPS = 50_000       # set-level steps spent on the unbounded demand of a depth-bounded question


def demand_steps(g) -> int:
    """Set-level steps (done and queued) a demand may take before the question runs as the full
    closure instead: a demand that visits every fact twenty times is no smaller than the closure, and
    a premise sharing no variable with the others makes the set-level join a cartesian product
    (10k facts: 10^8 queued steps, minutes of Python, where the full closure's columnar engine keeps
    ``max_derived`` and ``timeout_ms``)."""
    return max(1_000_000, 20 * len(g))


class Stop(Exception):
    """The demand computation hit ``max_nodes`` or the deadline (``reason`` says which)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Table:
    __slots__ = ("pairs", "subs", "derived")

    def __init__(self) -> None:
        self.pairs: set[tuple[int, int]] = set()
        self.subs: list = []
        self.derived = False   # a rule gave a pair that is not asserted


class Demand:
    """What the question needs: the demanded patterns with their depth budgets, the symbols they
    touch, and what cut the computation (``truncated``)."""

    def __init__(self) -> None:
        self.ff: dict[int, int] = {}
        self.by_s: dict[int, dict[int, int]] = {}
        self.by_o: dict[int, dict[int, int]] = {}
        self.by_so: dict[tuple[int, int, int], int] = {}
        self.symbols: set[int] = set()
        self.truncated: str | None = None
        self.tables = 0

    def note(self, r: int, s: int, o: int, k: int) -> None:
        if s == FREE and o == FREE:
            if self.ff.get(r, -1) < k:
                self.ff[r] = k
        elif o == FREE:
            d = self.by_s.setdefault(r, {})
            if d.get(s, -1) < k:
                d[s] = k
        elif s == FREE:
            d = self.by_o.setdefault(r, {})
            if d.get(o, -1) < k:
                d[o] = k
        elif self.by_so.get((s, r, o), -1) < k:
            self.by_so[(s, r, o)] = k

    def budget(self, key: tuple[int, int, int]) -> int:
        """The largest depth budget of a demanded pattern matching ``key`` (-1: not demanded)."""
        s, r, o = key
        b = self.ff.get(r, -1)
        d = self.by_s.get(r)
        if d is not None:
            b = max(b, d.get(s, -1))
        d = self.by_o.get(r)
        if d is not None:
            b = max(b, d.get(o, -1))
        return max(b, self.by_so.get(key, -1))


class Tabling:
    """The set-level evaluator. ``budgeted``: tables carry depth budgets (else every budget is
    :data:`INF`). ``demand``: where demanded patterns are recorded (None: not recorded)."""

    def __init__(self, g, ids, rules: tuple[Rule, ...], *, demand: Demand | None, max_nodes=None,
                 deadline=None, step_limit=None) -> None:
        self.g, self.ids, self.rules = g, ids, rules
        self.demand = demand
        self.max_nodes, self.deadline, self.step_limit = max_nodes, deadline, step_limit
        self.by_head: dict[int, list[Rule]] = {}
        for rule in rules:
            self.by_head.setdefault(ids.rel(rule.head.relation), []).append(rule)
        self.tables: dict[tuple, _Table] = {}
        self.paths: dict[tuple, _Table] = {}
        self.agenda: deque = deque()
        self.refused: list[tuple[int, int, int]] = []
        self.steps = 0

    # -- terms -----------------------------------------------------------------------------------
    def _term(self, t, env: dict) -> int:
        if isinstance(t, Var):
            return env.get(t.name, FREE)
        sid = self.ids.find_sym(t)
        return NONE if sid is None else sid

    def _touch(self, *syms: int) -> None:
        d = self.demand
        if d is None:
            return
        for x in syms:
            if x not in d.symbols:
                d.symbols.add(x)
                if self.max_nodes is not None and len(d.symbols) > self.max_nodes:
                    raise Stop("nodes")

    # -- tables ----------------------------------------------------------------------------------
    def table(self, r: int, s: int, o: int, k: int) -> _Table:
        key = (r, s, o, k)
        t = self.tables.get(key)
        if t is not None:
            return t
        t = self.tables[key] = _Table()
        if s == NONE or o == NONE:
            return t
        if self.demand is not None:
            self.demand.note(r, s, o, k)
            self.demand.tables += 1
        g = self.g
        if r < len(g._out):
            if s != FREE:
                row = g._out[r].get(s)
                pairs = () if row is None else ((s, x) for x in row if o == FREE or x == o)
            elif o != FREE:
                col = g._in[r].get(o)
                pairs = () if col is None else ((x, o) for x in col)
            else:
                pairs = ((a, b) for a, row in g._out[r].items() for b in row)
            for p in pairs:
                self._add(t, p, False)
        rules = self.by_head.get(r, ())
        if rules and k == 0:
            self.refused.append((r, s, o))
        elif rules:
            for rule in rules:
                env = self._unify(rule, s, o)
                if env is not None:
                    self._join(rule.premises, 0, env, ("rule", rule, t), k - 1 if k != INF else INF)
        return t

    def _unify(self, rule: Rule, s: int, o: int) -> dict | None:
        env: dict[str, int] = {}
        for term, val in ((rule.head.subject, s), (rule.head.object, o)):
            if val == FREE:
                continue
            if isinstance(term, Var):
                if env.setdefault(term.name, val) != val:
                    return None
            elif self.ids.sym(term) != val:
                return None
        return env

    def _add(self, t: _Table, pair: tuple[int, int], derived: bool) -> None:
        if pair in t.pairs:
            return
        self._touch(*pair)
        t.pairs.add(pair)
        if derived:
            t.derived = True
        for sub in t.subs:
            self.agenda.append((sub, pair))

    def path_table(self, path: Path, s: int, o: int, k: int) -> _Table:
        """Pairs of a pattern ``s path o`` (ends FREE or bound) at budget ``k``."""
        simple = path
        fwd = True
        while isinstance(simple, PathInv):
            simple, fwd = simple.path, not fwd
        if isinstance(simple, PathRel):
            r = self.ids.rel(simple.relation)
            if fwd:
                return self.table(r, s, o, k)
            inner = self.table(r, o, s, k)
            key = ("inv", r, s, o, k)
            t = self.paths.get(key)
            if t is None:
                t = self.paths[key] = _Table()
                inner.subs.append(("flip", t))
                for p in list(inner.pairs):
                    self._add(t, (p[1], p[0]), False)
            return t
        key = (str(path), s, o, k)
        t = self.paths.get(key)
        if t is not None:
            return t
        t = self.paths[key] = _Table()
        if s == NONE or o == NONE:
            return t
        if s == FREE and o != FREE:
            back = self.path_table(invert(path), o, FREE, k)
            back.subs.append(("flip", t))
            for p in list(back.pairs):
                self._add(t, (p[1], p[0]), False)
            return t
        nfa = _NFA(path, lambda rel: self.ids.rel(rel))
        if s != FREE:
            self._walk(nfa, t, s, o, k)
            return t
        starts = self._starts(path, k)
        for x in sorted(starts):
            self._walk(nfa, t, x, o, k)
        return t

    def _starts(self, path: Path, k: int) -> set[int]:
        """Every symbol a free path pattern may start from: the ends of its relations' facts, and
        for a path that can match zero steps every symbol of the model."""
        out: set[int] = set()
        for rel in sorted(relations(path)):
            t = self.table(self.ids.rel(rel), FREE, FREE, k)
            self.run()
            out.update(x for p in t.pairs for x in p)
        if nullable(path):
            out.update(range(self.ids.n_syms))
            for rule in self.rules:   # a symbol may exist only as a rule-head constant
                h = self.ids.rel(rule.head.relation)
                if not isinstance(rule.head.subject, Var):
                    self.table(h, self.ids.sym(rule.head.subject), FREE, k)
                if not isinstance(rule.head.object, Var):
                    self.table(h, FREE, self.ids.sym(rule.head.object), k)
        return out

    def _walk(self, nfa, t: _Table, src: int, dst: int, k: int) -> None:
        state = {"seen": set(), "nfa": nfa, "t": t, "src": src, "dst": dst, "k": k}
        self._visit(state, src, nfa.start)

    def _visit(self, st: dict, u: int, q: int) -> None:
        stack = [(u, q)]
        nfa, seen = st["nfa"], st["seen"]
        while stack:
            u, q = stack.pop()
            if (u, q) in seen:
                continue
            seen.add((u, q))
            self._touch(u)
            if q == nfa.accept and (st["dst"] == FREE or st["dst"] == u):
                self._add(st["t"], (st["src"], u), False)
            stack.extend((u, q2) for q2 in nfa.eps[q])
            for r, fwd, q2 in nfa.trans[q]:
                if r < 0:
                    continue
                tab = self.table(r, u, FREE, st["k"]) if fwd else self.table(r, FREE, u, st["k"])
                sub = ("step", st, fwd, q2)
                tab.subs.append(sub)
                for p in list(tab.pairs):
                    self.agenda.append((sub, p))

    # -- joins -----------------------------------------------------------------------------------
    def _join(self, body, done: int, env: dict, sink, k: int) -> None:
        n = len(body)
        if done == (1 << n) - 1:
            self._finish(sink, env)
            return
        best, most = -1, -1                 # the first premise with the most bound terms
        for i in range(n):
            if done >> i & 1:
                continue
            a = body[i]
            s, o = a.subject, a.object
            bound = (not isinstance(s, Var) or s.name in env) + (not isinstance(o, Var) or o.name in env)
            if bound > most:
                best, most = i, bound
        a = body[best]
        s, o = self._term(a.subject, env), self._term(a.object, env)
        path = a.path if hasattr(a, "path") else PathRel(a.relation)
        t = self.path_table(path, s, o, k)
        sub = ("join", body, done | 1 << best, best, env, sink, k)
        t.subs.append(sub)
        for p in list(t.pairs):
            self.agenda.append((sub, p))

    def _finish(self, sink, env: dict) -> None:
        if sink[0] == "rule":
            rule, t = sink[1], sink[2]
            for a in rule.negated:   # stratified negation: an absence is checked against the whole pattern
                self.table(self.ids.rel(a.relation), self._term(a.subject, env), self._term(a.object, env), INF)
            h = rule.head
            pair = (self._term(h.subject, env), self._term(h.object, env))
            self._add(t, pair, True)
        # a query sink needs nothing: its tables are the demand

    def _extend(self, a, env: dict, pair: tuple[int, int]) -> dict | None:
        new = dict(env)
        for term, val in ((a.subject, pair[0]), (a.object, pair[1])):
            if isinstance(term, Var):
                if new.setdefault(term.name, val) != val:
                    return None
            elif self.ids.sym(term) != val:
                return None
        return new

    def run(self, until=None) -> None:
        """Process the agenda until it is empty (or ``until()`` holds)."""
        agenda = self.agenda
        while agenda and not (until is not None and until()):
            self.steps += 1
            if not self.steps & 255 and self.deadline is not None and time.perf_counter() > self.deadline:
                raise Stop("time")
            if self.step_limit is not None and self.steps + len(agenda) > self.step_limit:
                raise Stop("steps")
            sub, pair = agenda.popleft()
            kind = sub[0]
            if kind == "join":
                _, body, done, i, env, sink, k = sub
                new = self._extend(body[i], env, pair)
                if new is not None:
                    self._join(body, done, new, sink, k)
            elif kind == "flip":
                self._add(sub[1], (pair[1], pair[0]), False)
            else:
                _, st, fwd, q2 = sub
                self._visit(st, pair[1] if fwd else pair[0], q2)

    # -- entry points ----------------------------------------------------------------------------
    def ask(self, query: Query, k: int) -> None:
        self._join(query.patterns, 0, {}, ("query",), k)
        self.run()


def demand_of(g, ids, rules: tuple[Rule, ...], goals, *, max_depth: int | None, max_nodes=None,
              deadline=None, step_limit: int | None = None) -> Demand | None:
    """The demand of ``goals`` (queries, each evaluated on its own) under ``rules``, with depth
    budgets from ``max_depth`` (None: unbounded); None when ``step_limit`` set-level steps do not
    suffice."""
    d = Demand()
    budget = INF if max_depth is None else max_depth
    tab = Tabling(g, ids, rules, demand=d, max_nodes=max_nodes, deadline=deadline, step_limit=step_limit)
    try:
        for q in goals:
            tab.ask(q, budget)
    except Stop as stop:
        if stop.reason == "steps":
            return None
        d.truncated = stop.reason
        return d
    if tab.refused and _deeper(g, ids, rules, tab.refused, deadline):
        d.truncated = "depth"
    return d


def _deeper(g, ids, rules, refused, deadline) -> bool:
    """Does any refused table (budget 0) have a derived fact that is not asserted, at any depth?
    Conservative: True when the check runs out of steps or time."""
    tab = Tabling(g, ids, rules, demand=None, deadline=deadline, step_limit=EXISTENCE_STEPS)
    try:
        for r, s, o in refused:
            t = tab.table(r, s, o, INF)
            tab.run(until=lambda: t.derived)
            if t.derived:
                return True
    except Stop:
        return True
    return False
