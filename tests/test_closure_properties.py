"""Property tests of the closure on generated graphs and rule sets with cycles (SPEC §5).

The oracles here are written independently of the engine: a naive fixpoint that tries every
substitution each round, a proof checker, and networkx for transitive closure."""

from __future__ import annotations

import math
import random

import networkx as nx
import pytest
from hypothesis import given, settings, strategies as st

from strategies import SYMBOLS, declarations, facts, rule_sets
from thinkingdb.engine.closure import closure
from thinkingdb.engine.graph import FactGraph
from thinkingdb.model import Declaration, Fact, Limits, Triple, Var
from thinkingdb.engine.rules import compile_declarations


# -- independent oracles -----------------------------------------------------------------------
def asserted_of(fact_list):
    best = {}
    for f in fact_list:
        t = (f.subject, f.relation, f.object)
        best[t] = max(best.get(t, -1.0), f.confidence)
    return best


def substitutions(premises, known):
    """Every way to match ``premises`` against ``known`` (dict triple -> score)."""
    def go(i, env, used):
        if i == len(premises):
            yield dict(env), list(used)
            return
        p = premises[i]
        for (s, r, o) in known:
            if r != p.relation:
                continue
            new = dict(env)
            ok = True
            for term, val in ((p.subject, s), (p.object, o)):
                if isinstance(term, Var):
                    if new.setdefault(term, val) != val:
                        ok = False
                elif term != val:
                    ok = False
            if ok:
                yield from go(i + 1, new, used + [(s, r, o)])
    yield from go(0, {}, [])


def naive_fixpoint(fact_list, rules, max_depth=None):
    """Best score of every fact over derivations of depth <= max_depth (None: unbounded), by
    recomputing every rule over every substitution each round until nothing changes."""
    asserted = asserted_of(fact_list)
    scores = dict(asserted)
    d = 0
    while max_depth is None or d < max_depth:
        new = dict(scores)
        for rule in rules:
            for env, used in substitutions(rule.premises, scores):
                h = rule.head
                head = (env.get(h.subject, h.subject), h.relation, env.get(h.object, h.object))
                if head in asserted:
                    continue
                sc = rule.weight
                for u in used:
                    sc *= scores[u]
                if sc > new.get(head, -1.0):
                    new[head] = sc
        d += 1
        if new == scores:
            break
        scores = new
    return {t: s for t, s in scores.items() if t not in asserted}


def check(proof, rules, asserted, problems):
    """Re-check a proof tree node by node (independent of thinkingdb.engine.proofs.check_proof)."""
    by_name = {r.name: r for r in rules}
    t = proof.conclusion
    key = (t.subject, t.relation, t.object)
    if proof.kind == "asserted":
        if asserted.get(key) != proof.score or proof.depth != 0:
            problems.append(("bad leaf", key))
        return
    rule = by_name[proof.rule]
    env = {}
    for atom, child in zip(rule.premises, proof.premises, strict=True):
        c = child.conclusion
        if c.relation != atom.relation:
            problems.append(("relation", key))
        for term, val in ((atom.subject, c.subject), (atom.object, c.object)):
            if isinstance(term, Var):
                if env.setdefault(term, val) != val:
                    problems.append(("binding", key))
            elif term != val:
                problems.append(("constant", key))
        check(child, rules, asserted, problems)
    h = rule.head
    if (env.get(h.subject, h.subject), h.relation, env.get(h.object, h.object)) != key:
        problems.append(("head", key))
    expected = rule.weight * math.prod(c.score for c in proof.premises)
    if not math.isclose(expected, proof.score, rel_tol=1e-9, abs_tol=1e-15):
        problems.append(("score", key))
    if proof.depth != 1 + max(c.depth for c in proof.premises):
        problems.append(("depth", key))


def derived_scores(res):
    return {(t.subject, t.relation, t.object): p.score for t, p in res.derived.items()}


def same_scores(a, b):
    return a.keys() == b.keys() and all(math.isclose(a[k], b[k], rel_tol=1e-9, abs_tol=1e-15) for k in a)


# -- properties ----------------------------------------------------------------------------------
@given(facts(), rule_sets())
def test_complete_and_sound_with_unlimited_bounds(fs, rules):
    res = closure(FactGraph(fs), rules)
    assert res.truncated is None
    assert same_scores(derived_scores(res), naive_fixpoint(fs, rules))
    asserted = asserted_of(fs)
    problems = []
    for t, proof in res.derived.items():
        check(proof, rules, asserted, problems)
        assert math.isclose(proof.score, res.score(t), rel_tol=1e-12)
    assert problems == []


@given(facts(), rule_sets(), st.integers(0, 4))
def test_depth_bound_matches_depth_limited_fixpoint(fs, rules, depth):
    res = closure(FactGraph(fs), rules, limits=Limits(max_depth=depth))
    assert same_scores(derived_scores(res), naive_fixpoint(fs, rules, depth))
    assert all(p.depth <= depth for p in res.derived.values())
    more = naive_fixpoint(fs, rules, depth + 1) != naive_fixpoint(fs, rules, depth)
    assert (res.truncated == "depth") == more


