"""Bounded symbolic closure: semi-naive forward chaining with proofs (SPEC §5; docs/closure.md).

Round ``d`` fires every rule with at least one premise among the facts that were new or improved in
round ``d - 1`` and every premise known at the start of the round; what it finds is applied at the
end of the round. A fact first found in round ``d`` therefore has depth ``d``: one premise of depth
``d - 1`` and none deeper. A fact found again with a strictly higher score is *improved* (its old
version is kept, so proofs built earlier stay exact) and propagates in the next round; since scores
are products of numbers in [0, 1], no cycle can improve itself, which is why cyclic graphs terminate.

Bounds (:class:`~thinkingdb.model.Limits`): ``max_depth`` stops after that round; ``max_nodes``
caps the symbols in scope; ``max_derived`` admits new facts in canonical order up to the cap;
``timeout_ms`` is checked every 256 start facts. ``truncated`` names the first bound that cut the
run short, and only when it did cut something (the depth bound runs one probing round to know).

Seeded mode (``seeds`` given): the scope is the seeds plus the symbols nearest to them — breadth
first over asserted facts in both directions, layer by layer in canonical order — up to
``max_nodes``; rules see only asserted facts with both ends in scope, and a rule head may bring in a
new symbol (a constant) only while the scope is under the bound. Full mode: every symbol (or the
first ``max_nodes`` in canonical order).

>>> from thinkingdb.engine.graph import FactGraph
>>> from thinkingdb.model import Fact, Triple, Declaration
>>> from thinkingdb.engine.rules import compile_declarations
>>> g = FactGraph([Fact("a", "depends_on", "b"), Fact("b", "depends_on", "c", 0.5)])
>>> res = closure(g, compile_declarations([Declaration("depends_on", "transitive")]))
>>> res.truncated, res.score(Triple("a", "depends_on", "c"))
(None, 0.5)
"""

from __future__ import annotations

import time

from ..errors import ValidationError
from .graph import FactGraph
from .rules import fast_path_plan, needs_strata
from ..model import Limits, Rule, Var
from .results import ClosureResult, Ids
from ..values import Value

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:
    from typing import Iterable

__all__ = ["closure", "preload", "ClosureResult", "ClosureStats", "ENGINES"]

ENGINES = ("auto", "columnar", "reference")


class ClosureStats(Value):
    """What a run did: facts in scope, derived facts, rounds, rule firings, symbols in scope, time.
    Frozen (:class:`~thinkingdb.values.Value`: every run makes one, and a dataclass costs a fresh
    process ~0.4 ms to create); ``stats.replace(...)`` for a changed copy.

    ``fallback``: why the columnar engine did not run (the reference or stratified one did).
    ``tables``: goal-directed runs: the demanded patterns (tables) of the question. ``exact_depth``:
    goal-directed runs under a depth bound: True when the depth report came from the unbounded demand
    (exact), False when that demand was over ``exact_steps`` or cut by ``max_nodes`` and the depth
    budgets reported it (conservative); None when no such demand was tried.

    >>> ClosureStats("transitive", 0, 3, 1, 0, 4, 1.5).replace(elapsed_ms=0.0)
    ClosureStats(engine='transitive', asserted=0, derived=3, rounds=1, firings=0, nodes=4, elapsed_ms=0.0, fallback=None, tables=0, exact_depth=None)
    """

    _fields = _compare = ("engine", "asserted", "derived", "rounds", "firings", "nodes", "elapsed_ms", "fallback",
                          "tables", "exact_depth")
    __slots__ = _fields

    def __init__(self, engine: str, asserted: int, derived: int, rounds: int, firings: int, nodes: int,
                 elapsed_ms: float, fallback: str | None = None, tables: int = 0,
                 exact_depth: bool | None = None) -> None:
        for name, value in zip(self._fields, (engine, asserted, derived, rounds, firings, nodes, elapsed_ms, fallback,
                                              tables, exact_depth)):
            object.__setattr__(self, name, value)


