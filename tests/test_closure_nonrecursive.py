"""The one-round fast path against the semi-naive engine it bypasses, in both executors: numpy
(thinkingdb/engine/nonrecursive.py) and the pure-Python join for small inputs (oneround.run_small).

Random small graphs (few symbols: self-loops, duplicate scores and ties are common; some facts of
the head relations are asserted) and random two-premise rules in every argument orientation; the
same closure is run with the fast path and with it disabled, and everything a caller can read is
compared: derived keys, scores, depths, proofs (premises), truncation, and query answers."""

from __future__ import annotations

import gc
import random
import weakref
from contextlib import contextmanager
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thinkingdb.engine import nonrecursive, oneround, plan
from thinkingdb.engine.closure import closure
from thinkingdb.engine.graph import FactGraph
from thinkingdb.model import (
    Atom,
    Fact,
    Limits,
    PathRel,
    Query,
    QueryPattern,
    Rule,
    Triple,
    Var,
)
from thinkingdb.engine.query import evaluate

SYMS = ("a", "b", "c", "d", "e", "f")
BODY = ("r", "s")
HEADS = ("h", "k")
CONFS = (1.0, 0.9, 0.7, 0.5, 0.3, 0.1)   # products of these round differently by association
X, Y, Z = Var("x"), Var("y"), Var("z")


@pytest.fixture(autouse=True, scope="module", params=["one-round", "one-round-python"])
def join(request):
    """Every test runs with each executor of the one-round join: the numpy one (no input is small)
    and the pure-Python one (every input is)."""
    with mock.patch.object(oneround, "SMALL_JOIN", -1 if request.param == "one-round" else 10**9):
        yield request.param


@contextmanager
def generic():
    """Disable the fast path and the columnar engine: closure() then runs the semi-naive engine."""
    with mock.patch.object(oneround, "one_round_plan", lambda *a, **k: None), \
            mock.patch.object(plan, "unsupported", lambda *a, **k: "test"):
        yield


@st.composite
def rule2(draw, idx):
    p = (Y, X) if draw(st.booleans()) else (X, Y)
    q = (Y, Z) if draw(st.booleans()) else (Z, Y)
    head = (X, Z) if draw(st.booleans()) else (Z, X)
    return Rule(f"rule{draw(st.integers(0, 3))}_{idx}",
                (Atom(p[0], draw(st.sampled_from(BODY)), p[1]), Atom(q[0], draw(st.sampled_from(BODY)), q[1])),
                Atom(head[0], draw(st.sampled_from(HEADS)), head[1]), draw(st.sampled_from((1.0, 0.95, 0.7, 0.3))))


@st.composite
def cases(draw):
    fs = draw(st.lists(st.builds(Fact, st.sampled_from(SYMS), st.sampled_from(BODY + HEADS[:1]),
                                 st.sampled_from(SYMS), st.sampled_from(CONFS)), min_size=1, max_size=24))
    n = draw(st.integers(1, 3))
    rules = tuple(draw(rule2(i)) for i in range(n))
    return fs, rules


def snapshot(res):
    out = {}
    for t, proof in res.derived.items():
        out[t] = (res.score(t), res.depth(t), proof.to_json())
    return res.truncated, out


def run_both(fs, rules, **kw):
    g = FactGraph(fs)
    fast = closure(g, rules, **kw)
    with generic():
        slow = closure(g, rules, **kw)
    return g, fast, slow


@settings(max_examples=300, deadline=None)
@given(cases())
def test_fast_path_equals_semi_naive(join, case):
    fs, rules = case
    g, fast, slow = run_both(fs, rules)
    assert fast.stats.engine == join and slow.stats.engine == "semi-naive"
    assert snapshot(fast) == snapshot(slow)
    assert set(fast.derived_keys()) == set(slow.derived_keys())
    assert fast.derived_count == slow.derived_count
    ids = fast.ids
    for s in range(len(g._syms)):
        for rel in BODY + HEADS:
            r = ids.rel(rel)
            assert fast.out(r, s) == slow.out(r, s)
            assert fast.inn(r, s) == slow.inn(r, s)
    for rel in HEADS:
        r = ids.rel(rel)
        assert fast.subjects(r) == slow.subjects(r)
    with mock.patch.object(nonrecursive, "CHUNK", 3):   # many chunks, subjects split between them
        assert snapshot(closure(g, rules)) == snapshot(fast)
    # insertion order does not matter
    shuffled = list(fs)
    random.Random(len(fs)).shuffle(shuffled)
    again = closure(FactGraph(shuffled), rules)
    assert snapshot(again) == snapshot(fast)


