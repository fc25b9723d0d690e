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
DELTA)`` (its *slack* steps; :data:`~thinkingdb.engine.chainresult.DELTA`), so the goal is
replayed over the nodes from which a slack chain leads to an asserting node within ``DELTA`` of the
best — usually the chain itself. A version within
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
With alternatives (noisy-or with ``k > 1``, ``why``'s alternatives) a fact's other derivations are
one per step out of its node, each from the next node's own fact for the goal: with the goal bound
from the replay, with the node bound from that successor's own search and replay
(:mod:`thinkingdb.engine.chainalts`).
**A depth bound** (``max_depth = d``): the closure's ``d`` rounds. With the goal bound the replay's
versions are cut at depth ``d``; with the node bound a layered search gives the best chains within
the bound (:mod:`thinkingdb.engine.chaindepth`). ``truncated`` is ``"depth"`` exactly when an answer
would be new or better past the bound (a later version in the unbounded replay, found goal by goal
until one shows it) — so the full closure says ``"depth"`` too, and without it the answers are the
unbounded ones (the step facts' own later rounds are not looked at: they change no answer).
With the node bound the step facts come first from the cone within a few facts past
:func:`radius` of the node — all the derived steps the bounded chains can use, exact, plus some
past them —, and a goal reached over the cone's steps with no chain within the bound is an answer
the bound cut: ``"depth"``, the whole cone left alone. When no goal shows that, a wider cone is
tried, then the whole cone (:func:`_reaches`): a small bound costs what its chains reach.
A result stands for the full closure only within its bounds: the run declines (returns
None, and the general engine runs and reports the bound) when the inner run is cut, when
``max_derived`` or ``max_nodes`` would
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

import time

from ..model import Limits, PathInv, PathRel, PathRepeat, Query, QueryPattern, Rule, Var
from ..values import Value
from .results import GraphView

__all__ = ["Shape", "shape_of", "linear_chain"]


class Shape(Value):
    """A linear chain rule: ``head`` (T) derived only by ``rule`` from ``step`` (E); ``right``:
    right-linear (the node is T's subject); ``e_at``: the step premise's index in the rule. Frozen
    (a :class:`~thinkingdb.values.Value`, not a dataclass: a question loads no ``dataclasses``).

    >>> Shape("t", "e", None, True, 0)
    Shape(head='t', step='e', rule=None, right=True, e_at=0)
    """

    __slots__ = ("head", "step", "rule", "right", "e_at")

    def __init__(self, head: str, step: str, rule: Rule, right: bool, e_at: int) -> None:
        for name, value in zip(self.__slots__, (head, step, rule, right, e_at)):
            object.__setattr__(self, name, value)


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


def linear_chain(g, ids, rules, goals, limits: Limits, alternatives: int, deadline, closure):
    """The :class:`~thinkingdb.engine.chainresult.ChainResult` for ``goals`` when the rule set and
    the question are in the class (module docstring) and no bound would cut the run, else None;
    ``closure`` runs the inner closure (:func:`thinkingdb.engine.closure.closure`, which calls this)."""
    goals = tuple(goals)
    if len(goals) != 1 or len(goals[0].patterns) != 1:
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
    import gc  # noqa: PLC0415 (built in)
    from .chainresult import Timeout  # noqa: PLC0415 (a question this engine declines loads only this module)
    was = gc.isenabled()
    gc.disable()   # (the replays' versions: many small acyclic containers, which collections walk again and again)
    try:
        for reach in _reaches(rules, shape, node_t, limits.max_depth):
            res = _run(g, rules, shape, node_t, goal_t, limits, alternatives, deadline, closure, reach)
            if res is not FULL:   # (FULL: this cone could not tell whether the bound cut an answer)
                break
    except Timeout:
        return None
    finally:
        if was:
            gc.enable()
    if res is None:
        return None
    if limits.max_derived is not None and res.derived_count > limits.max_derived:
        return None
    if limits.max_nodes is not None and res.nodes > limits.max_nodes:
        return None
    return res


FULL = object()   # _run's answer when the depth bound's cone must give way to the whole cone


def radius(rules, depth: int | None) -> int | None:
    """How far (in asserted facts, along the cone's direction) from a bound node the derived step
    facts of a ``depth``-bounded question can draw on, or None (the whole cone). A step fact of
    depth ``δ`` derived by rules of at most ``p`` premises, each read from its head's node end,
    spans at most ``H(δ) = p^δ`` facts; step ``j`` of a chain (``j = 1 … d``) is taken at depth
    ``d − j`` at most and starts where the ``j − 1`` before it ended; the last one is asserted (read
    from the graph wherever it is). So the derived steps draw on ``H(d−1) + … + H(1)`` facts at most.
    None when that is large (the cone is then about all of it) or a rule has a ``not`` premise (a
    smaller scope would derive more, not less).

    >>> from thinkingdb.engine.rules import default_rules
    >>> radius(default_rules()[:1], 3), radius((), 3), radius(default_rules()[:1], None)
    (6, 2, None)
    """
    if depth is None or any(r.negated for r in rules):
        return None
    p = max((len(r.premises) for r in rules), default=1)
    got = sum(p ** i for i in range(1, depth))
    return None if got > RADIUS else got


RADIUS = 64   # a larger radius: the whole cone at once
GROW, TRIES = 2, 4   # the near cones tried: radius + 2, + 4, + 6, + 8, then the whole cone


def _reaches(rules, shape: Shape, node_t, depth: int | None) -> list:
    """The cones a bound node's question runs over, in turn, until one tells whether the depth
    bound cut an answer (a goal reached by steps in the cone but not within the bound): a little
    past :func:`radius` — the steps past the bound in the cone are what shows it —, growing, then
    the whole cone (None)."""
    if isinstance(node_t, Var):
        return [None]
    from .rules import relevant_rules  # noqa: PLC0415
    r = radius(relevant_rules(tuple(x for x in rules if x is not shape.rule), [shape.step]), depth)
    return [None] if r is None else [r + GROW * i for i in range(1, TRIES + 1) if r + GROW * i <= RADIUS] + [None]


def _run(g, rules, shape: Shape, node_t, goal_t, limits, alternatives, deadline, closure, reach):
    """``reach``: a bound node's cone only that far (:func:`_reaches`); FULL when that cone was
    cut and shows no answer cut by the depth bound."""
    from .chainresult import ChainResult  # noqa: PLC0415
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
    elif (not isinstance(node_t, Var) and _columnar_exact(inner_rules)
          and (scope := _cone(g, inner_rules, shape, node_t, reach)) is not None):
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
    res = ChainResult(g, inner, shape, rules, deadline, alternatives, limits.max_depth)
    res.near = scope is not None and scope[3]
    if scope is not None:
        res.touched.update(scope[1])
    if not isinstance(node_t, Var):
        ok = res.from_node(inner.ids.find_sym(node_t),
                           None if isinstance(goal_t, Var) else inner.ids.find_sym(goal_t))
    else:
        ok = res.to_goal(inner.ids.find_sym(goal_t))
    if ok and res.near and res.truncated is None:
        return FULL
    return res if ok else None


def _cone(g, rules, shape: Shape, node_key: str, reach: int | None = None):
    """``(ids, members, scope flags, cut)``: the symbols a bound node's step facts can come from —
    the node, the rules' constants and everything they reach over the asserted facts of the
    relations the rules read (and the step relation), forward for a right-linear rule (a step fact
    ``n E ?`` is derived from facts reached forward from ``n``), backward for a left-linear one —
    when every rule can be read that way from its head's node end; else None. Every derivation of a
    step fact of a member uses facts between members only, so the closure over this scope has the
    full closure's facts, rounds and versions for them. ``reach``: only the symbols at most that
    many facts away (:func:`radius`); ``cut`` says whether it left any out."""
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
    layer = [ids.sym(node_key)] + sorted(consts)
    members = []
    for x in layer:
        flags[x] = 1
    members.extend(layer)
    hops, cut = 0, False
    while layer:   # breadth first: layer i holds the symbols i facts away
        if reach is not None and hops == reach:
            cut = any(not flags[y] for x in layer if x < n_graph for idx in rows for y in idx.get(x) or ())
            break
        hops += 1
        nxt = []
        for x in layer:
            if x >= n_graph:
                continue
            for idx in rows:
                row = idx.get(x)
                if row:
                    for y in row:
                        if not flags[y]:
                            flags[y] = 1
                            members.append(y)
                            nxt.append(y)
        layer = nxt
    return ids, sorted(members), flags, cut


def _columnar_exact(rules) -> bool:
    """Whether the columnar engine gives the full closure's proofs for ``rules`` (the reason
    ``closure()`` checks before it runs it: e.g. two rules of one name tie-break differently there);
    when not, the step facts come from ``closure(goals=...)``, which picks the reference engine."""
    from .plan import unsupported  # noqa: PLC0415
    return unsupported(tuple(rules), 0) is None
