"""Conjunctions over closed relations in pure Python (``thinkingdb.engine.smallconj``) against the array
path (``thinkingdb.engine.conj``) and the full closure, on both sides of ``smallconj.SMALL_CONJ`` (the
suite turns the hand-off off: tests/conftest.py; here it is turned on where it is tested): on generated
graphs with cycles, a transitive declaration fed by a subrelation (and a second closed relation ``q``)
and a relation no rule derives (its facts with confidences below 1), in memory and memory-mapped,
conjunctions of two or three patterns over ``r``, ``^r``, ``r+``, ``r*``, ``s``, ``s+``, ``t``, ``^t``,
``t+``, ``(^t)*`` (and ``q``, ``^q``, ``q+``) with constants and variables at either end, best and noisy-or, under every Limits setting: the same answers, scores,
order, proofs, ``truncated`` and stats; the ``max_derived`` count by hand; a cold conjunction with the
default rules loads no numpy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from thinkingdb.engine import smallconj
from thinkingdb.engine.closure import closure
from thinkingdb.engine.graph import FactGraph
from thinkingdb.engine.query import evaluate
from thinkingdb.engine.reach import SingleSourceResult
from thinkingdb.engine.rules import compile_declarations
from thinkingdb.engine.stream import answer_stream
from thinkingdb.model import Declaration, Fact, Limits, PathInv, PathRel, PathRepeat, Query, QueryPattern, Var

from strategies import SYMBOLS
from test_bulk import mapped
from test_conj import PATHS, graphs

RULES = compile_declarations([Declaration("r", "transitive"), Declaration("s", "subrelation_of", "r")])
TERMS = st.sampled_from((Var("x"), Var("y"), Var("z"), Var("x"), Var("y")) + SYMBOLS[:3])
LIMITS = [Limits(), Limits(max_derived=2_000_000, timeout_ms=30_000, max_rows=1_000_000), Limits(max_derived=0),
          Limits(max_derived=1), Limits(max_derived=4), Limits(max_derived=10_000), Limits(max_nodes=3),
          Limits(max_depth=1), Limits(max_rows=2)]
ROOT = Path(__file__).resolve().parent.parent


@st.composite
def conjunctions(draw):
    """Two or three patterns; most often the first has a constant end and the others share its variables
    (the shapes the array path plans), else any."""
    if draw(st.integers(0, 3)) == 0:
        return draw(st.lists(st.builds(QueryPattern, TERMS, st.sampled_from(PATHS), TERMS), min_size=2, max_size=3))
    c, path = draw(st.sampled_from(SYMBOLS[:3])), draw(st.sampled_from(PATHS))
    first = QueryPattern(c, path, Var("x")) if draw(st.booleans()) else QueryPattern(Var("x"), path, c)
    later = st.sampled_from((Var("x"), Var("x"), Var("y"), Var("z")) + SYMBOLS[:3])
    rest = st.lists(st.builds(QueryPattern, later, st.sampled_from(PATHS), later), min_size=1, max_size=2)
    return [first] + draw(rest)


def run(budget, fn, *args, **kw):
    keep = smallconj.SMALL_CONJ
    smallconj.SMALL_CONJ = budget
    try:
        return fn(*args, **kw)
    finally:
        smallconj.SMALL_CONJ = keep


def summary(res):
    stats = None if res.stats is None else res.stats.replace(elapsed_ms=0.0)
    return ([a.to_json() for a in res.answers], [a.bindings for a in res.answers], res.truncated, res.more,
            stats, [_proof(a.proof) for a in res.answers])


def _proof(p):
    """A proof as JSON; noisy-or's answers hold a tuple of them."""
    return [x.to_json() for x in p] if isinstance(p, tuple) else None if p is None else p.to_json()