@given(facts(), rule_sets(), st.integers(1, 5), st.sampled_from(SYMBOLS))
def test_node_bound(fs, rules, max_nodes, seed):
    res = closure(FactGraph(fs), rules, seeds=[seed], limits=Limits(max_nodes=max_nodes))
    touched = {x for t in res.derived for x in (t.subject, t.object)}
    assert len(touched | {seed}) <= max_nodes
    assert res.stats.nodes <= max_nodes
    # each derived fact is sound over the asserted facts among the scope's symbols
    problems = []
    for proof in res.derived.values():
        check(proof, rules, asserted_of(fs), problems)
    assert problems == []


@given(facts(), rule_sets(), st.sampled_from(SYMBOLS), st.integers(0, 3), st.integers(1, 4), st.integers(0, 6))
def test_monotone_in_every_bound(fs, rules, seed, depth, nodes, derived):
    g = FactGraph(fs)

    def facts_of(**kw):
        return set(closure(g, rules, seeds=[seed], limits=Limits(**kw)).derived)

    assert facts_of(max_depth=depth) <= facts_of(max_depth=depth + 1) <= facts_of()
    assert facts_of(max_nodes=nodes) <= facts_of(max_nodes=nodes + 1) <= facts_of()
    assert facts_of(max_derived=derived) <= facts_of(max_derived=derived + 1) <= facts_of()
    assert len(facts_of(max_derived=derived)) <= derived


@given(facts(), rule_sets(), st.randoms(use_true_random=False), st.sampled_from([None, 2]))
def test_order_invariance(fs, rules, rnd, depth):
    shuffled = list(fs)
    rnd.shuffle(shuffled)
    a = closure(FactGraph(fs), rules, limits=Limits(max_depth=depth), alternatives=2)
    b = closure(FactGraph(shuffled), rules, limits=Limits(max_depth=depth), alternatives=2)
    assert list(a.derived) == list(b.derived)
    assert [a.proof(t).to_json() for t in a.derived] == [b.proof(t).to_json() for t in b.derived]


@given(facts(relations=("r", "s")), declarations(relations=("r", "s")))
def test_declarations_complete(fs, decls):
    rules = compile_declarations(decls)
    if not rules:
        return
    res = closure(FactGraph(fs), rules)
    assert same_scores(derived_scores(res), naive_fixpoint(fs, rules))


@given(facts(relations=("r",), confidences=(1.0,), max_size=20))
def test_transitive_equals_networkx(fs):
    rules = compile_declarations([Declaration("r", "transitive")])
    res = closure(FactGraph(fs), rules)
    dg = nx.DiGraph([(f.subject, f.object) for f in fs])
    tc = nx.transitive_closure(dg, reflexive=False)  # self-loops exactly on cycles
    expected = {(a, b) for a, b in tc.edges} - {(f.subject, f.object) for f in fs}
    assert {(t.subject, t.object) for t in res.derived} == expected
    assert res.stats.engine == "transitive"


@given(facts(relations=("r", "s"), confidences=(1.0, 0.5, 0.9), max_size=16), st.sampled_from([1.0, 0.8]))
def test_fast_path_agrees_with_semi_naive(fs, w):
    fs = [f if f.relation == "s" else Fact(f.subject, f.relation, f.object, 1.0) for f in fs]
    rules = compile_declarations([Declaration("r", "transitive"), Declaration("s", "subrelation_of", "r")])
    rules = (rules[0].__class__(rules[0].name, rules[0].premises, rules[0].head, w), rules[1])
    fast = closure(FactGraph(fs), rules)
    slow = closure(FactGraph(fs), rules, alternatives=1)   # alternatives force the general engine
    assert (fast.stats.engine, slow.stats.engine) == ("transitive", "semi-naive")
    assert same_scores(derived_scores(fast), derived_scores(slow))
    assert same_scores(derived_scores(fast), naive_fixpoint(fs, rules))
    problems = []
    for proof in fast.derived.values():
        check(proof, rules, asserted_of(fs), problems)
    assert problems == []


@settings(max_examples=10)
@given(st.integers(0, 2**32))
def test_terminates_on_dense_cycles(seed):
    rnd = random.Random(seed)
    n = 12
    fs = [Fact(f"n{i}", "r", f"n{(i + 1) % n}", 0.9) for i in range(n)]
    fs += [Fact(f"n{rnd.randrange(n)}", "r", f"n{rnd.randrange(n)}", 0.5) for _ in range(10)]
    rules = compile_declarations([Declaration("r", "transitive"), Declaration("r", "symmetric")])
    res = closure(FactGraph(fs), rules)
    assert res.truncated is None
    assert len(res.derived) == n * n - len({(f.subject, f.object) for f in fs})


def test_timeout_is_reported():
    fs = [Fact(f"n{i}", "r", f"n{(i * 7 + 1) % 400}") for i in range(400)]
    fs += [Fact(f"n{i}", "r", f"n{(i * 13 + 5) % 400}") for i in range(400)]
    rules = compile_declarations([Declaration("r", "transitive")])
    res = closure(FactGraph(fs), rules, limits=Limits(timeout_ms=1, max_depth=50))
    assert res.truncated == "time"
