"""The pure-Python one-round join's grouped path (engine/grouped.py ``_fill_grouped``): over whole
relations, with one rule per head relation whose walked premise has a head variable as its subject,
each walked subject's best derivations are one dict of the winning ``?y``; when each premise relation
holds one confidence the lowest ``?y`` rank alone decides, with no work per candidate.

Compared with the semi-naive reference engine (facts, exact scores, depths, proofs, what queries read)
on generated graphs whose body relations hold one confidence each or mixed ones, and the firings with
the 2-paths counted by brute force over the facts; a spy checks the grouped path is the one that ran
and a hand-computed case pins each branch (one ``?y``, two, more than two, scores against ranks)."""

from __future__ import annotations

from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from test_closure_nonrecursive import generic, snapshot
from thinkingdb.engine import grouped, oneround
from thinkingdb.engine.closure import closure
from thinkingdb.engine.graph import FactGraph
from thinkingdb.model import Atom, Fact, Limits, Rule, Triple, Var

SYMS = ("a", "b", "c", "d", "e", "f", "g")
CONFS = (1.0, 0.9, 0.7, 0.5, 0.3, 0.1)   # products of these round differently by association
X, Y, Z = Var("x"), Var("y"), Var("z")
# the premise orientations the grouped path takes: not both premises with ?y as their subject
SHAPES = (((X, Y), (Y, Z)), ((X, Y), (Z, Y)), ((Y, X), (Z, Y)))


def small_on():
    """Every input is small: the pure-Python join runs (tests/conftest.py leaves SMALL_JOIN as shipped,
    which these inputs are under anyway; set here so the test does not depend on it)."""
    return mock.patch.object(oneround, "SMALL_JOIN", 10**9)


@st.composite
def grouped_cases(draw):
    uniform = draw(st.booleans())
    conf = {rel: draw(st.sampled_from(CONFS)) for rel in ("r", "s")}
    fs = []
    for _ in range(draw(st.integers(1, 30))):
        rel = draw(st.sampled_from(("r", "s", "h")))   # some head facts asserted: never derived
        c = conf[rel] if uniform and rel != "h" else draw(st.sampled_from(CONFS))
        fs.append(Fact(draw(st.sampled_from(SYMS)), rel, draw(st.sampled_from(SYMS)), c))
    rules = []
    for i, head_rel in enumerate(draw(st.sampled_from((("h",), ("k",), ("h", "k"), ("k", "h"))))):
        p, q = draw(st.sampled_from(SHAPES))
        if draw(st.booleans()):   # the rule's second premise is the walked one
            p, q = q, p
        head = (X, Z) if draw(st.booleans()) else (Z, X)
        rules.append(Rule(f"g{draw(st.integers(0, 2))}_{i}",
                          (Atom(p[0], draw(st.sampled_from(("r", "s"))), p[1]),
                           Atom(q[0], draw(st.sampled_from(("r", "s"))), q[1])),
                          Atom(head[0], head_rel, head[1]), draw(st.sampled_from((1.0, 0.95, 0.7, 0.3)))))
    return fs, tuple(rules)


def two_paths(g: FactGraph, rules) -> int:
    """Candidates by brute force: pairs of asserted facts matching a rule's premises on one ``?y``."""
    facts = list(g.facts())

    def y_of(atom, f):
        return f.subject if atom.subject == Y else f.object
    return sum(1 for rule in rules for f in facts for h in facts
               if (f.relation, h.relation) == (rule.premises[0].relation, rule.premises[1].relation)
               and y_of(rule.premises[0], f) == y_of(rule.premises[1], h))


