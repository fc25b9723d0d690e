"""Bounds kept inside a round, and inputs that used to take quadratic time (issue 21)."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings, strategies as st

from thinkingdb.engine.closure import closure
from thinkingdb.engine.graph import FactGraph
from thinkingdb.engine.paths import MAX_STATES, PathWalk, _NFA
from thinkingdb.engine.results import GraphView
from thinkingdb.errors import ParseError, QueryError
from thinkingdb.language import compile_source
from thinkingdb.model import Atom, Fact, Limits, PathAlt, PathRel, PathRepeat, Rule, Var
from thinkingdb.store.extract import extract, split_sentences

X, Y = Var("x"), Var("y")
CART = Rule("cart", (Atom(X, "isa", "thing"), Atom(Y, "isa", "thing")), Atom(X, "near", Y))


def test_max_derived_inside_a_round_keeps_the_canonical_first(monkeypatch):
    """A cartesian rule finds n^2 facts in one round; with max_derived the round's pending facts stay
    at the cap, and the facts kept are the canonically first ones (the oracle: all pairs, sorted)."""
    n, cap = 60, 37
    g = FactGraph([Fact(f"a{i:02d}", "isa", "thing") for i in range(n)])
    res = closure(g, [CART], limits=Limits(max_derived=cap), engine="reference")
    assert res.truncated == "derived" and res.derived_count == cap
    got = sorted((t.subject, t.object) for t in (res.ids.triple(k) for k in res.derived_keys()))
    oracle = sorted((f"a{i:02d}", f"a{j:02d}") for i in range(n) for j in range(n))
    ranked = sorted(oracle, key=lambda p: (res.ids.sym_rank(res.ids.sym(p[0])), res.ids.sym_rank(res.ids.sym(p[1]))))
    assert got == sorted(ranked[:cap])
    peak = []
    import heapq
    real_push = heapq.heappush

    def watching(heap, item):
        real_push(heap, item)
        peak.append(len(heap))
    monkeypatch.setattr(heapq, "heappush", watching)
    closure(g, [CART], limits=Limits(max_derived=cap), engine="reference")
    assert peak and max(peak) <= cap + 1          # never n^2 pending facts in memory


@settings(max_examples=40, deadline=None)
@given(edges=st.lists(st.tuples(st.integers(0, 5), st.sampled_from("ab"), st.integers(0, 5)), max_size=14),
       lo=st.integers(0, 3), extra=st.integers(1, 80))
def test_huge_repetition_bound_is_the_unbounded_one(edges, lo, extra):
    """{m,n} with n far beyond the graph's size has the answers, scores and steps of the automaton
    built in full (the oracle: the same walk with no cap on the repetition)."""
    g = FactGraph([Fact(f"n{s}", r, f"n{o}", 0.5 + 0.1 * ((s + o) % 5)) for s, r, o in edges] + [Fact("n0", "a", "n0")])
    view = GraphView(g)
    path = PathRepeat(PathAlt((PathRel("a"), PathRel("b"))), lo, lo + extra)
    capped = PathWalk(view, path)
    full = PathWalk(view, path)
    full.nfa = _NFA(path, view.ids.find_rel, None)
    start = view.ids.find_sym("n0")
    a, b = capped.run(start), full.run(start)
    assert {k: (v[0], len(v[1]())) for k, v in a.items()} == {k: (v[0], len(v[1]())) for k, v in b.items()}


def test_a_path_too_large_to_build_is_refused():
    g = FactGraph([Fact("a", "r", "b"), Fact("a", "s", "b")])
    view = GraphView(g)
    walk = PathWalk(view, PathRepeat(PathAlt((PathRel("r"), PathRel("s"))), 2, 10**9))   # capped: fine
    assert set(walk.run(view.ids.find_sym("a"))) == set()
    with pytest.raises(QueryError, match="automaton states"):
        PathWalk(view, PathRepeat(PathAlt((PathRel("r"), PathRel("s"))), MAX_STATES, None))


def _seconds(fn, *args) -> float:
    """CPU seconds of this process (other processes on a loaded machine do not count), best of 3."""
    best = None
    fn(*args)                      # warm up (regex compilation, caches)
    for _ in range(3):
        t0 = time.process_time()
        fn(*args)
        took = time.process_time() - t0
        best = took if best is None else min(best, took)
    return best


@pytest.mark.parametrize("make, run", [
    (lambda n: " ".join("See J. Smith uses R." for _ in range(n)), lambda t: list(extract(t))),   # initials
    (lambda n: " ".join("Dr. Who uses the U.S. Army radios" for _ in range(n)), split_sentences),
])
def test_long_sentences_take_linear_time(make, run):
    small, big = make(1500), make(6000)
    ratio = _seconds(run, big) / max(_seconds(run, small), 1e-4)
    assert ratio < 9, ratio          # 4x the text: ~4x the time (quadratic was ~16x)


def test_many_bad_statements_take_linear_time():
    def bad(n):
        try:
            compile_source("".join(f"a{i} r .\n" for i in range(n)), "bad.tdb")
        except ParseError as exc:
            assert len(exc.diagnostics) == n
    ratio = _seconds(bad, 1600) / max(_seconds(bad, 400), 1e-4)
    assert ratio < 9, ratio