@settings(max_examples=200, deadline=None)
@given(graphs(), conjunctions(), st.sampled_from(["best", "noisy-or"]), st.booleans(), st.sampled_from([10_000, 12, 1]))
def test_the_pure_python_conjunction_equals_the_array_one(tmp_path_factory, fs, patterns, aggregate, on_disk, budget):
    # budget 10,000: the pure-Python side; 12: either side, by the work the question needs; 1: handed off
    g = mapped(fs, tmp_path_factory.mktemp("g")) if on_disk else FactGraph(fs)
    q = Query(tuple(patterns))
    for limits in LIMITS:
        got = run(budget, evaluate, q, g, RULES, limits=limits, aggregate=aggregate, k=1)
        want = run(0, evaluate, q, g, RULES, limits=limits, aggregate=aggregate, k=1)
        assert summary(got) == summary(want), limits
        assert list(got.answers[1:]) == list(want.answers[1:])     # slices, as the CLI's --limit takes them
    full = evaluate(q, FactGraph(fs), RULES, aggregate=aggregate, k=1, goal_directed=False)   # the oracle
    got = run(budget, evaluate, q, g, RULES, aggregate=aggregate, k=1)
    assert [a.to_json() for a in got.answers] == [a.to_json() for a in full.answers] and got.truncated == full.truncated
    streamed = run(budget, answer_stream, q, g, RULES, aggregate=aggregate, k=1)
    keys = sorted(tuple(a.bindings.items()) for a in full.answers)
    assert sorted(tuple(a.bindings.items()) for a in streamed) == keys


def test_the_pure_python_conjunction_runs_where_it_should():
    # a → b → c → a, c → d; c t d @0.5; `a r ?x, ?x t ?y`: a reaches a, b, c, d; only c has a t fact
    fs = [Fact("a", "r", "b"), Fact("b", "r", "c"), Fact("c", "r", "a"), Fact("c", "r", "d"), Fact("c", "t", "d", 0.5)]
    g = FactGraph(fs)
    q = Query((QueryPattern("a", PathRel("r"), Var("x")), QueryPattern(Var("x"), PathRel("t"), Var("y"))))
    res = run(10_000, closure, g, RULES, goals=[q], limits=Limits())
    assert isinstance(res, smallconj.SmallConjResult) and res.table.n == 1
    # a's set {a, b, c, d} less the asserted a r b: 3 derived facts looked at; symbols a, b, c, d
    assert (res.stats.engine, res.stats.derived, res.stats.nodes) == ("transitive", 3, 4)
    assert sorted(str(t) for t in res.derived) == ["a r a", "a r c", "a r d"]
    ans = run(10_000, evaluate, q, g, RULES)
    assert type(ans.answers).__name__ == "SmallTableAnswers"
    assert [(a.bindings, a.score) for a in ans.answers] == [({"x": "c", "y": "d"}, 0.5)]
    assert [str(p.conclusion) for p in ans.answers[0].proof.premises] == ["a r c", "c t d"]
    # the work: a's set (4) + c's t row (1) + rows (4, then 1) = 10; a budget of 9 hands it to the arrays
    assert isinstance(run(10, closure, g, RULES, goals=[q], limits=Limits()), smallconj.SmallConjResult)
    over = run(9, closure, g, RULES, goals=[q], limits=Limits())
    assert isinstance(over, SingleSourceResult) and over.table is not None
    assert summary(run(9, evaluate, q, g, RULES)) == summary(ans)
    for other in (run(0, closure, g, RULES, goals=[q], limits=Limits()),            # turned off
                  run(10_000, closure, g, RULES, goals=[q], limits=Limits(max_nodes=100)),   # a node bound
                  run(10_000, closure, FactGraph(fs + [Fact("a", "r", "e", 0.5)]), RULES, goals=[q])):  # r below 1
        assert not isinstance(other, smallconj.SmallConjResult)
    # a best walk: `a r ?x, ?x t+ ?y` with c t d @0.5, d t e @0.5, c t e @0.2: c reaches d at 0.5, e at 0.25
    walks = FactGraph(fs + [Fact("d", "t", "e", 0.5), Fact("c", "t", "e", 0.2)])
    best = Query((QueryPattern("a", PathRel("r"), Var("x")),
                  QueryPattern(Var("x"), PathRepeat(PathRel("t"), 1, None), Var("y"))))
    assert isinstance(run(10_000, closure, walks, RULES, goals=[best]), smallconj.SmallConjResult)
    got = run(10_000, evaluate, best, walks, RULES)
    assert [(a.bindings["x"], a.bindings["y"], a.score) for a in got.answers] == [("c", "d", 0.5), ("d", "e", 0.5),
                                                                                   ("c", "e", 0.25)]
    assert [str(p.conclusion) for p in got.answers[2].proof.premises[1].premises] == ["c t d", "d t e"]
    assert summary(got) == summary(run(0, evaluate, best, walks, RULES))


