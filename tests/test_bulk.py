"""Answer sets held as arrays (``thinkingdb.engine.bulk``) and the layered search under them
(``thinkingdb.engine.bfs``) against the general evaluator: on generated graphs with cycles, in memory
and memory-mapped, for one pattern with one constant end over ``r``, ``^r``, ``r+``, ``r*`` and
``^r+``, with a transitive declaration fed by a subrelation or without rules, under every Limits
setting: the same answers, scores, order, proofs and ``truncated``; and ``why`` (a walk found by the
layered search that stops at its target) equals the full closure's proof."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import thinkingdb.engine.bulk as bulk
from thinkingdb.engine.graph import FactGraph
from thinkingdb.engine.query import evaluate, why
from thinkingdb.engine.rules import compile_declarations
from thinkingdb.model import Declaration, Fact, Limits, PathInv, PathRel, PathRepeat, Query, QueryPattern, Triple, Var
from thinkingdb.store import graphfile as gf

from strategies import SYMBOLS, facts

LIMITS = [Limits(), Limits(max_derived=10_000), Limits(max_nodes=3), Limits(max_nodes=1_000),
          Limits(max_derived=2_000_000, timeout_ms=30_000)]
PATHS = [PathRel("r"), PathInv(PathRel("r")), PathRepeat(PathRel("r"), 1, None), PathRepeat(PathRel("r"), 0, None),
         PathRepeat(PathInv(PathRel("r")), 1, None), PathInv(PathRepeat(PathRel("r"), 0, None))]
RULES = {"transitive": compile_declarations([Declaration("r", "transitive"), Declaration("s", "subrelation_of", "r")]),
         "none": ()}


def mapped(fs: list[Fact], tmp) -> FactGraph:
    """The same facts as a memory-mapped graph file (ids are canonical ranks there)."""
    best: dict[tuple, float] = {}
    for f in fs:
        best[f.triple] = max(f.confidence, best.get(f.triple, 0.0))
    symbols = sorted({k for t in best for k in (t.subject, t.object)})
    relations = sorted({t.relation for t in best})
    sid, rid = {k: i for i, k in enumerate(symbols)}, {k: i for i, k in enumerate(relations)}
    trip = sorted(best)
    arr = lambda f: np.array([f(t) for t in trip], dtype=np.int64)  # noqa: E731
    path = str(tmp / "x.graph")
    stamp = gf.Stamp(1, "tok", 1)
    gf.write_graph(path, stamp, symbols, relations, arr(lambda t: sid[t.subject]), arr(lambda t: rid[t.relation]),
                   arr(lambda t: sid[t.object]), np.array([best[t] for t in trip], dtype=np.float64))
    ga = gf.open_graph(path, stamp)
    return FactGraph.mapped(ga.arrays, ga.relations, ga.n_symbols, ga.n_facts, path)


def general(*args, **kw):
    """The evaluator with the array path switched off."""
    keep = bulk.bulk_answers
    bulk.bulk_answers = lambda *a, **k: None
    try:
        return evaluate(*args, **kw)
    finally:
        bulk.bulk_answers = keep


def dump(res):
    return [a.to_json() for a in res.answers], res.truncated, res.more


@settings(max_examples=150, deadline=None)
@given(facts(relations=("r", "s"), confidences=(1.0,) * 7 + (0.5,), max_size=18), st.sampled_from(PATHS),
       st.sampled_from(SYMBOLS), st.booleans(), st.sampled_from(sorted(RULES)), st.booleans(),
       st.sampled_from([None, 2]))
def test_array_answers_equal_the_general_evaluator(tmp_path_factory, fs, path, const, subject_end,
                                                   rules, on_disk, max_answers):
    g = mapped(fs, tmp_path_factory.mktemp("g")) if on_disk else FactGraph(fs)
    pat = QueryPattern(const, path, Var("x")) if subject_end else QueryPattern(Var("x"), path, const)
    q = Query((pat,))
    for limits in LIMITS:
        got = evaluate(q, g, RULES[rules], limits=limits, max_answers=max_answers)
        want = general(q, g, RULES[rules], limits=limits, max_answers=max_answers)
        assert dump(got) == dump(want), limits
        assert [a.bindings for a in got.answers] == [a.bindings for a in want.answers]


def test_the_array_path_runs_where_it_should():
    # a cycle a → b → c → a and a tail c → d: `a r ?x` under the transitive declaration is a reach
    # array; with a confidence below 1 the general evaluator answers instead
    fs = [Fact("a", "r", "b"), Fact("b", "r", "c"), Fact("c", "r", "a"), Fact("c", "r", "d")]
    q = Query((QueryPattern("a", PathRel("r"), Var("x")),))
    res = evaluate(q, FactGraph(fs), RULES["transitive"])
    assert type(res.answers).__name__ == "BulkAnswers"
    assert [(a.bindings["x"], a.score) for a in res.answers] == [("a", 1.0), ("b", 1.0), ("c", 1.0), ("d", 1.0)]
    assert res.answers[3].proof.to_json() == why(Triple("a", "r", "d"), FactGraph(fs), RULES["transitive"],
                                                 goal_directed=False).to_json()
    weak = evaluate(q, FactGraph(fs[:3] + [Fact("c", "r", "d", 0.5)]), RULES["transitive"])
    assert type(weak.answers) is list and [a.score for a in weak.answers] == [1.0, 1.0, 1.0, 0.5]


@settings(max_examples=80, deadline=None)
@given(facts(relations=("r", "s"), confidences=(1.0,), max_size=20), st.sampled_from(SYMBOLS),
       st.sampled_from(SYMBOLS), st.booleans())
def test_why_by_the_stopping_search_equals_the_full_closure(tmp_path_factory, fs, s, o, on_disk):
    g = mapped(fs, tmp_path_factory.mktemp("g")) if on_disk else FactGraph(fs)
    t = Triple(s, "r", o)
    got = why(t, g, RULES["transitive"], limits=Limits(max_derived=2_000_000, timeout_ms=30_000))
    want = why(t, FactGraph(fs), RULES["transitive"], goal_directed=False)
    assert (got is None) == (want is None)
    if got is not None:
        assert got.to_json() == want.to_json()


def test_the_search_stops_at_its_target():
    # a long chain: `why a0 r a2` explores two layers, not the 300 symbols behind them
    fs = [Fact(f"a{i}", "r", f"a{i + 1}") for i in range(300)]
    g = FactGraph(fs)
    from thinkingdb.engine.closure import closure
    goal = Query((QueryPattern("a0", PathRel("r"), "a2"),))
    res = closure(g, RULES["transitive"], goals=[goal], limits=Limits(max_derived=2_000_000))
    assert res.proof(Triple("a0", "r", "a2")).score == 1.0
    assert res.stats.nodes <= 4


@settings(max_examples=150, deadline=None)
@given(facts(relations=("r", "s"), confidences=(1.0, 0.9, 0.8, 0.5, 0.25), max_size=20),
       st.sampled_from(PATHS[2:]), st.sampled_from(SYMBOLS), st.booleans(), st.booleans())
def test_best_walks_over_confidences_equal_the_general_evaluator(tmp_path_factory, fs, path, const, subject_end,
                                                                 on_disk):
    # r+ / r* over asserted facts of any confidence (ties in products and steps are common here): the
    # label-correcting search gives the best-first walk's answers, scores, order and proofs
    g = mapped(fs, tmp_path_factory.mktemp("g")) if on_disk else FactGraph(fs)
    pat = QueryPattern(const, path, Var("x")) if subject_end else QueryPattern(Var("x"), path, const)
    q = Query((pat,))
    for limits in LIMITS:
        got = evaluate(q, g, (), limits=limits)
        want = general(q, g, (), limits=limits)
        assert dump(got) == dump(want), limits
        if limits.max_nodes is None and any(f.confidence < 1 for f in fs if f.relation == "r") and \
                any(const in (f.subject, f.object) for f in fs) and not isinstance(path, PathInv):
            assert type(got.answers).__name__ == "BulkAnswers"


def test_best_walks_hand_computed():
    # a → b @0.5 directly, or a → c → b at 1 × 0.9 = 0.9; b → a closes a cycle: a+ reaches a at 0.9
    fs = [Fact("a", "r", "b", 0.5), Fact("a", "r", "c"), Fact("c", "r", "b", 0.9), Fact("b", "r", "a")]
    res = evaluate(Query((QueryPattern("a", PathRepeat(PathRel("r"), 1, None), Var("x")),)), FactGraph(fs), ())
    assert [(a.bindings["x"], a.score) for a in res.answers] == [("c", 1.0), ("a", 0.9), ("b", 0.9)]
    assert [str(p.conclusion) for p in res.answers[2].proof.premises] == ["a r c", "c r b"]


def test_array_answers_compare_as_the_list_of_their_answers():
    """Two evaluations of the same question are equal however their answers are held (arrays or a list)."""
    from thinkingdb.engine.graph import FactGraph
    from thinkingdb.engine.query import evaluate
    from thinkingdb.engine.rules import compile_declarations
    from thinkingdb.language import parse_query
    from thinkingdb.model import Declaration, Fact
    g = FactGraph([Fact("a", "r", "b"), Fact("b", "r", "c")])
    rules = compile_declarations([Declaration("r", "transitive")])
    both = parse_query("? ?x r ?y.")
    one = parse_query("? a r ?y.")
    first, again = evaluate(both, g, rules).answers, evaluate(both, g, rules).answers
    assert first is not again and first == again and first == list(again)
    assert [(a.bindings["x"], a.bindings["y"]) for a in first] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert evaluate(one, g, rules).answers == evaluate(one, g, rules).answers
    assert first != evaluate(one, g, rules).answers and first != "abc"


def test_a_small_reach_is_left_to_the_general_evaluator(monkeypatch):
    """A walk over asserted facts that reaches at most SMALL_REACH symbols is answered by the general
    evaluator (a list of answers: no numpy), a larger one as arrays, each equal to the general
    evaluator's answers. Under a max_rows the general evaluator could hit, the arrays answer as before
    the hand-off existed (they do not cut at max_rows, the general evaluator does: "rows")."""
    monkeypatch.setattr(bulk, "SMALL_REACH", 10)
    for n, conf in ((3, 1.0), (3, 0.5), (40, 1.0), (40, 0.5)):   # n0 r n1 ... n{n-1} r n{n}, and back
        g = FactGraph([Fact(f"n{i}", "r", f"n{i + 1}", conf) for i in range(n)] + [Fact(f"n{n}", "r", "n0")])
        for path in (PathRepeat(PathRel("r"), 1, None), PathRepeat(PathRel("r"), 0, None)):
            for pattern in (QueryPattern("n0", path, Var("x")), QueryPattern(Var("x"), path, f"n{n}")):
                q = Query((pattern,))
                for limits, arrays in ((Limits(), n > 10), (Limits(max_rows=11), True), (Limits(max_rows=12), n > 10)):
                    res = evaluate(q, g, (), limits=limits)
                    assert isinstance(res.answers, bulk.BulkAnswers) is arrays, (n, conf, pattern, limits)
                    assert len(res.answers) == n + 1 and res.truncated is None   # every symbol of the cycle
                    if limits.max_rows is None or limits.max_rows > n + 1:
                        assert dump(res) == dump(general(q, g, (), limits=limits))
                    else:
                        assert dump(res) == dump(evaluate(q, g, (), limits=Limits()))
