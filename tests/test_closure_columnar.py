"""The columnar engine (thinkingdb/engine/columnar.py) against the semi-naive reference engine.

The reference engine (``engine="reference"``) is the oracle: on generated programs — random rule
sets (one to three premises, constants, repeated variables), declarations, and templates for linear
and non-linear recursion, mutual recursion and three-premise joins over graphs with cycles — both
engines must agree on everything a caller can read: derived facts, scores (exactly equal: the same
float operations), depths, proofs, truncation, rounds; under every bound."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strategies import SYMBOLS, declarations, facts, rule_sets
from thinkingdb.engine import columnar, plan as colplan
from thinkingdb.engine.closure import closure
from thinkingdb.engine.graph import FactGraph
from thinkingdb.engine.plan import FlatSizes, Program, plan_round
from thinkingdb.engine.rules import compile_declarations
from thinkingdb.errors import ValidationError
from thinkingdb.model import Atom, Fact, Limits, PathRel, Query, QueryPattern, Rule, Var
from thinkingdb.engine.query import evaluate

X, Y, Z, W = Var("x"), Var("y"), Var("z"), Var("w")


def templates(w1: float, w2: float) -> dict[str, tuple[Rule, ...]]:
    """Hand-written programs of each recursion shape over relations r, s, t."""
    return {
        "linear": (Rule("base", (Atom(X, "r", Y),), Atom(X, "p", Y), w1),
                   Rule("step", (Atom(X, "r", Y), Atom(Y, "p", Z)), Atom(X, "p", Z), w2)),
        "nonlinear": (Rule("base", (Atom(X, "r", Y),), Atom(X, "p", Y), w1),
                      Rule("join", (Atom(X, "p", Y), Atom(Y, "p", Z)), Atom(X, "p", Z), w2)),
        "same_generation": (Rule("sg0", (Atom(X, "s", Y), Atom(Z, "s", Y)), Atom(X, "sg", Z), w1),
                            Rule("sg1", (Atom(X, "s", Y), Atom(Y, "sg", W), Atom(Z, "s", W)), Atom(X, "sg", Z), w2)),
        "mutual": (Rule("odd0", (Atom(X, "r", Y),), Atom(X, "odd", Y), w1),
                   Rule("odd1", (Atom(X, "even", Y), Atom(Y, "r", Z)), Atom(X, "odd", Z), w2),
                   Rule("even1", (Atom(X, "odd", Y), Atom(Y, "r", Z)), Atom(X, "even", Z), w1)),
        "three": (Rule("tri", (Atom(X, "r", Y), Atom(Y, "s", Z), Atom(Z, "t", W)), Atom(X, "r", W), w2),
                  Rule("loop", (Atom(X, "r", X),), Atom(X, "t", "a"), w1)),
        "constants": (Rule("c1", (Atom(X, "r", "a"), Atom(X, "s", Y)), Atom(Y, "r", "a"), w2),
                      Rule("c2", (Atom("b", "t", X), Atom(X, "r", Y)), Atom("b", "t", Y), w1),
                      Rule("c3", (Atom(X, "s", X),), Atom(X, "new", "zz"), w1)),
    }


@st.composite
def programs(draw):
    kind = draw(st.sampled_from(["random", "declarations", "template"]))
    if kind == "random":
        return tuple(draw(rule_sets(max_rules=4)))
    if kind == "declarations":
        return compile_declarations(draw(declarations()))
    w = st.sampled_from((1.0, 0.95, 0.5))
    return templates(draw(w), draw(w))[draw(st.sampled_from(sorted(templates(1, 1))))]


BOUNDS = st.builds(lambda d, k, n: Limits(max_depth=d, max_derived=k, max_nodes=n),
                   st.one_of(st.none(), st.integers(0, 4)), st.one_of(st.none(), st.integers(0, 12)),
                   st.one_of(st.none(), st.integers(1, 6)))


def readout(res):
    """Everything a caller reads from a closure result, as plain values."""
    out = {}
    for t in res.derived:
        p = res.proof(t)
        out[t] = (res.score(t), res.depth(t), p.score, p.depth, p.to_json())
    return out, res.truncated, res.derived_count


def run_both(fs, rules, **kw):
    g = FactGraph(fs)
    ref = closure(g, rules, engine="reference", **kw)
    col = closure(g, rules, engine="columnar", **kw)
    return g, ref, col


@given(facts(relations=("r", "s", "t"), max_size=18), programs(), BOUNDS)
def test_same_as_reference_full_mode(fs, rules, limits):
    if not rules:
        return
    _, ref, col = run_both(fs, rules, limits=limits)
    assert col.stats.engine == "columnar"
    assert readout(col) == readout(ref)
    assert (col.stats.derived, col.stats.rounds, col.stats.asserted) == (ref.stats.derived, ref.stats.rounds,
                                                                        ref.stats.asserted)


@given(facts(relations=("r", "s", "t"), max_size=18), programs(), BOUNDS, st.sampled_from(SYMBOLS))
def test_same_as_reference_seeded(fs, rules, limits, seed):
    if not rules:
        return
    _, ref, col = run_both(fs, rules, seeds=[seed], limits=limits)
    assert readout(col) == readout(ref)


@given(facts(relations=("r", "s", "t"), max_size=18), programs())
def test_query_reads_agree(fs, rules):
    """What queries read by id (``out``, ``inn``, ``subjects``) and query answers agree."""
    if not rules:
        return
    g, ref, col = run_both(fs, rules)
    for rel in sorted({r.head.relation for r in rules} | {"r", "s", "t"}):
        r = ref.ids.find_rel(rel)
        if r is None:
            continue
        assert col.subjects(r) == ref.subjects(r)
        for sym in SYMBOLS + ("zz",):
            sid = ref.ids.find_sym(sym)
            if sid is not None:
                assert col.out(r, sid) == ref.out(r, sid)
                assert col.inn(r, sid) == ref.inn(r, sid)
    q = Query((QueryPattern(X, PathRel(rules[0].head.relation), Y),))
    with mock.patch.object(colplan, "unsupported", lambda *a: "test"):
        want = evaluate(q, g, rules).answers
    assert evaluate(q, g, rules).answers == want


@settings(max_examples=30)
@given(facts(relations=("r", "s", "t"), max_size=18), programs(), st.integers(1, 12))
def test_timeout_keeps_the_finished_rounds(fs, rules, calls):
    """A deadline hit after ``calls`` checks drops the unfinished round: what is left is exactly the
    reference engine's closure bounded at the rounds that finished."""
    if not rules:
        return
    g = FactGraph(fs)
    left = [calls]

    def tick(self):
        left[0] -= 1
        if left[0] < 0:
            raise columnar._Timeout

    with mock.patch.object(columnar._Run, "tick", tick):
        col = closure(g, rules, engine="columnar")
    ref = closure(g, rules, engine="reference", limits=Limits(max_depth=col.rounds))
    assert readout(col)[0] == readout(ref)[0]
    if left[0] < 0:
        assert col.truncated == "time"