def closure(g: FactGraph, rules: Iterable[Rule], *, seeds: Iterable[str] | None = None,
            limits: Limits = Limits(), alternatives: int = 0,
            via: Iterable[str] | None = None,
            engine: str = "auto", goals: Iterable | None = None, exact_steps: int | None = None) -> ClosureResult:
    """Derive what ``rules`` entail from the facts of ``g`` within ``limits``.

    ``seeds``: symbol keys for seeded mode (None: full mode). ``alternatives``: keep up to that many
    other derivations per fact. ``via``: relations the seeded scope may grow along (None: all).
    ``engine``: ``"auto"`` (a fast path when one is exact, else the columnar engine, else the
    reference engine; ``stats.engine`` says which and ``stats.fallback`` why), ``"columnar"`` (no
    fast path) or ``"reference"`` (the semi-naive reference engine only). Small inputs run without
    numpy in ``"auto"``: a one-round join of at most
    :data:`~thinkingdb.engine.oneround.SMALL_JOIN` facts walked plus candidates in pure Python, and any other rule set
    over at most :data:`~thinkingdb.engine.seminaive.SMALL_FACTS` facts on the reference engine first,
    for at most :data:`~thinkingdb.engine.seminaive.SMALL_BUDGET` firings (then the usual engine).
    ``goals``: queries (:class:`~thinkingdb.model.Query`) the run is for. Goal-directed mode: only the
    facts the goals need are derived (:mod:`thinkingdb.engine.demand`), each with the score, depth
    and proof the full closure gives it; ``seeds`` and ``via`` are then ignored. Under a depth bound
    the goals' unbounded demand is tried first, for at most ``exact_steps`` set-level steps
    (None: :data:`~thinkingdb.engine.demand.EXACT_STEPS`), so that ``"depth"`` is reported exactly;
    past that, depth budgets only: the facts within the depth bound keep their scores and proofs and
    the depth bound is reported conservatively. A small ``exact_steps`` spends no time on a large
    unbounded demand (which may itself hit ``max_nodes``).
    """
    if engine not in ENGINES:
        raise ValidationError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if isinstance(alternatives, bool) or not isinstance(alternatives, int) or alternatives < 0:
        raise ValidationError(f"alternatives must be a non-negative integer, got {alternatives!r}")
    t0 = time.perf_counter()
    deadline = None if limits.timeout_ms is None else t0 + limits.timeout_ms / 1000.0
    rules = tuple(dict.fromkeys(rules))   # a rule given twice derives once (noisy-or, alternatives)
    ids = Ids(g)
    for rule in rules:           # intern rule constants and relations before sizing the scope
        for a in rule.premises + (rule.head,) + rule.negated:
            ids.rel(a.relation)
            for t in (a.subject, a.object):
                if isinstance(t, str):
                    ids.sym(t)
    constants = sorted({ids.sym(t) for rule in rules for a in rule.premises + (rule.head,) + rule.negated
                        for t in (a.subject, a.object) if isinstance(t, str)}, key=ids.sym_rank)
    if needs_strata(rules):   # 'not' premises, comparisons or statement-node heads: stratified
        return _stratified(g, ids, rules, constants, goals, limits, alternatives, deadline, t0)
    if goals is not None:
        return _goal_directed(g, ids, rules, tuple(goals), limits, alternatives, deadline, t0, engine, exact_steps)
    from . import oneround, seminaive  # noqa: PLC0415 (the engines' dispatch: not loaded by a single-source question)
    from . import plan as colplan  # noqa: PLC0415
    from .scope import scope_of  # noqa: PLC0415 (full and seeded runs only: a question's scope is its demand)
    scope, scope_list, truncated = scope_of(g, ids, seeds, constants, limits.max_nodes, via)
    if (engine == "auto" and _small(g) and _fast_plan(g, rules, limits, alternatives, scope) is None
            and oneround.one_round_plan(rules, limits, alternatives) is None
            and colplan.unsupported(rules, alternatives) is None):   # (the fast paths build their own proofs)
        res = _reference(g, ids, rules, scope, scope_list, truncated, limits, alternatives, deadline, t0,
                         budget=seminaive.SMALL_BUDGET)
        if res is not None:   # done within the budget, numpy never imported
            return res

    fast = None if engine != "auto" else _fast_plan(g, rules, limits, alternatives, scope)
    res = None
    if fast is not None:
        from .transitive import run_transitive  # noqa: PLC0415 (numpy only when a numpy engine runs)
        plan, base, layered = fast
        res = run_transitive(g, ids, base, plan, scope, deadline, layered)
    if res is not None and limits.max_derived is not None and res.derived_count > limits.max_derived:
        res = None   # over the bound: the semi-naive engine admits its canonical prefix
    if res is not None:
        res.truncated = res.truncated or truncated
        res.stats = ClosureStats("transitive", res.asserted_in_scope, res.derived_count, 1, 0,
                                 ids.n_syms if scope_list is None else len(scope_list),
                                 (time.perf_counter() - t0) * 1000)
        return res
    shapes = None if engine != "auto" else oneround.one_round_plan(rules, limits, alternatives)
    if shapes is not None:   # every rule a 2-premise join over asserted facts: one round
        name = "one-round-python"
        if oneround.join_work(g, shapes, scope, oneround.SMALL_JOIN) is not None:
            res, firings = oneround.run_small(g, ids, rules, shapes, scope, limits, deadline)
        else:
            from .nonrecursive import run_one_round  # noqa: PLC0415
            res = run_one_round(g, ids, rules, shapes, scope, limits, deadline)
            name, firings = "one-round", res.firings
        res.truncated = truncated or res.truncated
        res.stats = ClosureStats(name, _asserted_in_scope(g, scope, scope_list), res.derived_count, 1, firings,
                                 ids.n_syms if scope_list is None else len(scope_list),
                                 (time.perf_counter() - t0) * 1000)
        return res
    why = "reference engine asked for" if engine == "reference" else None
    if why is None:
        why = colplan.unsupported(rules, alternatives)
    if why is None:
        from .columnar import run_columnar  # noqa: PLC0415 (numpy only when a numpy engine runs)
        res = run_columnar(g, ids, rules, scope, scope_list, truncated, limits, deadline, t0)
        res.stats = ClosureStats("columnar", _asserted_in_scope(g, scope, scope_list), res.derived_count, res.rounds, res._run.firings,
                                 ids.n_syms if scope_list is None else len(scope_list),
                                 (time.perf_counter() - t0) * 1000)
        return res
    return _reference(g, ids, rules, scope, scope_list, truncated, limits, alternatives, deadline, t0,
                      fallback=None if engine == "reference" else why)


