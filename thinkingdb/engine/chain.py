"""Linear chain rules answered for one bound end: the goal-directed form of a linear recursion.

The default library's ``relevance`` (``?x has_capability ?c, ?c relevant_for ?g => ?x relevant_for
?g``) is *right-linear*: ``x T g`` holds when a chain of step facts ``x E c₁``, ``c₁ E c₂``, … ends at
a ``c`` with ``c T g`` asserted. The demand of ``? S T ?x`` tables ``c T ?`` for every ``c`` that
``S`` reaches — every such ``c`` gets its whole answer set, which on the serve benchmark's store is
about 10⁹ facts (docs/closure.md, "Known limits"). This module answers such a question without them.

**The class of rule sets (the shape).** Exactly one rule derives ``T``, with two premises over
variables only — ``?x E ?c, ?c T ?g => ?x T ?g`` (right-linear) or ``?x T ?c, ?c E ?g => ?x T ?g``
(left-linear), premises in either order — ``E`` is not ``T``, and no rule that ``E`` depends on reads
or derives ``T``. A declaration on ``T`` (transitive, symmetric, a subrelation into it) is another
rule deriving ``T``: not this class. The question is one pattern over ``T`` (maybe inverted) with a
constant end, or ``why`` of one ``T`` fact.

**The model.** A left-linear rule is a right-linear one read the other way round, so both are
written as *nodes* and *goals*: right-linear, the node is ``T``'s subject and a step goes from ``x``
to each ``c`` with ``x E c``; left-linear, the node is ``T``'s object and a step goes from ``y`` to
each ``c`` with ``c E y``. For a fixed goal, the ``T`` facts of the nodes depend only on each other,
the step facts and the nodes asserting ``T`` for that goal (fixed at their confidence: asserted facts
win, and end every chain through them). So the full closure's rounds are replayed for that goal
alone (:meth:`ChainResult._simulate`): semi-naive, a step firing when its step fact or its next
node got a new version in the round before, each node keeping the best new derivation (score in the
engines' float order — weight, then the premises in rule order —, then depth, then the premises'
canonical order) when it beats the node's score, every version kept. The step facts' own versions
come from the inner run (an improved fact's old version is what earlier rounds used; with decimal
confidences two chains often tie in the reals and round apart, and then the older, equal-scoring
derivation stays). Scores, depths, proofs and tie-breaks are then those of the full closure.

**Goal bound** (right-linear ``? ?x T g``, left-linear ``? g T ?y``): one search backward from the
nodes asserting ``T`` for ``g``, over every node that reaches one.

**Node bound** (right-linear ``? S T ?x``, left-linear ``? ?x T S``): every goal at once, from
``S``. A best-first search from ``S`` gives ``P(c)``, the best product of steps to each node ``c``.
For a goal, the best chain ends at an asserting node ``a`` maximizing ``P(a) · conf``; every step
``u → v`` of a chain within a relative ``DELTA`` of the best satisfies ``P(u) · step ≥ P(v) · (1 −
DELTA)`` (its *slack* steps), so the goal is replayed over the nodes from which a slack chain leads
to an asserting node within ``DELTA`` of the best — usually the chain itself. A version within
``DELTA`` of a node's best comes from such chains only, so it appears in the same round as in the
full closure, with the same derivation. The replay is accepted when its value is within
``DELTA / 10`` of the bound; otherwise (the best chain ran through another node asserting the same
goal, where the full closure stops) the best-first search runs again for that goal with its
asserting nodes as ends, which makes the bound exact. ``DELTA`` is far above the rounding of float
products (about ``2 k · 2⁻⁵³`` over a chain of ``k`` steps), so no chain whose float product can
tie or beat the best is left out.

The step facts come from the closure of the other rules, goal-directed
(:func:`thinkingdb.engine.closure.closure` with ``goals``: ``S E+ ?c`` for a bound node, the
reverse walks from the asserting nodes for a bound goal), with their exact scores, depths and
proofs, kept version by version; the inner run must be one of the engines the full closure of
such a rule set runs on (columnar or the reference engine: a fast path splits ties in its own way).
A result stands for the full closure only within its bounds: the run declines (returns
None, and the general engine runs and reports the bound) under a depth bound, with alternatives
(noisy-or with ``k > 1``), when the inner run is cut, when ``max_derived`` or ``max_nodes`` would
be passed (derived facts counted: the inner run's and the ``T`` facts this one keeps — the answers
and the facts their proofs go through), when a score is 0, or at the deadline.

>>> from thinkingdb.engine.graph import FactGraph
>>> from thinkingdb.engine.results import Ids
>>> from thinkingdb.model import Atom, Fact, Limits, PathRel, Query, QueryPattern, Rule, Var
>>> x, c, y = Var("x"), Var("c"), Var("y")
>>> rule = Rule("rel", (Atom(x, "e", c), Atom(c, "t", y)), Atom(x, "t", y), 0.5)
>>> g = FactGraph([Fact("a", "e", "b"), Fact("b", "e", "c"), Fact("c", "t", "goal", 0.8)])
>>> q = Query((QueryPattern("a", PathRel("t"), Var("v")),))
>>> from thinkingdb.engine.closure import closure
>>> res = linear_chain(g, Ids(g), (rule,), [q], Limits(), 0, None, closure)
>>> res.out(res.ids.find_rel("t"), res.ids.find_sym("a"))   # 0.5 × (0.5 × 0.8)
{3: 0.2}
>>> print(res.proof(res.ids.triple((0, res.ids.find_rel("t"), 3))).to_text())
a t goal  [score 0.2, depth 2, rule rel @0.5]
├── a e b  [score 1, asserted]
└── b t goal  [score 0.4, depth 1, rule rel @0.5]
    ├── b e c  [score 1, asserted]
    └── c t goal  [score 0.8, asserted]
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass

from ..model import Limits, PathInv, PathRel, PathRepeat, Query, QueryPattern, Rule, Var
from .results import FactView, GraphView

__all__ = ["DELTA", "Shape", "shape_of", "linear_chain", "ChainResult"]

# The relative slack of the node-bound search (see the module docstring): chains within it of the
# best are kept; float products over k steps are off by about 2k·2⁻⁵³, far below it.
DELTA = 1e-9


@dataclass(frozen=True, slots=True)
class Shape:
    """A linear chain rule: ``head`` (T) derived only by ``rule`` from ``step`` (E); ``right``:
    right-linear (the node is T's subject); ``e_at``: the step premise's index in the rule."""

    head: str
    step: str
    rule: Rule
    right: bool
    e_at: int


def _rule_shape(rule: Rule) -> Shape | None:
    if len(rule.premises) != 2 or rule.negated or rule.constraints:
        return None
    h = rule.head
    x, y = h.subject, h.object
    if not (isinstance(x, Var) and isinstance(y, Var)) or x == y:
        return None
    for e_at in (0, 1):
        e, t = rule.premises[e_at], rule.premises[1 - e_at]
        if t.relation != h.relation or e.relation == h.relation:
            continue
        terms = (e.subject, e.object, t.subject, t.object)
        if not all(isinstance(v, Var) for v in terms):
            continue
        if e.subject == x and t.object == y and e.object == t.subject and e.object not in (x, y):
            return Shape(h.relation, e.relation, rule, True, e_at)
        if t.subject == x and e.object == y and t.object == e.subject and t.object not in (x, y):
            return Shape(h.relation, e.relation, rule, False, e_at)
    return None


def shape_of(rules: tuple[Rule, ...], relation: str) -> Shape | None:
    """The chain shape of ``relation`` under ``rules``, or None when the rule set is not in the class.

    >>> from thinkingdb.engine.rules import default_rules
    >>> s = shape_of(default_rules(), "relevant_for")
    >>> (s.head, s.step, s.rule.name, s.right, s.e_at)
    ('relevant_for', 'has_capability', 'relevance', True, 0)
    >>> shape_of(default_rules(), "depends_on") is None
    True
    """
    from .rules import relevant_rules
    heads = [r for r in rules if r.head.relation == relation]
    if len(heads) != 1:
        return None
    shape = _rule_shape(heads[0])
    if shape is None:
        return None
    inner = relevant_rules(tuple(r for r in rules if r is not shape.rule), [shape.step])
    if any(relation in {a.relation for a in r.premises + r.negated + (r.head,)} for r in inner):
        return None
    return shape


class _Timeout(Exception):
    pass


def linear_chain(g, ids, rules, goals, limits: Limits, alternatives: int, deadline, closure):
    """The :class:`ChainResult` for ``goals`` when the rule set and the question are in the class
    (module docstring) and no bound would cut the run, else None; ``closure`` runs the inner
    closure (:func:`thinkingdb.engine.closure.closure`, which calls this)."""
    goals = tuple(goals)
    if limits.max_depth is not None or alternatives or len(goals) != 1 or len(goals[0].patterns) != 1:
        return None
    pat = goals[0].patterns[0]
    path, fwd = pat.path, True
    while isinstance(path, PathInv):
        path, fwd = path.path, not fwd
    if not isinstance(path, PathRel):
        return None
    shape = shape_of(tuple(rules), path.relation)
    if shape is None or shape.rule.weight <= 0:
        return None
    s, o = (pat.subject, pat.object) if fwd else (pat.object, pat.subject)
    node_t, goal_t = (s, o) if shape.right else (o, s)
    if isinstance(node_t, Var) and isinstance(goal_t, Var):
        return None
    consts = [t for t in (node_t, goal_t) if not isinstance(t, Var)]
    if any(ids.find_sym(t) is None or ids.find_sym(t) >= len(g._syms) for t in consts):
        return None
    try:
        res = _run(g, rules, shape, node_t, goal_t, limits, deadline, closure)
    except _Timeout:
        return None
    if res is None:
        return None
    if limits.max_derived is not None and res.derived_count > limits.max_derived:
        return None
    if limits.max_nodes is not None and res.nodes > limits.max_nodes:
        return None
    return res


def _run(g, rules, shape: Shape, node_t, goal_t, limits, deadline, closure):
    from .rules import relevant_rules  # noqa: PLC0415
    inner_rules = relevant_rules(tuple(r for r in rules if r is not shape.rule), [shape.step])
    plus = PathRepeat(PathRel(shape.step), 1, None)
    right = shape.right
    if not isinstance(node_t, Var):   # node bound: every step chain from it
        qs = [QueryPattern(node_t, plus, Var("c")) if right else QueryPattern(Var("c"), plus, node_t)]
    else:                             # goal bound: the reverse step chains from its asserting nodes
        tid = g._rel.get(shape.head)
        gid = g._sym[goal_t]
        index = (g._in if right else g._out)[tid] if tid is not None else {}
        ends = [g._syms[a] for a in index.get(gid, {})]
        qs = [QueryPattern(Var("c"), plus, a) if right else QueryPattern(a, plus, Var("c")) for a in ends]
    left = None if deadline is None else max(1, int((deadline - time.perf_counter()) * 1000))
    scope = None
    if not inner_rules or not qs:
        inner = GraphView(g)
        inner.stats = None
    elif not isinstance(node_t, Var) and (scope := _cone(g, inner_rules, shape, node_t)) is not None:
        if limits.max_nodes is not None and len(scope[1]) > limits.max_nodes:
            return None
        from .columnar import run_columnar  # noqa: PLC0415
        inner = run_columnar(g, scope[0], inner_rules, scope[2], scope[1], None,
                             Limits(max_derived=limits.max_derived), deadline, time.perf_counter())
        inner.stats = None
        if inner.truncated is not None:
            return None
    else:
        inner = closure(g, inner_rules, goals=[Query((q,)) for q in qs],
                        limits=Limits(max_nodes=limits.max_nodes, max_derived=limits.max_derived, timeout_ms=left))
        if inner.truncated is not None or inner.stats.engine not in ("columnar", "semi-naive"):
            return None   # cut, or a fast path (whose proofs split ties unlike the full closure's engines)
    res = ChainResult(g, inner, shape, rules, deadline)
    if scope is not None:
        res.touched.update(scope[1])
    if not isinstance(node_t, Var):
        ok = res.from_node(inner.ids.find_sym(node_t),
                           None if isinstance(goal_t, Var) else inner.ids.find_sym(goal_t))
    else:
        ok = res.to_goal(inner.ids.find_sym(goal_t))
    return res if ok else None


def _cone(g, rules, shape: Shape, node_key: str):
    """``(ids, members, scope flags)``: the symbols a bound node's step facts can come from — the
    node, the rules' constants and everything they reach over the asserted facts of the relations the
    rules read (and the step relation), forward for a right-linear rule (a step fact ``n E ?`` is
    derived from facts reached forward from ``n``), backward for a left-linear one — when every rule
    can be read that way from its head's node end; else None. Every derivation of a step fact of a
    member uses facts between members only, so the closure over this scope has the full closure's
    facts, rounds and versions for them."""
    from .results import Ids  # noqa: PLC0415
    fwd = shape.right
    for rule in rules:
        start = rule.head.subject if fwd else rule.head.object
        reached = {start} if isinstance(start, Var) else set()
        left = list(rule.premises)
        while left:
            ready = [p for p in left if not isinstance(p.subject if fwd else p.object, Var)
                     or (p.subject if fwd else p.object) in reached]
            if not ready:
                return None
            for p in ready:
                left.remove(p)
                end = p.object if fwd else p.subject
                if isinstance(end, Var):
                    reached.add(end)
    ids = Ids(g)
    consts = set()
    for rule in rules:
        for a in rule.premises + (rule.head,):
            ids.rel(a.relation)
            for t in (a.subject, a.object):
                if not isinstance(t, Var):
                    consts.add(ids.sym(t))
    rels = sorted({g._rel[a.relation] for r in rules for a in r.premises if a.relation in g._rel}
                  | ({g._rel[shape.step]} if shape.step in g._rel else set()))
    index = g._out if fwd else g._in
    rows = [index[r] for r in rels]
    n_graph = len(g._syms)
    flags = bytearray(ids.n_syms)
    stack = [ids.sym(node_key)] + sorted(consts)
    members = []
    for x in stack:
        flags[x] = 1
    members.extend(stack)
    while stack:
        x = stack.pop()
        if x >= n_graph:
            continue
        for idx in rows:
            row = idx.get(x)
            if row:
                for y in row:
                    if not flags[y]:
                        flags[y] = 1
                        members.append(y)
                        stack.append(y)
    return ids, sorted(members), flags


class ChainResult(FactView):
    """A :class:`~thinkingdb.engine.results.ClosureResult` look-alike: the ``T`` facts of one bound
    end (and those their proofs go through) over the inner closure of the step relation."""

    def __init__(self, g, inner, shape: Shape, rules, deadline) -> None:
        self.g, self.inner, self.shape, self.rules = g, inner, shape, rules
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

    # -- the model ------------------------------------------------------------------------------
    def _tick(self) -> None:
        self._ticks += 1
        if self._ticks & 1023 == 0 and self._deadline is not None and time.perf_counter() > self._deadline:
            raise _Timeout

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

    def versions(self, key) -> list[tuple[int, float]]:
        """``[(depth, score)]`` of a step fact, oldest first: the versions the inner run kept (a fact
        improved in a later round keeps its old version, which derivations of earlier rounds used)."""
        got = self._evers.get(key)
        if got is None:
            got = self._evers[key] = self._versions(key)
        return got

    def _versions(self, key) -> list[tuple[int, float]]:
        c = self.inner.asserted(key)
        if c is not None:
            return [(0, c)]
        inner = self.inner
        if hasattr(inner, "_run"):   # the columnar result
            fid = inner._fid(key)
            facts = inner._run.facts
            old = [(h[0], h[1]) for h in facts.history.get(fid, ())]
            return old + [(int(facts.round.a[fid]), float(facts.score.a[fid]))]
        v = inner._store.rec[key]    # the reference engine's result
        return [(h[1], h[0]) for h in inner._hist.get(key, ())] + [(v[1], v[0])]

    def step_proof(self, key, limit: int):
        """The step fact's proof as it stood after round ``limit``."""
        from .proofs import Proof
        c = self.inner.asserted(key)
        if c is not None:
            return Proof.asserted(self.ids.triple(key), c)
        return self.inner._build(key, limit)

    # -- the searches ---------------------------------------------------------------------------
    def _simulate(self, goal: int, terms: dict[int, float], back) -> dict[int, list]:
        """The rounds of the full closure for ``goal`` over the nodes ``back`` leads to from the
        asserting nodes ``terms``: ``{node: [(score, depth, next node)]}``, every version oldest
        first. Round ``r`` fires the steps whose step fact got a version in round ``r - 1`` or whose
        next node did (semi-naive, as the engines do); each node keeps the best new derivation (score,
        then depth, then the premises' canonical order) when it beats the node's current score."""
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
        while changed or r <= last:
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
        for n, v in vers.items():
            self.touched.add(n)
            if n not in terms:
                self.rec[self.tkey(n, goal)] = v
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

    def _one_goal(self, start, goal, ends, P, parents) -> tuple | None:
        """The solution for ``goal`` over the slack steps into the nodes within ``DELTA`` of the
        best end, or None when the search's value is not within ``DELTA / 10`` of that bound."""
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
        terms = {a: c for a, c in ends.items() if a in sub}
        vers = self._simulate(goal, terms, lambda c: [(u, e) for u, e in parents.get(c, ()) if u in sub])
        if start not in vers or vers[start][-1][0] < top * (1 - DELTA / 10):
            return None
        return vers

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
        for goal in sorted(by_goal):
            self.touched.add(goal)
            if goal in mine:   # asserted facts win
                continue
            ends = by_goal[goal]
            try:
                got = self._one_goal(start, goal, ends, P, parents)
                if got is None:   # a better chain runs through a node asserting the goal: stop there
                    blocked = frozenset(ends)
                    self.rechecked += 1
                    Pg = self._forward(start, blocked)
                    got = self._one_goal(start, goal, ends, Pg, self._slack(Pg, blocked))
            except ValueError:
                return False
            if got is None:
                return False
            self._keep(goal, start, got)
        self._memo = {}
        return True

    # -- the read interface ---------------------------------------------------------------------
    @property
    def tables(self) -> int:
        """The inner run's demanded patterns."""
        return getattr(self.inner.stats, "tables", 0) if self.inner.stats else 0

    @property
    def nodes(self) -> int:
        n = getattr(self.inner.stats, "nodes", 0) if self.inner.stats else 0
        return max(n, len(self.touched))

    @property
    def derived_count(self) -> int:
        return len(self.rec) + (self.inner.derived_count if hasattr(self.inner, "derived_count") else 0)

    def derived_keys(self):
        yield from sorted(self.rec, key=self.ids.key_rank)
        if hasattr(self.inner, "derived_keys"):
            yield from self.inner.derived_keys()

    @property
    def derived(self):
        from .results import _DerivedView
        return _DerivedView(self)

    def is_derived(self, key) -> bool:
        if key[1] == self.T:
            return key in self.rec
        return hasattr(self.inner, "is_derived") and self.inner.is_derived(key)

    def fact_score(self, key):
        if key[1] != self.T:
            return self.inner.fact_score(key)
        c = self.asserted(key)
        if c is not None:
            return c
        v = self.rec.get(key)
        return None if v is None else v[-1][0]

    def fact_proof(self, key):
        if key[1] != self.T:
            return self.inner.fact_proof(key)
        from .proofs import Proof
        c = self.asserted(key)
        if c is not None:
            return Proof.asserted(self.ids.triple(key), c)
        if key not in self.rec:
            return None
        chain, k, limit = [], key, None   # built from the far end: chains can outgrow the recursion limit
        goal = key[2] if self.shape.right else key[0]
        while self.asserted(k) is None:
            v = _at(self.rec[k], limit)
            chain.append((k, v))
            k, limit = self.tkey(v[2], goal), v[1] - 1
        proof = Proof.asserted(self.ids.triple(k), self.asserted(k))
        for k, v in reversed(chain):
            n = k[0] if self.shape.right else k[2]
            e = self.step_proof(self.ekey(n, v[2]), v[1] - 1)
            proof = Proof.derived(self.ids.triple(k), self.name, self.w, (e, proof) if self.shape.e_at == 0 else (proof, e))
        return proof

    def out(self, r: int, s: int) -> dict[int, float]:
        if r != self.T:
            return self.inner.out(r, s)
        res = super().out(r, s)
        for k, v in self.rec.items():   # (a bound end's facts: few lookups, no index kept)
            if k[0] == s and k[2] not in res:
                res[k[2]] = v[-1][0]
        return res

    def inn(self, r: int, o: int) -> dict[int, float]:
        if r != self.T:
            return self.inner.inn(r, o)
        res = super().inn(r, o)
        for k, v in self.rec.items():
            if k[2] == o and k[0] not in res:
                res[k[0]] = v[-1][0]
        return res

    def subjects(self, r: int) -> list[int]:
        if r != self.T:
            return self.inner.subjects(r)
        return sorted(set(super().subjects(r)) | {k[0] for k in self.rec})

    def objects(self, r: int) -> list[int]:
        if r != self.T:
            return self.inner.objects(r)
        return sorted(set(super().objects(r)) | {k[2] for k in self.rec})


def _at(versions: list, limit: int | None) -> tuple:
    """The last version of depth at most ``limit`` (None: the last one)."""
    if limit is None:
        return versions[-1]
    return next(v for v in reversed(versions) if v[1] <= limit)
