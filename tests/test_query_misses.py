"""The query-side misses of issue 20: each answer below was computed by hand from the program; before
goal-directed evaluation every one of these questions came back empty (or short) with
``truncated: None`` — a wrong "no" with no warning."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thinkingdb.engine.graph import FactGraph
from thinkingdb.engine.proofs import Proof
from thinkingdb.engine.query import _combine, evaluate, noisy_or, why
from thinkingdb.engine.rules import compile_declarations
from thinkingdb.language import compile_source, parse_query
from thinkingdb.model import Limits, PathRel, Query, QueryPattern, Triple, Var

from strategies import SYMBOLS, facts, rule_sets


def program(src: str):
    prog = compile_source(src, "case.tdb")
    rules = tuple(r for r, _ in prog.rules) + compile_declarations(d for d, _ in prog.declarations)
    return FactGraph(f for f, _ in prog.facts), rules


def answers(src: str, query: str, **kw):
    g, rules = program(src)
    res = evaluate(parse_query(query), g, rules, **kw)
    return [(a.bindings, round(a.score, 12)) for a in res.answers], res.truncated


def test_a_constant_only_in_a_rule_head():
    src = "a1 c b2. a2 c b2. rule tag: ?x c ?y => ?x projection true_."
    assert answers(src, "? ?a projection true_.") == ([({"a": "a1"}, 1.0), ({"a": "a2"}, 1.0)], None)
    # the key of true_ is "true" (normalize strips edge underscores)
    assert answers(src, "? a2 projection ?b.") == ([({"b": "true"}, 1.0)], None)
    g, rules = program(src)
    proof = why(Triple("a1", "projection", "true"), g, rules)
    assert proof is not None and proof.rule == "tag"


def test_premises_sharing_no_variable():
    src = "n1 a n2. n7 c n8. rule k: ?x a ?y, ?z c ?w => ?x h ?w."
    assert answers(src, "? ?x h ?y.") == ([({"x": "n1", "y": "n8"}, 1.0)], None)
    assert answers(src, "? n1 h ?y.") == ([({"y": "n8"}, 1.0)], None)
    assert answers(src, "? ?x h n8.") == ([({"x": "n1"}, 1.0)], None)
    g, rules = program(src)
    assert why(Triple("n1", "h", "n8"), g, rules).score == 1.0


def test_a_symbol_that_exists_only_as_a_rule_head_constant():
    src = "n1 a n2. n2 a n3. rule k @0.5: ?x a ?y => ?x b knew."
    assert answers(src, "? ?x b knew.") == ([({"x": "n1"}, 0.5), ({"x": "n2"}, 0.5)], None)
    # (a|b)+ to knew: one b step from n1 or n2 (0.5), or a then b from n1 (1 × 0.5)
    assert answers(src, "? ?x (a|b)+ knew.") == ([({"x": "n1"}, 0.5), ({"x": "n2"}, 0.5)], None)
    got, truncated = answers(src, "? ?x b* ?y.")
    # zero steps relate every symbol of the model to itself, knew included; plus the two b facts
    assert got == [({"x": s, "y": s}, 1.0) for s in ("knew", "n1", "n2", "n3")] + [
        ({"x": "n1", "y": "knew"}, 0.5), ({"x": "n2", "y": "knew"}, 0.5)]
    assert truncated is None


def test_a_conjunction_mixing_components():
    src = "n1 a n2. n3 d n2. n6 d n6. rule r0: ?x a ?y, ?z d ?y => ?x h ?z."
    assert answers(src, "? ?x h ?y, n6 d ?z.") == ([({"x": "n1", "y": "n3", "z": "n6"}, 1.0)], None)
    assert answers(src, "? n6 d ?z, ?x h ?y.") == ([({"z": "n6", "x": "n1", "y": "n3"}, 1.0)], None)


@pytest.mark.parametrize("limits", [Limits(), Limits(max_derived=10), Limits(timeout_ms=60_000),
                                    Limits(max_derived=2_000_000, timeout_ms=30_000)])
def test_the_transitive_fast_path_keeps_starts_reached_through_derived_facts(limits):
    src = "relation t transitive. relation b subrelation_of t. n1 b n2."
    assert answers(src, "? ?x ^t ?y.", limits=limits) == ([({"x": "n2", "y": "n1"}, 1.0)], None)
    assert answers(src, "? ?x t ?y.", limits=limits) == ([({"x": "n1", "y": "n2"}, 1.0)], None)


def test_the_transitive_fast_path_runs_under_a_derived_bound():
    # the CLI always sets max_derived: the fast path must still be the one that runs when the bound
    # is not reached (it was refused for any max_derived)
    g, rules = program("relation t transitive. n1 t n2. n2 t n3. n3 t n4.")
    res = evaluate(parse_query("? n1 t ?y."), g, rules, limits=Limits(max_derived=2_000_000, timeout_ms=30_000))
    assert [a.bindings["y"] for a in res.answers] == ["n2", "n3", "n4"]
    assert res.stats.engine == "transitive"
    from thinkingdb.engine.closure import closure
    full = closure(g, rules, limits=Limits(max_derived=3))          # 3 derived facts: n1→n3, n1→n4, n2→n4
    assert full.stats.engine == "transitive" and full.truncated is None
    cut = closure(g, rules, limits=Limits(max_derived=2))           # over the bound: the semi-naive engine cuts
    assert cut.truncated == "derived" and len(cut.derived) == 2


def test_noisy_or_takes_a_conjunctions_strongest_combinations_however_many_patterns():
    # a p b0 is derived four ways at 0.9 (through m0..m3), a p b1..b3 once at 0.9 (through m0) and
    # three times at 0.1. With k = 4 the four strongest combinations of `a p b0, a p b1, a p b2, a p b3`
    # are b0's four proofs with the others' best: 0.9^4 each, 1 - (1 - 0.9^4)^4. The combinations were
    # read in product order and cut at 10 k^2 = 160 of the 256: the fourth (b0's last proof, 192nd)
    # was never seen and one at 0.9^3 × 0.1 took its place
    src = "".join(f"a q m{j}. " for j in range(4)) + "".join(
        f"m{j} q b{i} @{0.9 if i == 0 or j == 0 else 0.1}. " for i in range(4) for j in range(4))
    src += "rule p: ?x q ?y, ?y q ?z => ?x p ?z."
    g, rules = program(src)
    q = parse_query("? a p b0, a p b1, a p b2, a p b3.")
    (ans,) = evaluate(q, g, rules, aggregate="noisy-or", k=4).answers
    assert ans.score == pytest.approx(1 - (1 - 0.9 ** 4) ** 4, abs=1e-12)
    assert [round(p.score, 12) for p in ans.proof] == [round(0.9 ** 4, 12)] * 4


@settings(max_examples=80, deadline=None)
@given(facts(relations=("r", "s", "t"), max_size=12), rule_sets(max_rules=3),
       st.lists(st.builds(QueryPattern, st.sampled_from((Var("x"), Var("y")) + SYMBOLS[:3]),
                          st.builds(PathRel, st.sampled_from(("r", "s", "t"))),
                          st.sampled_from((Var("x"), Var("y")) + SYMBOLS[:3])), min_size=1, max_size=4),
       st.integers(1, 5))
def test_noisy_or_of_a_conjunction_is_its_k_best_combinations(fs, rules, patterns, k):
    # oracle: each pattern bound by the answer, asked alone (its k strongest proofs), every combination
    # of one proof per pattern by brute force, the k best products, 1 - prod(1 - s)
    g = FactGraph(fs)
    res = evaluate(Query(tuple(patterns)), g, rules, aggregate="noisy-or", k=k)
    for ans in res.answers:
        per = []
        for pat in patterns:
            s, o = (ans.bindings[t.name] if isinstance(t, Var) else t for t in (pat.subject, pat.object))
            (one,) = evaluate(Query((QueryPattern(s, pat.path, o),)), g, rules, aggregate="noisy-or", k=k).answers
            per.append([p.score for p in one.proof])
        best = sorted((math.prod(c) for c in itertools.product(*per)), reverse=True)[:k]
        assert ans.score == pytest.approx(noisy_or(best), abs=1e-12)
        assert sorted(p.score for p in ans.proof) == pytest.approx(sorted(best), abs=1e-12)


@given(st.lists(st.lists(st.sampled_from((1.0, 0.9, 0.5, 0.3, 0.1)), min_size=1, max_size=5), min_size=1, max_size=5),
       st.integers(1, 6))
def test_the_k_best_combinations_of_proof_lists(scores, k):
    # the combination step alone, against every combination sorted (stable: equal products keep the
    # lists' order): the same k products and the same proofs, in the same order
    lists = [[Proof.asserted(Triple(f"p{i}", "r", f"o{j}"), c) for j, c in enumerate(cs)] for i, cs in enumerate(scores)]
    got = _combine([lambda ps=ps: ps for ps in lists], k)
    want = sorted(itertools.product(*lists), key=lambda c: -math.prod(p.score for p in c))[:k]
    assert [[p.conclusion for p in c.premises] if len(lists) > 1 else [c.conclusion] for c in got] == \
        [[p.conclusion for p in c] for c in want]
    assert [c.score for c in got] == pytest.approx([math.prod(p.score for p in c) for c in want], abs=1e-15)


def test_noisy_or_takes_the_strongest_proofs_an_asserted_fact_among_them():
    # x r y is asserted at 0.1 and derived twice at 0.5: with k = 2 the two strongest proofs count
    # (1 - 0.5 × 0.5 = 0.75); a weak assertion must not lower the score below what the derivations give
    src = "x r y @0.1. a r2 y. b r2 y. rule p1 @0.5: ?q r2 y => x r y."
    assert answers(src, "? x r y.", aggregate="noisy-or", k=2) == ([({}, 0.75)], None)
    # with k = 3 all three count: 1 - 0.9 × 0.5 × 0.5
    assert answers(src, "? x r y.", aggregate="noisy-or", k=3) == ([({}, 0.775)], None)
    # best keeps the asserted fact's own confidence (asserted facts win)
    assert answers(src, "? x r y.") == ([({}, 0.1)], None)