ENDS = st.one_of(st.just(X), st.just(Y), st.sampled_from(SYMBOLS))


@given(facts(relations=("r", "s", "t"), max_size=18), programs(), BOUNDS, st.data())
def test_same_as_reference_goal_directed(fs, rules, limits, data):
    """Goal-directed runs (``goals=``): the columnar engine admits exactly the demanded facts the
    reference engine admits, with the same scores, depths, proofs, truncation and rounds."""
    if not rules:
        return
    heads = sorted({r.head.relation for r in rules})
    goals = [Query((QueryPattern(data.draw(ENDS), PathRel(data.draw(st.sampled_from(heads))), data.draw(ENDS)),))
             for _ in range(data.draw(st.integers(1, 2)))]
    _, ref, col = run_both(fs, rules, goals=goals, limits=limits)
    assert readout(col) == readout(ref)
    if ref.stats.engine != "transitive":   # else both ran the single-source search
        assert (col.stats.engine, ref.stats.engine) == ("columnar", "semi-naive")
        assert (col.stats.rounds, col.stats.tables, col.stats.nodes) == (ref.stats.rounds, ref.stats.tables,
                                                                        ref.stats.nodes)


def test_goal_directed_hand_example():
    # a -r-> b -r-> c -r-> d, x -r-> y; p is the closure written as two rules; the question a p ?v
    # needs a's chain only: a p b (0.9, depth 1), a p c (1 x (b p c = 0.9 x 0.5), depth 2),
    # a p d (1 x (b p d = 0.5 x (c p d = 0.9)), depth 3); nothing about x
    from thinkingdb.model import Triple
    g = FactGraph([Fact("a", "r", "b"), Fact("b", "r", "c", 0.5), Fact("c", "r", "d"), Fact("x", "r", "y")])
    rules = (Rule("base", (Atom(X, "r", Y),), Atom(X, "p", Y), 0.9),
             Rule("step", (Atom(X, "r", Y), Atom(Y, "p", Z)), Atom(X, "p", Z)))
    res = closure(g, rules, goals=[Query((QueryPattern("a", PathRel("p"), X),))])
    assert res.stats.engine == "columnar" and res.stats.fallback is None
    got = {(t.subject, t.object): (res.score(t), res.depth(t)) for t in res.derived if t.subject == "a"}
    assert got == {("a", "b"): (0.9, 1), ("a", "c"): (0.9 * 0.5, 2), ("a", "d"): (0.5 * 0.9, 3)}
    assert Triple("x", "p", "y") not in set(res.derived)