def _small(g: FactGraph) -> bool:
    """Whether the reference engine is tried first, within :data:`~thinkingdb.engine.seminaive.SMALL_BUDGET`."""
    from . import seminaive  # noqa: PLC0415
    return len(g) <= seminaive.SMALL_FACTS


def _reference(g, ids, rules, scope, scope_list, truncated, limits, alternatives, deadline, t0, *, admit=None,
               tables=0, probe=True, budget=None, fallback=None, exact=None):
    """The reference engine with its stats; None when ``budget`` ran out (``fallback`` then says why
    it ran: a small input, when it ran within the budget)."""
    from . import seminaive  # noqa: PLC0415
    out = seminaive.semi_naive(g, ids, rules, scope, scope_list, truncated, limits, alternatives, deadline,
                               admit=admit, probe=probe, budget=budget)
    if out is None:
        return None
    res, rounds, firings, asserted = out
    if budget is not None:
        fallback = f"small input: at most {seminaive.SMALL_FACTS:,} facts, done within {budget:,} firings"
    res.stats = ClosureStats("semi-naive", asserted, res.derived_count, rounds, firings,
                             ids.n_syms if scope_list is None else len(scope_list),
                             (time.perf_counter() - t0) * 1000, fallback=fallback, tables=tables, exact_depth=exact)
    return res


def preload(g: FactGraph, rules: Iterable[Rule], *, limits: Limits = Limits(), alternatives: int = 0) -> str:
    """Import the engine module that ``closure(g, rules, limits=limits, alternatives=alternatives)``
    in full mode would run, and nothing else (a server or a benchmark loads before it runs; a small
    input's closure imports no numpy, so neither does this). Returns that engine's name; nothing is
    computed but the choice (for a one-round rule set, the candidates counted up to the cap).

    >>> from thinkingdb.model import Atom, Fact, Rule, Var
    >>> x, y, z = Var("x"), Var("y"), Var("z")
    >>> preload(FactGraph([Fact("a", "r", "b"), Fact("b", "r", "c")]),
    ...         [Rule("c", (Atom(x, "r", y), Atom(y, "r", z)), Atom(x, "r2", z))])
    'one-round-python'
    """
    import importlib  # noqa: PLC0415
    from . import oneround  # noqa: PLC0415
    from . import plan as colplan  # noqa: PLC0415
    rules = tuple(rules)
    one_round = oneround.one_round_plan(rules, limits, alternatives)
    if needs_strata(rules):
        name, module = "stratified", "stratified"
    elif _fast_plan(g, rules, limits, alternatives) is not None:
        name, module = "transitive", "transitive"
    elif _small(g) and one_round is None and colplan.unsupported(rules, alternatives) is None:
        name, module = "semi-naive", "seminaive"   # (past its budget, the run imports the next engine)
    elif one_round is not None:
        small = oneround.join_work(g, one_round, None, oneround.SMALL_JOIN) is not None
        name, module = ("one-round-python", "oneround") if small else ("one-round", "nonrecursive")
    else:
        name, module = "columnar", "columnar"
    importlib.import_module(f"{__package__}.{module}")
    return name