def test_max_derived_stops_at_a_start_counted_by_hand():
    # test_conj's count, on the pure-Python side. a → b → c → a, c → d. `a r ?x` looks at 3 derived
    # facts (a r a, a r c, a r d); then per x in canonical order: a (counted already), b (+3: b r b,
    # b r a, b r d), c (+2: c r b, c r c), d (+0)
    fs = [Fact("a", "r", "b"), Fact("b", "r", "c"), Fact("c", "r", "a"), Fact("c", "r", "d")]
    g = FactGraph(fs)
    q = Query((QueryPattern("a", PathRel("r"), Var("x")), QueryPattern(Var("x"), PathRel("r"), Var("y"))))
    full = {tuple(a.bindings.items()): a.to_json() for a in evaluate(q, g, RULES, goal_directed=False).answers}
    for cap, xs, cut, derived in ((8, "abc", None, 8), (7, "ab", "derived", 6), (3, "a", "derived", 3),
                                  (2, "", "derived", 0)):
        res = run(10_000, closure, g, RULES, goals=[q], limits=Limits(max_derived=cap))
        assert isinstance(res, smallconj.SmallConjResult)
        assert (res.truncated, res.stats.derived) == (cut, derived), cap
        got = run(10_000, evaluate, q, g, RULES, limits=Limits(max_derived=cap))
        assert got.truncated == cut and sorted({a.bindings["x"] for a in got.answers}) == list(xs), cap
        assert all(a.to_json() == full[tuple(a.bindings.items())] for a in got.answers)


def test_a_relation_read_both_ways_counts_each_fact_once():
    # test_conj's hand count: `a r ?x, ?y r ?x` reads r forward from a (a r a, a r c, a r d: 3), then
    # backward from each x: a +1 (b r a), b +2 (b r b, c r b), c +1 (c r c), d +1 (b r d): 8 in all
    fs = [Fact("a", "r", "b"), Fact("b", "r", "c"), Fact("c", "r", "a"), Fact("c", "r", "d")]
    g = FactGraph(fs)
    q = Query((QueryPattern("a", PathRel("r"), Var("x")), QueryPattern(Var("y"), PathRel("r"), Var("x"))))
    for cap, want in ((8, 8), (7, 7), (6, 6), (5, 4), (4, 4), (3, 3), (2, 0)):
        res = run(10_000, closure, g, RULES, goals=[q], limits=Limits(max_derived=cap))
        assert isinstance(res, smallconj.SmallConjResult)
        assert res.stats.derived == want and res.truncated == (None if cap == 8 else "derived"), cap
    assert len(list(run(10_000, closure, g, RULES, goals=[q]).derived)) == 8


_COLD = """
import json, sys
from thinkingdb.api import KnowledgeBase
with KnowledgeBase(sys.argv[1]) as kb:
    res = kb.query("? a depends_on ?x, ?x depends_on ?y.")
    found = [sorted((a.bindings["x"], a.bindings["y"]) for a in res.answers),
             [str(p.conclusion) for p in res.answers[0].proof.premises], res.truncated]
print(json.dumps({"found": found, "modules": sorted(sys.modules)}))
"""