def test_fallbacks_are_reported():
    g = FactGraph([Fact("a", "r", "b"), Fact("b", "r", "c")])
    rules = (Rule("r2", (Atom(X, "r", Y), Atom(Y, "r", Z)), Atom(X, "q", Z)),
             Rule("r3", (Atom(X, "q", Y),), Atom(Y, "q", X)))
    res = closure(g, rules, alternatives=1)
    assert (res.stats.engine, res.stats.fallback) == ("semi-naive", "alternatives")
    assert closure(g, rules).stats.engine == "columnar"
    twin = (rules[0], Rule("r2", (Atom(X, "q", Y),), Atom(Y, "q", X)))
    assert closure(g, twin).stats.fallback == "duplicate rule names"
    for limits in (Limits(), Limits(max_depth=0), Limits(max_derived=0)):   # no rules: nothing derived
        empty = closure(g, (), limits=limits)
        assert empty.stats.fallback is None and empty.stats.engine != "semi-naive"
        ref = closure(g, (), limits=limits, engine="reference")
        assert readout(empty) == readout(ref) == ({}, None, 0)
        assert empty.stats.rounds == ref.stats.rounds
    with pytest.raises(ValidationError, match="engine must be one of"):
        closure(g, rules, engine="spark")


def test_hand_computed_mutual_recursion():
    # a -r-> b -r-> c -r-> a (0.5 on b->c): odd/even path lengths, scores are products of edges
    g = FactGraph([Fact("a", "r", "b"), Fact("b", "r", "c", 0.5), Fact("c", "r", "a")])
    res = closure(g, templates(1.0, 1.0)["mutual"], engine="columnar")
    from thinkingdb.model import Triple
    assert res.score(Triple("a", "odd", "b")) == 1.0 and res.depth(Triple("a", "odd", "b")) == 1
    assert res.score(Triple("a", "even", "c")) == 0.5 and res.depth(Triple("a", "even", "c")) == 2
    # a odd a: a->b->c->a, three edges, the 0.5 once; depth 3 (odd0, even1, odd1)
    assert res.score(Triple("a", "odd", "a")) == 0.5 and res.depth(Triple("a", "odd", "a")) == 3
    assert res.derived_count == 18   # on a 3-cycle every ordered pair is at odd and at even distance