def _stratified(g, ids, rules, constants, goals, limits, alternatives, deadline, t0):
    """The stratified engine: goal-directed over the demand of ``goals`` when the rules allow it (the
    demand includes every ``not`` atom whole), else in full mode. ``stats.fallback`` names what needs
    this engine (and why goals were not followed, when they were not); ``stats.tables`` > 0 says
    they were."""
    from .demand import demand_of  # noqa: PLC0415
    from .stratified import goal_directed_refusal, needs, stratified_closure  # noqa: PLC0415
    why = None if goals is None else goal_directed_refusal(rules)
    if goals is not None and why is None:
        d = demand_of(g, ids, rules, tuple(goals), max_depth=None, max_nodes=limits.max_nodes, deadline=deadline)
        scope = bytearray(ids.n_syms)
        for s in d.symbols:
            scope[s] = 1
        scope_list = sorted(d.symbols)
        res, rounds, firings = stratified_closure(g, ids, rules, scope, scope_list, d.truncated, limits,
                                                  alternatives, deadline, admit=d.budget)
        res.stats = ClosureStats("stratified", _asserted_in_scope(g, scope, scope_list), res.derived_count, rounds, firings,
                                 len(scope_list), (time.perf_counter() - t0) * 1000, fallback=needs(rules),
                                 tables=d.tables)
        return res
    from .scope import scope_of  # noqa: PLC0415
    scope, scope_list, truncated = scope_of(g, ids, None, constants, limits.max_nodes, None)
    res, rounds, firings = stratified_closure(g, ids, rules, scope, scope_list, truncated, limits,
                                              alternatives, deadline)
    res.stats = ClosureStats("stratified", _asserted_in_scope(g, scope, scope_list), res.derived_count, rounds, firings,
                             ids.n_syms if scope_list is None else len(scope_list),
                             (time.perf_counter() - t0) * 1000,
                             fallback=f"{needs(rules)}" + ("" if why is None else f"; goals not followed: {why}"))
    return res


def _asserted_in_scope(g: FactGraph, scope: bytearray | None, members=None) -> int:
    """Asserted facts with both ends in ``scope``; with ``members`` (the ids set in it), read from
    their rows alone, not from the whole graph."""
    if scope is None:
        return len(g)
    if members is not None:
        return sum(1 for r in range(len(g._out)) for s in members if (row := g._out[r].get(s))
                   for o in row if scope[o])
    return sum(1 for r in range(len(g._out)) for s, row in g._out[r].items() if scope[s] for o in row if scope[o])


