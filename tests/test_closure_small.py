"""Small inputs close without numpy: the engine that runs says so in stats, a fresh process that
closes a small input (or answers a question on a small store, unless its rules are a pure transitive
closure: the single-source search builds its own proofs, in numpy) never imports numpy, ``preload``
imports only what that run will use, and the reference engine run first on small inputs gives what
the columnar engine and the fast paths give, whichever side of the thresholds an input falls.
(tests/conftest.py turns that first try off for the rest of the suite: here it is set per test.)"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from strategies import facts
from test_closure_columnar import BOUNDS, programs, readout
from thinkingdb.engine import oneround, seminaive
from thinkingdb.engine.closure import closure, preload
from thinkingdb.engine.graph import FactGraph
from thinkingdb.engine.plan import unsupported
from thinkingdb.engine.query import evaluate
from thinkingdb.engine.rules import fast_path_plan
from thinkingdb.model import Atom, Fact, Limits, PathRel, Query, QueryPattern, Rule, Triple, Var

X, Y, Z = Var("x"), Var("y"), Var("z")
COMPOSE = (Rule("compose", (Atom(X, "r", Y), Atom(Y, "r", Z)), Atom(X, "r2", Z), 0.5),)


def fresh(code: str) -> dict:
    """Run ``code`` in a new interpreter; it prints one JSON line."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_small_closure_in_a_fresh_process_never_imports_numpy():
    got = fresh("""
        import json, sys
        from thinkingdb.engine.closure import closure, preload
        from thinkingdb.engine.graph import FactGraph
        from thinkingdb.model import Atom, Fact, Rule, Triple, Var
        x, y, z = Var("x"), Var("y"), Var("z")
        g = FactGraph([Fact(f"n{i}", "r", f"n{i + 1}") for i in range(100)])
        rules = [Rule("compose", (Atom(x, "r", y), Atom(y, "r", z)), Atom(x, "r2", z))]
        engine = preload(g, rules)
        res = closure(g, rules)
        proof = res.proof(Triple("n0", "r2", "n2"))
        print(json.dumps({"engine": engine, "ran": res.stats.engine, "derived": res.derived_count,
                          "premises": [p.conclusion.object for p in proof.premises],
                          "numpy": "numpy" in sys.modules}))
    """)
    assert got == {"engine": "one-round-python", "ran": "one-round-python", "derived": 99,
                   "premises": ["n1", "n2"], "numpy": False}


def test_preload_imports_the_numpy_engine_when_the_input_is_not_small():
    got = fresh(f"""
        import json, sys
        from thinkingdb.engine import oneround
        from thinkingdb.engine.closure import closure, preload
        from thinkingdb.engine.graph import FactGraph
        from thinkingdb.model import Atom, Fact, Rule, Var
        x, y, z = Var("x"), Var("y"), Var("z")
        n = oneround.SMALL_JOIN // 2 + 1                  # a chain of n + 1 facts: n 2-paths, 2n + 1 work
        g = FactGraph([Fact(f"n{{i}}", "r", f"n{{i + 1}}") for i in range(n + 1)])
        rules = [Rule("compose", (Atom(x, "r", y), Atom(y, "r", z)), Atom(x, "r2", z))]
        engine = preload(g, rules)
        loaded = "thinkingdb.engine.nonrecursive" in sys.modules and "numpy" in sys.modules
        res = closure(g, rules)
        print(json.dumps({{"engine": engine, "loaded": loaded, "ran": res.stats.engine,
                          "derived": res.derived_count, "n": n}}))
    """)
    assert got == {"engine": "one-round", "loaded": True, "ran": "one-round", "derived": got["n"], "n": got["n"]}


def test_small_join_by_hand():
    # a -r-> b -r-> c (0.5, 0.8) scores (0.5 * 0.5) * 0.8 = 0.2, a -r-> d -r-> c (1.0, 0.3) scores 0.15:
    # a r2 c goes through b; c -r-> e (1.0) adds b r2 e (0.4) and d r2 e (0.15): 4 candidates
    fs = [Fact("a", "r", "b", 0.5), Fact("b", "r", "c", 0.8), Fact("a", "r", "d"), Fact("d", "r", "c", 0.3),
          Fact("c", "r", "e")]
    res = closure(FactGraph(fs), COMPOSE)
    assert res.stats.engine == "one-round-python" and res.stats.firings == 4
    assert {(t.subject, t.object): res.score(t) for t in res.derived} == {
        ("a", "c"): (0.5 * 0.5) * 0.8, ("b", "e"): (0.5 * 0.8) * 1.0, ("d", "e"): (0.5 * 0.3) * 1.0}
    assert [p.conclusion.subject for p in res.proof(Triple("a", "r2", "c")).premises] == ["a", "b"]
    assert res.depth(Triple("a", "r2", "c")) == 1


def test_equal_scores_keep_the_canonically_first_join_symbol():
    # a r2 c through b or through z, both 1.0: the semi-naive engine keeps the smaller premise keys (b)
    for order in ([("a", "z"), ("z", "c"), ("a", "b"), ("b", "c")], [("a", "b"), ("b", "c"), ("a", "z"), ("z", "c")]):
        g = FactGraph([Fact(s, "r", o) for s, o in order])
        res = closure(g, COMPOSE)
        assert res.stats.engine == "one-round-python"
        assert [p.conclusion.object for p in res.proof(Triple("a", "r2", "c")).premises] == ["b", "c"]