def test_a_cold_small_conjunction_loads_no_numpy(tmp_path):
    from thinkingdb.api import KnowledgeBase
    path = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(path) as kb:
        kb.add_facts([("a", "depends_on", "b"), ("b", "depends_on", "c"), ("c", "depends_on", "d")])
        len(kb.graph)
    out = subprocess.run([sys.executable, "-c", _COLD, path], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    # the default rules make depends_on transitive: a reaches b, c, d; b reaches c, d; c reaches d
    assert got["found"] == [[["b", "c"], ["b", "d"], ["c", "d"]], ["a depends_on b", "b depends_on c"], None]
    mods = set(got["modules"])
    assert "thinkingdb.engine.smallconj" in mods                  # the oracle reads real imports
    # nor the array searches, the demand, the other engines' dispatch (plan, the reference engine)
    assert not {m for m in mods if m.split(".")[0] == "numpy" or m in SINGLE_SOURCE_FORBIDDEN}


SINGLE_SOURCE_FORBIDDEN = {f"thinkingdb.engine.{m}" for m in ("reach", "bfs", "demand", "plan", "seminaive",
                                                               "oneround", "joins", "columnar")}


RULES_TWO = compile_declarations([Declaration("r", "transitive"), Declaration("s", "subrelation_of", "r"),
                                  Declaration("q", "transitive")])
PATHS_TWO = PATHS + [PathRel("q"), PathInv(PathRel("q")), PathRepeat(PathRel("q"), 1, None)]


@st.composite
def two_closed(draw):
    """Graphs over r (s declared into it) and q, both closed, and t (confidences below 1); conjunctions
    over both, most often anchored at a constant."""
    fs = draw(st.lists(st.builds(Fact, st.sampled_from(SYMBOLS), st.sampled_from(("r", "q", "q", "s", "t")),
                                 st.sampled_from(SYMBOLS), st.sampled_from((1.0, 0.5))), min_size=4, max_size=24))
    fs = [f if f.relation == "t" else Fact(f.subject, f.relation, f.object, 1.0) for f in fs]
    c, path = draw(st.sampled_from(SYMBOLS[:3])), draw(st.sampled_from(PATHS_TWO))
    later = st.sampled_from((Var("x"), Var("x"), Var("y"), Var("z")) + SYMBOLS[:3])
    rest = st.lists(st.builds(QueryPattern, later, st.sampled_from(PATHS_TWO), later), min_size=1, max_size=2)
    return fs, [QueryPattern(c, path, Var("x"))] + draw(rest)


@settings(max_examples=150, deadline=None)
@given(two_closed(), st.sampled_from(["best", "noisy-or"]), st.booleans(), st.sampled_from([10_000, 12]))
def test_two_closed_relations_equal_the_array_path_and_the_full_closure(tmp_path_factory, case, aggregate, on_disk,
                                                                        budget):
    fs, patterns = case
    g = mapped(fs, tmp_path_factory.mktemp("g")) if on_disk else FactGraph(fs)
    q = Query(tuple(patterns))
    for limits in LIMITS:
        got = run(budget, evaluate, q, g, RULES_TWO, limits=limits, aggregate=aggregate, k=1)
        want = run(0, evaluate, q, g, RULES_TWO, limits=limits, aggregate=aggregate, k=1)
        assert summary(got) == summary(want), limits
    full = evaluate(q, FactGraph(fs), RULES_TWO, aggregate=aggregate, k=1, goal_directed=False)   # the oracle
    got = run(budget, evaluate, q, g, RULES_TWO, aggregate=aggregate, k=1)
    assert [a.to_json() for a in got.answers] == [a.to_json() for a in full.answers] and got.truncated == full.truncated


def test_two_closed_relations_run_in_pure_python():
    # a is_a b is_a c, b part_of d part_of e, both transitive: `a is_a ?x, ?x part_of ?y`: x = b (d, e)
    g = FactGraph([Fact("a", "is_a", "b"), Fact("b", "is_a", "c"), Fact("b", "part_of", "d"), Fact("d", "part_of", "e")])
    rules = compile_declarations([Declaration("is_a", "transitive"), Declaration("part_of", "transitive")])
    q = Query((QueryPattern("a", PathRel("is_a"), Var("x")), QueryPattern(Var("x"), PathRel("part_of"), Var("y"))))
    res = run(10_000, closure, g, rules, goals=[q])
    assert isinstance(res, smallconj.SmallConjResult) and len(res._rels) == 2
    ans = run(10_000, evaluate, q, g, rules)
    assert [(a.bindings["x"], a.bindings["y"]) for a in ans.answers] == [("b", "d"), ("b", "e")]
    assert [str(p.conclusion) for p in ans.answers[1].proof.premises] == ["a is_a b", "b part_of e"]
    # a is_a c (derived) and b part_of e (derived): looked at from a's and b's sets
    assert (res.stats.derived, sorted(str(t) for t in res.derived)) == (2, ["a is_a c", "b part_of e"])


def test_t_plus_and_t_star_from_one_start_are_two_searches():
    # '?x ^t* a' runs first (from the constant) and finds a itself at 1.0 (no step); '?x t+ ?x' from
    # the same start must walk at least one step: a t a at 0.5 (they shared one memo: the answer scored 1.0)
    x = Var("x")
    fs = [Fact("a", "r", "a"), Fact("a", "t", "a", 0.5)]
    q = Query((QueryPattern(x, PathRel("r"), x), QueryPattern(x, PathRepeat(PathRel("t"), 1, None), x),
               QueryPattern(x, PathRepeat(PathInv(PathRel("t")), 0, None), "a")))
    got = run(10_000, evaluate, q, FactGraph(fs), RULES, limits=Limits())
    assert [(a.bindings, a.score) for a in got.answers] == [({"x": "a"}, 0.5)]