@settings(max_examples=150, deadline=None)
@given(cases(), st.integers(0, 12), st.integers(1, 7), st.integers(1, 3))
def test_bounds_agree(join, case, max_derived, max_nodes, max_depth):
    fs, rules = case
    for limits in (Limits(max_derived=max_derived), Limits(max_nodes=max_nodes), Limits(max_depth=max_depth),
                   Limits(max_derived=max_derived, max_nodes=max_nodes)):
        _, fast, slow = run_both(fs, rules, limits=limits)
        assert fast.stats.engine == join
        assert snapshot(fast) == snapshot(slow), limits
    _, fast, slow = run_both(fs, rules, seeds=["a"], limits=Limits(max_nodes=max_nodes))
    assert fast.stats.engine == join
    assert snapshot(fast) == snapshot(slow)


def answers(qr):
    def js(p):
        return [x.to_json() for x in p] if isinstance(p, tuple) else p.to_json()
    return qr.truncated, [(a.bindings, a.score, js(a.proof)) for a in qr.answers]


@settings(max_examples=150, deadline=None)
@given(cases(), st.sampled_from(HEADS), st.sampled_from(SYMS), st.sampled_from(("best", "noisy-or")))   # noisy-or keeps alternatives: falls back
def test_query_answers_agree(case, head, sym, aggregate):
    fs, rules = case
    g = FactGraph(fs)
    queries = [Query((QueryPattern(X, PathRel(head), Z),)),
               Query((QueryPattern(sym, PathRel(head), Z),)),
               Query((QueryPattern(X, PathRel(head), sym),)),
               Query((QueryPattern(X, PathRel(head), Y), QueryPattern(Y, PathRel("r"), Z)))]
    for q in queries:
        fast = evaluate(q, g, rules, aggregate=aggregate)
        with generic():
            slow = evaluate(q, g, rules, aggregate=aggregate)
        assert answers(fast) == answers(slow)


def test_fast_path_taken_and_bounds_fall_back(join):
    fs = [Fact("a", "r", "b", 0.5), Fact("b", "r", "c", 0.5), Fact("a", "r", "c"), Fact("c", "r", "c")]
    rule = Rule("compose", (Atom(X, "r", Y), Atom(Y, "r", Z)), Atom(X, "r2", Z), 0.9)
    res = closure(FactGraph(fs), [rule])
    assert res.stats.engine == join
    assert res.score(Triple("a", "r2", "c")) == 1.0 * 0.9   # via c r c (1.0) beats via b (0.25)
    assert [p.conclusion.object for p in res.proof(Triple("a", "r2", "c")).premises] == ["c", "c"]
    assert res.depth(Triple("a", "r2", "c")) == 1
    assert closure(FactGraph(fs), [rule], alternatives=1).stats.engine == "semi-naive"
    assert closure(FactGraph(fs), [rule], limits=Limits(max_depth=0)).stats.engine == "columnar"
    recursive = Rule("t", (Atom(X, "r", Y), Atom(Y, "r", Z)), Atom(X, "r", Z), 0.9)
    assert closure(FactGraph(fs), [rule, recursive]).stats.engine == "columnar"


def test_timeout_drops_the_round(monkeypatch, join):
    fs = [Fact(f"n{i}", "r", f"n{i + 1}") for i in range(50)]
    rule = Rule("compose", (Atom(X, "r", Y), Atom(Y, "r", Z)), Atom(X, "r2", Z))
    clock = iter(range(10**6))
    monkeypatch.setattr(nonrecursive.time, "perf_counter", lambda: float(next(clock)))   # 1 s a call
    res = closure(FactGraph(fs), [rule], limits=Limits(timeout_ms=1))
    assert res.stats.engine == join
    assert res.truncated == "time" and res.derived_count == 0