def test_the_threshold_is_on_facts_walked_plus_candidates():
    chain = FactGraph([Fact(f"n{i}", "r", f"n{i + 1}") for i in range(11)])   # 11 facts, 10 2-paths
    shapes = oneround.one_round_plan(COMPOSE, Limits(), 0)
    assert oneround.join_work(chain, shapes, None, 21) == 21
    assert oneround.join_work(chain, shapes, None, 20) is None
    scope = bytearray(b"\x01" * 4 + b"\x00" * 8)   # n0..n3 (ids in insertion order): 2 2-paths in scope
    assert oneround.join_work(chain, shapes, scope, 100) == 11 + 2


def test_max_derived_keeps_the_canonical_prefix_across_head_relations_the_graph_never_saw():
    # two rules derive a h a and a k a, relations the graph has no fact of: with room for one, every
    # engine keeps a h a ("h" < "k"), whatever the rules' order (their ids used to break the tie)
    g = FactGraph([Fact("a", "r", "a")])
    for names in (("h", "k"), ("k", "h")):
        rules = tuple(Rule(f"to_{h}", (Atom(X, "r", Y), Atom(Z, "r", Y)), Atom(Z, h, X)) for h in names)
        for engine, small in (("auto", 10**9), ("auto", -1), ("columnar", -1), ("reference", -1)):
            with mock.patch.object(oneround, "SMALL_JOIN", small):
                res = closure(g, rules, limits=Limits(max_derived=1), engine=engine)
            assert (res.truncated, [str(t) for t in res.derived]) == ("derived", [str(Triple("a", "h", "a"))]), (
                names, res.stats.engine)


def small(facts: int, budget: int):
    return mock.patch.multiple(seminaive, SMALL_FACTS=facts, SMALL_BUDGET=budget)


@settings(max_examples=150, deadline=None)
@given(facts(relations=("r", "s", "t"), max_size=18), programs(), BOUNDS)
def test_the_reference_engine_on_small_inputs_gives_what_the_other_engines_give(fs, rules, limits):
    g = FactGraph(fs)
    with small(10**9, 10**9):
        auto = closure(g, rules, limits=limits)
    want = closure(g, rules, limits=limits)   # the columnar engine or a fast path (small inputs off)
    assert readout(auto) == readout(want)
    if want.stats.engine != "transitive":   # (the transitive fast path builds its own proofs)
        assert readout(auto) == readout(closure(g, rules, limits=limits, engine="reference"))
    rules = tuple(rules)
    if (fast_path_plan(rules, limits, 0) is None and oneround.one_round_plan(rules, limits, 0) is None
            and unsupported(rules, 0) is None):
        assert auto.stats.engine == "semi-naive" and auto.stats.fallback.startswith("small input")
    else:   # the fast paths run whenever they apply (and the columnar engine's refusals go to the reference engine)
        assert auto.stats.engine == want.stats.engine
    if limits.max_depth is None and auto.stats.engine == "semi-naive":   # (a depth bound's probe fires too)
        n = auto.stats.firings
        for budget, facts_cap, tried in ((n, len(g), True), (n - 1, len(g), False), (n, len(g) - 1, False)):
            with small(facts_cap, budget):
                res = closure(g, rules, limits=limits)
            assert (res.stats.engine == "semi-naive") == tried, (budget, facts_cap, res.stats)
            assert readout(res) == readout(want)


@settings(max_examples=100, deadline=None)
@given(facts(relations=("r", "s", "t"), max_size=18), programs(), st.sampled_from(["a", "b"]),
       st.sampled_from([Limits(), Limits(max_depth=2), Limits(max_nodes=3), Limits(max_derived=4)]))
def test_questions_on_small_inputs_get_the_same_answers(fs, rules, sym, limits):
    g = FactGraph(fs)
    head = rules[0].head.relation if rules else "r"
    for q in (Query((QueryPattern(sym, PathRel(head), X),)), Query((QueryPattern(X, PathRel(head), Y),))):
        want = evaluate(q, g, rules, limits=limits)
        with small(10**9, 10**9):
            got = evaluate(q, g, rules, limits=limits)
        assert [(a.bindings, a.score, a.proof.to_json()) for a in got.answers] == [
            (a.bindings, a.score, a.proof.to_json()) for a in want.answers]
        assert got.truncated == want.truncated


def test_a_question_on_a_small_store_in_a_fresh_process_never_imports_numpy(tmp_path):
    from thinkingdb.api import open_kb
    with open_kb(str(tmp_path / "kb.tdb")) as kb:   # writing the store may use numpy (its graph file)
        kb.add_text("nginx depends_on openssl. openssl depends_on libc. libc depends_on kernel. "
                    "relation depends_on transitive. rule uses @0.5: ?x depends_on ?y => ?x uses ?y.",
                    source="deps.tdb")
    got = fresh(f"""
        import json, sys
        from thinkingdb.api import open_kb
        kb = open_kb({str(tmp_path / "kb.tdb")!r}, readonly=True)
        res = kb.query("? nginx uses ?x.")
        proof = kb.why("nginx uses kernel")
        print(json.dumps({{"answers": sorted((a.bindings["x"], a.score) for a in res.answers),
                          "rule": proof.rule, "numpy": "numpy" in sys.modules}}))
    """)
    assert got == {"answers": [["kernel", 0.5], ["libc", 0.5], ["openssl", 0.5]], "rule": "uses", "numpy": False}