@settings(max_examples=300, deadline=None)
@given(grouped_cases())
def test_the_grouped_join_equals_the_reference_engine(case):
    fs, rules = case
    g = FactGraph(fs)
    with small_on(), mock.patch.object(grouped, "_grouped", wraps=grouped._grouped) as spy:
        fast = closure(g, rules)
    assert fast.stats.engine == "one-round-python" and spy.call_count == len(rules)
    with generic():
        slow = closure(g, rules)
    assert snapshot(fast) == snapshot(slow)
    assert fast.derived_count == slow.derived_count == len(set(fast.derived_keys()))
    assert fast.stats.firings == two_paths(g, rules)
    ids = fast.ids
    for s in range(len(g._syms)):
        for rel in ("r", "s", "h", "k"):
            r = ids.rel(rel)
            assert fast.out(r, s) == slow.out(r, s)
            assert fast.inn(r, s) == slow.inn(r, s)
    for rel in ("h", "k"):
        assert fast.subjects(ids.rel(rel)) == slow.subjects(ids.rel(rel))
        assert fast.objects(ids.rel(rel)) == slow.objects(ids.rel(rel))
    for limits in (Limits(max_derived=3), Limits(max_depth=1)):
        with small_on():
            bounded = closure(g, rules, limits=limits)
        with generic():
            assert snapshot(bounded) == snapshot(closure(g, rules, limits=limits)), limits


def test_each_branch_by_hand():
    # x has one ?y (q), two (a, b: b inserted first) and three (m, n, o: reversed); all 1.0 except
    # where a score must beat a rank
    fs = [Fact("x1", "r", "q"), Fact("q", "r", "z"),
          Fact("x2", "r", "b"), Fact("x2", "r", "a"), Fact("a", "r", "z"), Fact("b", "r", "z"),
          Fact("x3", "r", "o"), Fact("x3", "r", "n"), Fact("x3", "r", "m"),
          Fact("o", "r", "z"), Fact("n", "r", "z"), Fact("m", "r", "w"), Fact("n", "r", "w")]
    rule = (Rule("compose", (Atom(X, "r", Y), Atom(Y, "r", Z)), Atom(X, "r2", Z), 0.5),)

    def via(res, s, o):
        return res.proof(Triple(s, "r2", o)).premises[0].conclusion.object

    with small_on():
        res = closure(FactGraph(fs), rule)
    assert (via(res, "x1", "z"), via(res, "x2", "z"), via(res, "x3", "z"), via(res, "x3", "w")) == ("q", "a", "n", "m")
    assert res.score(Triple("x2", "r2", "z")) == 0.5 and res.stats.firings == 1 + 2 + 4   # x1, x2, x3's 2-paths
    # b's path now scores higher than a's: the score decides before the rank
    with small_on():
        res = closure(FactGraph(fs[:4] + [Fact("a", "r", "z", 0.9)] + fs[5:]), rule)
    assert via(res, "x2", "z") == "b" and res.score(Triple("x2", "r2", "z")) == 0.5


def test_asserted_head_facts_are_not_derived_in_either_head_orientation():
    fs = [Fact("x", "r", "y"), Fact("y", "r", "z"), Fact("y", "r", "w"), Fact("x", "h", "z"), Fact("w", "h", "x")]
    for head, kept in ((Atom(X, "h", Z), ("x", "w")), (Atom(Z, "h", X), ("z", "x"))):
        with small_on():
            res = closure(FactGraph(fs), (Rule("c", (Atom(X, "r", Y), Atom(Y, "r", Z)), head),))
        assert [(t.subject, t.object) for t in res.derived] == [kept]


def test_scores_keep_the_premise_order_when_the_walked_premise_is_the_rules_second():
    # (w * c_p) * c_q with w = 0.7: through b (0.7 * 0.3) * 0.7 = 0.147, through a (0.7 * 0.7) * 0.3 =
    # 0.14699999999999996; multiplied in the walked premise's order instead, a would win
    fs = [Fact("x", "r", "b", 0.7), Fact("x", "r", "a", 0.3), Fact("b", "s", "z", 0.3), Fact("a", "s", "z", 0.7)]
    rule = (Rule("c", (Atom(Y, "s", Z), Atom(X, "r", Y)), Atom(X, "h", Z), 0.7),)
    with small_on():
        res = closure(FactGraph(fs), rule)
    proof = res.proof(Triple("x", "h", "z"))
    assert proof.premises[0].conclusion.subject == "b" and res.score(Triple("x", "h", "z")) == (0.7 * 0.3) * 0.7