def _goal_directed(g, ids, rules, goals, limits, alternatives, deadline, t0, engine="auto", exact_steps=None):
    """Closure for ``goals`` only: single-source reachability when the rules are a transitive
    closure, else the demand of the goals (set-level tabling) and the columnar engine (the reference
    engine when it cannot run, or when asked for) admitting only demanded facts within their depth
    budgets."""
    # A small input tries the reference engine first only when no node or derived-fact bound could cut
    # its run (the single-source search and the conjunction's array path count those per walk and per
    # start, so the reports would differ) and the transitive fast path does not apply (the
    # single-source search builds its own proofs, a balanced tree over the best walk). (The fast path
    # is asked first: a single-source question then loads neither the reference engine nor the demand.)
    small = (engine == "auto" and _fast_plan(g, rules, Limits(max_depth=limits.max_depth), alternatives) is None
             and _small(g) and limits.max_nodes is None
             and (limits.max_derived is None or limits.max_derived >= _small_budget()))
    if not small:
        res = _single_source(g, ids, rules, goals, limits, alternatives, deadline, t0)
        if res is None:   # a linear recursion asked from one bound end (engine/chain.py)
            from .chain import linear_chain  # noqa: PLC0415
            res = linear_chain(g, ids, rules, goals, limits, alternatives, deadline, closure)
            if res is not None:
                res.stats = ClosureStats("chain", 0, res.derived_count, 0, 0, res.nodes,
                                         (time.perf_counter() - t0) * 1000, tables=res.tables)
        if res is not None:
            return res
    from . import plan as colplan  # noqa: PLC0415
    from . import seminaive  # noqa: PLC0415
    from .demand import EXACT_STEPS, demand_of  # noqa: PLC0415
    d, probe, exact = None, True, None
    if limits.max_depth is not None and exact_steps != 0:   # unbounded demand if small: exact depth report
        d = demand_of(g, ids, rules, goals, max_depth=None, max_nodes=limits.max_nodes, deadline=deadline,
                      step_limit=EXACT_STEPS if exact_steps is None else exact_steps)
        if d is not None and d.truncated == "nodes":
            d = None   # cut by max_nodes, the unbounded demand is not exact: depth budgets reach further
        exact = d is not None
    if d is None:
        from .demand import demand_steps  # noqa: PLC0415
        d = demand_of(g, ids, rules, goals, max_depth=limits.max_depth, max_nodes=limits.max_nodes,
                      deadline=deadline, step_limit=demand_steps(g))
        probe = limits.max_depth is None
        if d is None:   # the demand is no smaller than the closure: the full closure, in the time left
            import dataclasses  # noqa: PLC0415 (a question that gets here is not a cold one)
            left = None if deadline is None else max(1, int((deadline - time.perf_counter()) * 1000))
            res = closure(g, rules, limits=dataclasses.replace(limits, timeout_ms=left),
                          alternatives=alternatives, engine=engine)
            if res.stats is not None:
                res.stats = res.stats.replace(fallback="goals not followed: the demand "
                                              f"exceeded {demand_steps(g):,} set-level steps")
            return res
    scope = bytearray(ids.n_syms)
    for s in d.symbols:
        scope[s] = 1
    scope_list = sorted(d.symbols)
    if small and colplan.unsupported(rules, alternatives) is None:
        res = _reference(g, ids, rules, scope, scope_list, d.truncated, limits, alternatives, deadline, t0,
                         admit=d.budget, tables=d.tables, probe=probe, budget=seminaive.SMALL_BUDGET, exact=exact)
        if res is not None:
            return res
    why = "reference engine asked for" if engine == "reference" else None
    if why is None:
        why = colplan.unsupported(rules, alternatives)
    if why is None:
        from .columnar import run_columnar  # noqa: PLC0415 (numpy only when a numpy engine runs)
        res = run_columnar(g, ids, rules, scope, scope_list, d.truncated, limits, deadline, t0, demand=d, probe=probe)
        res.stats = ClosureStats("columnar", _asserted_in_scope(g, scope, scope_list), res.derived_count,
                                 res.rounds, res._run.firings, len(scope_list), (time.perf_counter() - t0) * 1000,
                                 tables=d.tables, exact_depth=exact)
        return res
    return _reference(g, ids, rules, scope, scope_list, d.truncated, limits, alternatives, deadline, t0,
                      admit=d.budget, tables=d.tables, probe=probe, exact=exact,
                      fallback=None if engine == "reference" else why)


def _small_budget() -> int:
    from . import seminaive  # noqa: PLC0415
    return seminaive.SMALL_BUDGET


def _fast_plan(g, rules, limits, alternatives, scope=None):
    """``(plan, the plan's rules, layer rules)`` when the transitive fast path computes the closure
    of ``rules`` — with one-premise rules over a closed relation on top (:mod:`thinkingdb.engine.layer`),
    except on small inputs (those run as before: the reference engine first, without numpy) and under
    a node scope (a layer reads its premises' rows whole, asserted facts outside the scope included) —
    else None. The goal-directed path decides the same way (``layers=``), so both build the same proofs."""
    base, layered = rules, {}
    if any(len(r.premises) == 1 and not r.negated and not r.constraints for r in rules):   # a layer rule's shape
        from .layer import split  # noqa: PLC0415 (not loaded for rules of two or more premises: issue 20)
        base, layered = split(rules)
    if layered and (_small(g) or scope is not None):
        base, layered = rules, {}
    plan = fast_path_plan(base, limits, alternatives)
    if plan is None or any(r not in plan for r, _, _ in layered.values()):
        return None
    return plan, base, layered


def _single_source(g, ids, rules, goals, limits, alternatives, deadline, t0):
    """Single-source reachability when the rules are a transitive closure, else None: in pure Python
    when one pattern's constant reaches few symbols (engine/smallsource.py) or a conjunction's starts
    do (engine/smallconj.py), else in numpy."""
    from .smallsource import small_single_source  # noqa: PLC0415
    if len(goals) == 1 and len(goals[0].patterns) > 1:
        from .smallconj import small_conjunction  # noqa: PLC0415
        res = small_conjunction(g, ids, rules, goals, limits, alternatives, deadline)
    else:
        res = small_single_source(g, ids, rules, goals, limits, alternatives, deadline)
    if res is None:
        from .reach import single_source  # noqa: PLC0415
        res = single_source(g, ids, rules, goals, limits, alternatives, deadline, layers=not _small(g))
    if res is not None:
        res.stats = ClosureStats("transitive", res.asserted_in_scope, res.derived_count, 1, 0, res.nodes,
                                 (time.perf_counter() - t0) * 1000)
    return res