def test_planner_orders_by_constants_and_bound_variables():
    class Sizes(FlatSizes):
        def matches(self, atom):
            return 1 if atom.object == "true_" else 1000

        def fanout(self, relation, end):
            return {"knows": 50.0, "person": 1.0}[relation]

    rule = Rule("p", (Atom(X, "knows", Y), Atom(Y, "person", "true_"), Atom(X, "person", "true_")),
                Atom(X, "friend", Y))
    plan = plan_round(Program.of([rule]), 2, Sizes(1000), {"knows": 5})
    (pl,) = plan.pipelines
    # from the delta on knows both x and y are bound: both constant premises become checks
    assert [(j.premise, j.mode) for j in pl.steps] == [(1, "check"), (2, "check")]
    first = plan_round(Program.of([rule]), 1, Sizes(1000), None).pipelines[0]
    assert first.start.premise == 1 and first.steps[0].mode == "by_object"


@settings(max_examples=40)
@given(facts(relations=("r", "s", "t"), max_size=18), programs(), BOUNDS)
def test_chunked_and_pruned_rounds_agree(fs, rules, limits):
    """Tiny chunks, join steps run over slices of their input, and early reduces (with
    ``max_derived`` pruning and the cut of later heads inside the round) change nothing."""
    if not rules:
        return
    with mock.patch.object(columnar, "CHUNK", 2), mock.patch.object(columnar, "COMPACT", 3), \
            mock.patch.object(columnar, "ROWS", 3):
        _, ref, col = run_both(fs, rules, limits=limits)
    assert readout(col) == readout(ref)


@settings(max_examples=40)
@given(facts(relations=("r", "s", "t"), max_size=18), programs(), BOUNDS, st.data())
def test_chunked_and_pruned_goal_directed_rounds_agree(fs, rules, limits, data):
    """The same in goal-directed runs, where rows whose head subject is not demanded are dropped
    before they are joined further."""
    if not rules:
        return
    heads = sorted({r.head.relation for r in rules})
    goals = [Query((QueryPattern(data.draw(ENDS), PathRel(data.draw(st.sampled_from(heads))), data.draw(ENDS)),))]
    with mock.patch.object(columnar, "CHUNK", 2), mock.patch.object(columnar, "COMPACT", 3), \
            mock.patch.object(columnar, "ROWS", 3):
        _, ref, col = run_both(fs, rules, goals=goals, limits=limits)
    assert readout(col) == readout(ref)


def test_mapped_graph_is_read_as_arrays(tmp_path):
    """On a store's memory-mapped graph the columnar engine reads relations from the file's arrays
    (never decoding them into dicts) and derives what it derives on the in-memory graph."""
    from thinkingdb.api import KnowledgeBase
    from thinkingdb.engine.mapped import RelationIndex

    text = ("a r b.\nb r c @0.5.\nc r a.\nc s d @0.9.\nd s a.\n"
            "rule step @0.9: ?x r ?y, ?y s ?z => ?x r ?z.\nrule back: ?x s ?y => ?y t ?x.\n")
    src = tmp_path / "kb.tdb"
    src.write_text(text, encoding="utf-8")
    kb = KnowledgeBase(str(tmp_path / "kb.sqlite"))
    kb.ingest([str(src)])
    mem = KnowledgeBase(str(tmp_path / "kb.sqlite"), graph_file=False)
    rules = templates(0.95, 0.5)["linear"] + (Rule("mix", (Atom(X, "r", Y), Atom(Y, "s", Z)), Atom(X, "r", Z), 0.9),)
    assert kb.graph.is_mapped and not mem.graph.is_mapped
    col = closure(kb.graph, rules, engine="columnar")
    assert col.stats.engine == "columnar"
    assert all(isinstance(ix, RelationIndex) for ix in kb.graph._out)   # nothing decoded whole
    assert readout(col) == readout(closure(mem.graph, rules, engine="reference"))
    kb.close()
    mem.close()
