"""The direction-aware scope of seeded queries (``thinkingdb.engine.query.demand``): answers, scores and proofs
equal those of the undirected scope, while the closure touches only what a proof could use."""

from __future__ import annotations

from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

import thinkingdb.engine.query as query_module
from thinkingdb.engine.graph import FactGraph
from thinkingdb.model import (Atom, Declaration, Fact, Limits, PathAlt, PathInv, PathRel, PathRepeat, PathSeq, Query,
                              QueryPattern, Rule, Var)
from thinkingdb.engine.query import evaluate
from thinkingdb.engine.rules import compile_declarations

from strategies import RELATIONS, SYMBOLS, VARS, WEIGHTS, declarations, facts, rules


@st.composite
def chain_rules(draw):
    """A rule whose premises form a chain from the head's subject to its object, each premise in
    either orientation and in any order."""
    n = draw(st.integers(1, 3))
    premises = []
    for a, b in zip(VARS[:n], VARS[1:n + 1]):
        a, b = (b, a) if draw(st.booleans()) else (a, b)
        premises.append(Atom(a, draw(st.sampled_from(RELATIONS)), b))
    premises = draw(st.permutations(premises))
    ends = (VARS[0], VARS[n]) if draw(st.booleans()) else (VARS[n], VARS[0])
    head = Atom(ends[0], draw(st.sampled_from(RELATIONS)), ends[1])
    return Rule(f"chain{draw(st.integers(0, 10**6))}", tuple(premises), head, draw(st.sampled_from(WEIGHTS)))


paths = st.recursive(
    st.builds(PathRel, st.sampled_from(RELATIONS)),
    lambda inner: st.one_of(
        st.builds(PathInv, inner),
        st.builds(lambda a, b: PathSeq((a, b)), inner, inner),
        st.builds(lambda a, b: PathAlt((a, b)), inner, inner),
        st.builds(lambda p, m, plus: PathRepeat(p, m, None if plus else m + 1), inner, st.integers(0, 1), st.booleans())),
    max_leaves=3)


def undirected(q, g, rules, limits):
    with mock.patch.object(query_module, "demand", lambda *_: None):
        return evaluate(q, g, rules, limits=limits)


@given(facts(max_size=16), st.lists(chain_rules(), max_size=3, unique_by=lambda r: r.name),
       st.lists(rules(), max_size=1, unique_by=lambda r: r.name), declarations(), paths,
       st.sampled_from(SYMBOLS), st.booleans(), st.sampled_from([None, 1, 2, 3]))
def test_directed_scope_gives_the_undirected_answers(fs, chains, others, decls, path, const, from_subject, depth):
    g = FactGraph(fs)
    rule_set = tuple(chains) + tuple(others) + compile_declarations(decls)
    pattern = QueryPattern(const, path, Var("v")) if from_subject else QueryPattern(Var("v"), path, const)
    q, limits = Query((pattern,)), Limits(max_depth=depth)
    got, want = evaluate(q, g, rule_set, limits=limits), undirected(q, g, rule_set, limits)
    assert [a.to_json() for a in got.answers] == [a.to_json() for a in want.answers]
    if depth is None:
        assert got.truncated == want.truncated


def test_a_chain_query_reaches_only_the_ancestors():
    # a is_a b is_a c is_a d; siblings s1..s4 also below b, and x part_of a above nothing relevant
    fs = [Fact("a", "is_a", "b"), Fact("b", "is_a", "c"), Fact("c", "is_a", "d"), Fact("x", "part_of", "a")]
    fs += [Fact(f"s{i}", "is_a", "b") for i in range(4)]
    rule_set = compile_declarations([Declaration("ancestor", "transitive"), Declaration("is_a", "subrelation_of", "ancestor"),
                                     Declaration("part_of", "subrelation_of", "ancestor")])
    q = Query((QueryPattern("a", PathRel("ancestor"), Var("y")),))
    for limits in (Limits(), Limits(max_depth=3)):
        got, want = evaluate(q, FactGraph(fs), rule_set, limits=limits), undirected(q, FactGraph(fs), rule_set, limits)
        assert [a.bindings["y"] for a in got.answers] == ["b", "c", "d"]
        assert [a.to_json() for a in got.answers] == [a.to_json() for a in want.answers]
        assert got.stats.nodes == 4        # a and its three ancestors
        assert want.stats.nodes == 9       # the whole component: a, b, c, d, x, s1..s4
    # from the other end, ^ancestor walks down: the scope holds d and everything below it
    down = Query((QueryPattern(Var("y"), PathRel("ancestor"), "c"),))
    assert evaluate(down, FactGraph(fs), rule_set).stats.nodes == 8   # c, b, a, x, s1..s4 (not d)


def test_other_rule_shapes_keep_the_undirected_scope():
    x, y, z, w = Var("x"), Var("y"), Var("z"), Var("w")
    fs = [Fact("a", "r", "b"), Fact("b", "r", "c"), Fact("z", "r", "a"), Fact("b", "t", "q")]
    # y ←r– x –r→ z is a chain (walked against r, then along it); a premise off the chain is not
    fork = Rule("fork", (Atom(x, "r", y), Atom(x, "r", z)), Atom(y, "s", z))
    assert query_module.chain(fork) == [("r", 2), ("r", 1)]
    branch = Rule("branch", (Atom(x, "r", y), Atom(y, "r", z), Atom(y, "t", w)), Atom(x, "s", z))
    assert query_module.chain(branch) is None
    q = Query((QueryPattern("b", PathRel("s"), Var("v")),))
    assert query_module.demand(q, (branch,)) is None
    assert evaluate(q, FactGraph(fs), (branch,)).stats.nodes == 5   # b, a, c, q, z: both directions
    two = Query((QueryPattern("a", PathRel("r"), Var("v")), QueryPattern(Var("v"), PathRel("r"), Var("w"))))
    assert query_module.demand(two, ()) is None


@given(facts(max_size=16), st.lists(chain_rules(), max_size=3, unique_by=lambda r: r.name), declarations(),
       st.sampled_from(SYMBOLS), st.sampled_from(RELATIONS), st.sampled_from(SYMBOLS), st.integers(0, 2))
def test_why_with_the_directed_scope_gives_the_undirected_proof(fs, chains, decls, s, r, o, alternatives):
    from thinkingdb.model import Triple
    from thinkingdb.engine.query import why
    g, rule_set, t = FactGraph(fs), tuple(chains) + compile_declarations(decls), Triple(s, r, o)
    got = why(t, g, rule_set, alternatives=alternatives)
    with mock.patch.object(query_module, "demand", lambda *_: None):
        want = why(t, g, rule_set, alternatives=alternatives)
    assert (got is None) == (want is None)
    if got is not None:
        assert got.to_json() == want.to_json()


def test_why_follows_a_symmetric_relation_backwards():
    # knows is symmetric: "a knows b" is proved from "b knows a", an edge walked against its direction
    from thinkingdb.model import Triple
    from thinkingdb.engine.query import why
    g = FactGraph([Fact("b", "knows", "a", 0.9), Fact("c", "knows", "b", 0.8)])
    rule_set = compile_declarations([Declaration("knows", "symmetric")])
    assert query_module.demand(Query((QueryPattern("a", PathRel("knows"), Var("v")),)), rule_set) == ("a", {"knows": 3})
    proof = why(Triple("a", "knows", "b"), g, rule_set)
    assert proof is not None and proof.score == 0.9
    got = evaluate(Query((QueryPattern("a", PathRel("knows"), Var("v")),)), g, rule_set)
    assert [a.bindings["v"] for a in got.answers] == ["b"]
