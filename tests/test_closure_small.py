"""Small inputs close without numpy: the engine that runs says so in stats, a fresh process that
closes a small input never imports numpy, and ``preload`` imports only what that run will use."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from unittest import mock

from thinkingdb.engine import oneround
from thinkingdb.engine.closure import closure, preload
from thinkingdb.engine.graph import FactGraph
from thinkingdb.model import Atom, Fact, Limits, Rule, Triple, Var

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
        n = oneround.SMALL_PAIRS + 1                      # a chain of n + 1 facts: n 2-paths
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


def test_the_threshold_is_on_candidates():
    chain = FactGraph([Fact(f"n{i}", "r", f"n{i + 1}") for i in range(11)])   # 10 2-paths
    shapes = oneround.one_round_plan(COMPOSE, Limits(), 0)
    assert oneround.count_pairs(chain, shapes, None, 10) == 10
    assert oneround.count_pairs(chain, shapes, None, 9) is None


def test_max_derived_keeps_the_canonical_prefix_across_head_relations_the_graph_never_saw():
    # two rules derive a h a and a k a, relations the graph has no fact of: with room for one, every
    # engine keeps a h a ("h" < "k"), whatever the rules' order (their ids used to break the tie)
    g = FactGraph([Fact("a", "r", "a")])
    for names in (("h", "k"), ("k", "h")):
        rules = tuple(Rule(f"to_{h}", (Atom(X, "r", Y), Atom(Z, "r", Y)), Atom(Z, h, X)) for h in names)
        for engine, small in (("auto", 10**9), ("auto", -1), ("columnar", -1), ("reference", -1)):
            with mock.patch.object(oneround, "SMALL_PAIRS", small):
                res = closure(g, rules, limits=Limits(max_derived=1), engine=engine)
            assert (res.truncated, [str(t) for t in res.derived]) == ("derived", [str(Triple("a", "h", "a"))]), (
                names, res.stats.engine)