def test_chunked_enumeration_matches_one_chunk(monkeypatch):
    rnd = random.Random(3)
    hubs = [f"h{i}" for i in range(3)]
    fs = [Fact(f"n{rnd.randrange(40)}", "r", rnd.choice(hubs + [f"n{rnd.randrange(40)}"]), rnd.choice(CONFS))
          for _ in range(300)]
    fs += [Fact(h, "r", f"n{rnd.randrange(40)}", rnd.choice(CONFS)) for h in hubs for _ in range(30)]
    rules = [Rule("compose", (Atom(X, "r", Y), Atom(Y, "r", Z)), Atom(X, "r2", Z), 0.9),
             Rule("cousin", (Atom(X, "r", Y), Atom(Z, "r", Y)), Atom(X, "r2", Z), 0.5)]
    g = FactGraph(fs)
    whole = snapshot(closure(g, rules))
    monkeypatch.setattr(nonrecursive, "CHUNK", 7)
    assert snapshot(closure(g, rules)) == whole
    with generic():
        assert snapshot(closure(g, rules)) == whole


def test_result_is_freed_without_the_cycle_collector(join):
    fs = [Fact("a", "r", "b"), Fact("b", "r", "c")]
    rule = Rule("compose", (Atom(X, "r", Y), Atom(Y, "r", Z)), Atom(X, "r2", Z))
    gc.disable()
    try:
        res = closure(FactGraph(fs), [rule])
        engine = res.stats.engine
        starts = res._store.d_in.get(res.ids.rel("r2"), [])   # outside an assert: pytest keeps its temporaries
        ref = weakref.ref(res)
        del res
        assert ref() is None   # no reference cycle: big results go as soon as they are dropped
        assert engine == join and list(starts) == [FactGraph(fs).symbol_id("c")]
    finally:
        gc.enable()


def test_the_fast_path_indexes_more_rules_than_a_short_integer_holds(join):
    # 32,769 join rules: the last one's index does not fit an int16 (found in review: it crashed)
    from thinkingdb.engine.closure import closure
    from thinkingdb.engine.graph import FactGraph
    from thinkingdb.model import Atom, Fact, Rule, Var
    x, y, z = Var("x"), Var("y"), Var("z")
    fs = [Fact("a", "r", "b"), Fact("b", "r", "c"), Fact("a", "s", "b"), Fact("b", "s", "c")]
    filler = [Rule(f"f{i:05d}", (Atom(x, "s", y), Atom(y, "s", z)), Atom(x, "h", z)) for i in range(32768)]
    last = Rule("z_last", (Atom(x, "r", y), Atom(y, "r", z)), Atom(x, "target", z), 0.5)
    res = closure(FactGraph(fs), filler + [last])
    assert res.stats.engine == join and res.derived_count == 2
    assert res.proof(Triple("a", "target", "c")).rule == "z_last"
    assert res.proof(Triple("a", "h", "c")).rule == "f00000"   # equal scores: the first name wins


@settings(max_examples=100, deadline=None)
@given(cases(), st.integers(0, 12), st.integers(1, 7))
def test_the_small_input_threshold_switches_executors_not_results(case, max_derived, max_nodes):
    """At exactly SMALL_JOIN (facts walked plus candidates) the pure-Python join runs, one less and
    numpy's does; both give the semi-naive engine's facts, scores, depths, proofs and bound reports."""
    fs, rules = case
    g = FactGraph(fs)
    shapes = oneround.one_round_plan(tuple(rules), Limits(), 0)
    work = oneround.join_work(g, shapes, None, 10**9)
    walked = []   # the join walks q when only p has ?y as its subject, else p
    for p, q in (rule.premises for rule in rules):
        y = (set(p.variables()) & set(q.variables())).pop()
        rid = g.relation_id((q if p.subject == y and q.subject != y else p).relation)
        walked.append(0 if rid is None else g.relation_size(rid))
    assert work == sum(walked) + sum(
        1 for rule in rules for _ in evaluate(Query(tuple(
            QueryPattern(p.subject, PathRel(p.relation), p.object) for p in rule.premises)), g, ()).answers)
    for limits in (Limits(), Limits(max_derived=max_derived), Limits(max_nodes=max_nodes)):
        with generic():
            slow = snapshot(closure(g, rules, limits=limits))
        got = {}
        for cap in (work, work - 1):
            with mock.patch.object(oneround, "SMALL_JOIN", cap):
                res = closure(g, rules, limits=limits)
            got[res.stats.engine] = snapshot(res)
        if limits.max_nodes is None:   # (a node bound counts the candidates in its scope only)
            assert set(got) == {"one-round-python", "one-round"}
        assert all(v == slow for v in got.values()), limits
