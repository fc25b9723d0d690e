"""Noisy-or from a node with many successors in the chain engine (``thinkingdb.engine.chainalts``):
each answer is ranked by its ``k`` best proofs, the best through one successor and the others
through the rest, each successor's fact replayed for the goal. Generated programs: a start with
8–16 successors, chains of steps below them that mostly keep apart and sometimes meet (a node with
two ways on, where the replay along one chain must give way to the full replay), goals asserted
along them, the step relation asserted or derived (improved facts: several versions); right- and
left-linear rules. Oracles: the full closure (the reference engine, ``goal_directed=False``) — its
answers, scores and proofs —, the noisy-or of the full closure's proofs computed here, and, for
each replay read off chains (``replay_paths``), the general replay of the same region."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thinkingdb.engine import chainalts
from thinkingdb.engine.graph import FactGraph
from thinkingdb.engine.query import evaluate
from thinkingdb.engine.rules import compile_declarations
from thinkingdb.model import Atom, Declaration, Fact, Limits, PathRel, Query, QueryPattern, Rule, Var

x, y, c, z = Var("x"), Var("y"), Var("c"), Var("z")
CONFS = (1.0, 0.9, 0.8, 0.5, 0.25, 0.7, 0.95)


def chain_rule(right: bool, weight: float) -> Rule:
    if right:
        return Rule("tchain", (Atom(x, "e", c), Atom(c, "t", y)), Atom(x, "t", y), weight)
    return Rule("tchain", (Atom(x, "t", c), Atom(c, "e", y)), Atom(x, "t", y), weight)


# derived steps: a join, and a linear recursion through a transitive d (the default library's
# has_capability): a step fact found in round 1 by the join and improved later by the recursion
STEP_RULES = (Rule("cap", (Atom(x, "u", y), Atom(y, "p", z)), Atom(x, "e", z), 0.95),
              Rule("through", (Atom(x, "d", y), Atom(y, "e", z)), Atom(x, "e", z), 0.85)) + \
    compile_declarations([Declaration("d", "transitive")])


@st.composite
def fan_out(draw):
    """``(facts, start)``: ``s`` with 8–16 successors ``m*``, each leading down a chain of ``n*``
    nodes (each chain node steps to a later one); extra steps between chains, goals ``g*`` asserted
    at the chain nodes and at a few successors."""
    n_succ, n_nodes = draw(st.integers(8, 16)), draw(st.integers(6, 24))
    conf = st.sampled_from(CONFS)
    fs = [Fact("s", "e", f"m{i}", draw(conf)) for i in range(n_succ)]
    for i in range(n_succ):
        fs.append(Fact(f"m{i}", "e", f"n{draw(st.integers(0, n_nodes - 1))}", draw(conf)))
    for j in range(n_nodes - 1):
        fs.append(Fact(f"n{j}", "e", f"n{draw(st.integers(j + 1, n_nodes - 1))}", draw(conf)))
    for _ in range(draw(st.integers(0, 6))):   # meetings, shortcuts, back edges (cycles)
        fs.append(Fact(f"n{draw(st.integers(0, n_nodes - 1))}", "e", f"n{draw(st.integers(0, n_nodes - 1))}",
                       draw(conf)))
    for _ in range(draw(st.integers(1, 10))):
        fs.append(Fact(f"n{draw(st.integers(0, n_nodes - 1))}", "t", f"g{draw(st.integers(0, 4))}", draw(conf)))
    for _ in range(draw(st.integers(0, 2))):
        fs.append(Fact(f"m{draw(st.integers(0, n_succ - 1))}", "t", f"g{draw(st.integers(0, 4))}", draw(conf)))
    for j in range(draw(st.integers(0, 5))):   # derived steps n_a e n_b: by the join in round 1,
        # weak; by the recursion through a d chain of 1-3 facts, later and stronger (several versions)
        a, b, length = draw(st.integers(0, n_nodes - 1)), draw(st.integers(0, n_nodes - 1)), draw(st.integers(1, 3))
        if draw(st.booleans()):
            fs += [Fact(f"n{a}", "u", f"k{j}", draw(conf)), Fact(f"k{j}", "p", f"n{b}", draw(st.sampled_from((0.25, 0.5))))]
        hops = [f"n{a}"] + [f"h{j}_{i}" for i in range(length)]
        fs += [Fact(u, "d", v, draw(st.sampled_from((1.0, 0.95)))) for u, v in zip(hops, hops[1:])]
        fs.append(Fact(hops[-1], "e", f"n{b}", draw(st.sampled_from((1.0, 0.9)))))
    return fs


def mirrored(fs):
    """The same graph for a left-linear rule: every fact the other way round."""
    return [Fact(f.object, f.relation, f.subject, f.confidence) for f in fs]


def noisy_or(scores) -> float:
    """1 − ∏(1 − s), in the order given (the engines' order: the proofs best first)."""
    rest = 1.0
    for s in scores:
        rest *= 1.0 - s
    return 1.0 - rest


def checked_replays():
    """A ``replay_paths`` that also runs the general replay over the same region and checks that
    every version the chains give for a returned node and the nodes on its chain is the replay's.
    Returns the wrapper and the count of replays read off chains."""
    real = chainalts.replay_paths
    count = [0]

    def check(res, searched, goal, ends):
        got = real(res, searched, goal, ends)
        if got is None:
            return None
        count[0] += 1
        region, edges, tops = set(), {}, {}
        for n, P, parents, _ in searched:
            if any(a in P for a in ends):
                tops[n], sub = res._region(ends, P, parents)
                region |= sub
                for v in sub:
                    edges.setdefault(v, set()).update(u for u, _ in parents.get(v, ()) if u in sub)
        terms = {a: conf for a, conf in ends.items() if a in region}
        want = res._simulate(goal, terms, lambda v: [(u, None) for u in edges.get(v, ())])
        accepted = {n for n, top in tops.items() if want[n][-1][0] >= top * (1 - res.delta / 10)}
        assert set(got) == accepted
        for n in accepted:
            vers, m = got[n], n
            while m is not None:
                assert list(vers[m]) == want[m], (n, m)
                m = vers[m][-1][2]
        return got
    return check, count


@settings(max_examples=120, deadline=None)
@given(fan_out(), st.booleans(), st.booleans(), st.sampled_from((1.0, 0.9, 0.6)), st.integers(1, 5))
def test_noisy_or_from_many_successors_equals_the_full_closure(fs, right, derived, weight, k):
    if not right:
        fs = mirrored(fs)
    rules = (chain_rule(right, weight),) + (STEP_RULES if derived else ())
    g = FactGraph(fs)
    q = Query((QueryPattern("s", PathRel("t"), Var("v")) if right else QueryPattern(Var("v"), PathRel("t"), "s"),))
    check, count = checked_replays()
    with mock.patch.object(chainalts, "replay_paths", check):
        got = evaluate(q, g, rules, aggregate="noisy-or", k=k)
    want = evaluate(q, g, rules, aggregate="noisy-or", k=k, goal_directed=False)
    assert got.stats.engine == "chain"
    assert [(a.bindings, a.score) for a in got.answers] == [(a.bindings, a.score) for a in want.answers]
    for a, b in reversed(list(zip(got.answers, want.answers))):   # proofs read last answer first
        assert [p.to_json() for p in a.proof] == [p.to_json() for p in b.proof]
        assert a.score == noisy_or(p.score for p in b.proof)
        assert len(b.proof) <= k


@settings(max_examples=40, deadline=None)
@given(fan_out(), st.booleans(), st.integers(2, 5), st.sampled_from((None, 2, 4, 7)))
def test_many_successors_best_and_depth_bounds_equal_the_full_closure(fs, derived, k, depth):
    rules = (chain_rule(True, 0.9),) + (STEP_RULES if derived else ())
    g = FactGraph(fs)
    q = Query((QueryPattern("s", PathRel("t"), Var("v")),))
    limits = Limits(max_depth=depth)
    for aggregate in ("best", "noisy-or"):
        got = evaluate(q, g, rules, aggregate=aggregate, k=k, limits=limits)
        want = evaluate(q, g, rules, aggregate=aggregate, k=k, limits=limits, goal_directed=False)
        assert [(a.bindings, a.score) for a in got.answers] == [(a.bindings, a.score) for a in want.answers]
        for a, b in zip(got.answers, want.answers):
            pa, pb = (a.proof, b.proof) if aggregate == "noisy-or" else ((a.proof,), (b.proof,))
            assert [p.to_json() for p in pa] == [p.to_json() for p in pb]


def test_the_replays_along_chains_are_taken_and_checked():
    # s has 10 successors m0..m9, each with its own chain m_i → n_i → n_{i+10} → h, h t g @0.8
    # (chains that meet only at h): the replays of the start and of its successors are read off the
    # chains; m3's chain is the strongest (steps 1.0), the others 0.5 or 0.9 at their first step.
    # by hand, weight 0.9: through m3, 0.9 × (0.9 × (0.9 × (0.9 × 0.8))) = 0.52488
    fs = [Fact("h", "t", "g", 0.8)]
    for i in range(10):
        fs += [Fact("s", "e", f"m{i}"), Fact(f"m{i}", "e", f"n{i}", 1.0 if i == 3 else 0.5 if i % 2 else 0.9),
               Fact(f"n{i}", "e", f"n{i + 10}"), Fact(f"n{i + 10}", "e", "h")]
    rules = (chain_rule(True, 0.9),)
    q = Query((QueryPattern("s", PathRel("t"), Var("v")),))
    check, count = checked_replays()
    with mock.patch.object(chainalts, "replay_paths", check):
        got = evaluate(q, FactGraph(fs), rules, aggregate="noisy-or", k=3)
    assert count[0] >= 2   # the start's replay and its successors'
    best, second = 0.9 * (0.9 * (0.9 * (0.9 * 0.8))), 0.9 * (0.9 * 0.9 * (0.9 * (0.9 * 0.8)))
    assert [p.score for p in got.answers[0].proof] == [best, second, second]
    assert round(got.answers[0].score, 12) == round(1 - (1 - best) * (1 - second) ** 2, 12)
    want = evaluate(q, FactGraph(fs), rules, aggregate="noisy-or", k=3, goal_directed=False)
    assert [[p.to_json() for p in a.proof] for a in got.answers] == [[p.to_json() for p in a.proof]
                                                                     for a in want.answers]


@pytest.mark.parametrize("m_hops, b_hops, depth", [(2, 3, 6), (4, 2, 5)])
def test_a_step_derived_late_meets_a_next_node_improved_before_or_after_it(m_hops, b_hops, depth):
    # s → m (asserted); m e b derived only through the d chain m d h0 … h{m_hops-1}, then 'e b':
    # one version, round 2 for 2 hops, round 3 for 4. b e x derived by the join in round 1
    # (0.95 × 0.5 × 0.5) and through the d chain b d j0 … j{b_hops-1}, then 'e x': improved in
    # round 2 (2 hops: 0.85) or in rounds 2 (0.85 × 0.85) and 3 (0.85) for 3 hops. x t g. So b's
    # fact has versions in rounds 2, 3 (and 4); m's step fires with the last of b's versions before
    # it, then with each later one: (2, 3): m's versions 3, 4, 5 and s's best in round 6; (4, 2):
    # m's one version in round 4, s's in 5. Score 0.9 × (0.9 · 0.85) × (0.9 · 0.85) either way.
    # s's other successors m1, m2 (plain chains to x) are replayed with m.
    hs, js = [f"h{i}" for i in range(m_hops)], [f"j{i}" for i in range(b_hops)]
    fs = [Fact(u, "d", v) for u, v in zip(["m"] + hs, hs)] + [Fact(hs[-1], "e", "b")]
    fs += [Fact(u, "d", v) for u, v in zip(["b"] + js, js)] + [Fact(js[-1], "e", "x")]
    fs += [Fact("s", "e", "m"), Fact("b", "u", "k", 0.5), Fact("k", "p", "x", 0.5), Fact("x", "t", "g"),
           Fact("s", "e", "m1", 0.9), Fact("m1", "e", "x", 0.5), Fact("s", "e", "m2", 0.8), Fact("m2", "e", "y"),
           Fact("y", "e", "x", 0.9)]
    rules = (chain_rule(True, 0.9),) + STEP_RULES
    q = Query((QueryPattern("s", PathRel("t"), Var("v")),))
    check, count = checked_replays()
    with mock.patch.object(chainalts, "replay_paths", check):
        got = evaluate(q, FactGraph(fs), rules, aggregate="noisy-or", k=3)
        why_got = evaluate(q, FactGraph(fs), rules, aggregate="best")
    assert count[0] >= 2 and got.stats.engine == "chain"
    want = evaluate(q, FactGraph(fs), rules, aggregate="noisy-or", k=3, goal_directed=False)
    assert [(a.bindings, a.score) for a in got.answers] == [(a.bindings, a.score) for a in want.answers]
    assert [[p.to_json() for p in a.proof] for a in got.answers] == [[p.to_json() for p in a.proof]
                                                                     for a in want.answers]
    best = evaluate(q, FactGraph(fs), rules, goal_directed=False).answers[0].proof
    assert why_got.answers[0].proof.to_json() == best.to_json()
    assert best.depth == depth and best.score == 0.9 * ((0.9 * 0.85) * ((0.9 * 0.85) * 1.0))


def test_two_equal_ways_on_take_the_full_replay():
    # m → n2 → x and m → n1 → x, every step 1: two chains of one score from m (n2 listed first, so
    # found first); the full closure keeps the one with the lower premises, through n1. m's region is
    # then no single chain: the replay of the whole region runs and picks n1 too.
    fs = [Fact("s", "e", "m"), Fact("m", "e", "n2"), Fact("m", "e", "n1"), Fact("n2", "e", "x"),
          Fact("n1", "e", "x"), Fact("x", "t", "g", 0.9)]
    fs += [Fact("s", "e", f"m{i}", 0.5) for i in range(4)] + [Fact(f"m{i}", "e", "x", 0.5) for i in range(4)]
    rules = (chain_rule(True, 0.9),)
    q = Query((QueryPattern("s", PathRel("t"), Var("v")),))
    for k in (1, 3):
        got = evaluate(q, FactGraph(fs), rules, aggregate="noisy-or", k=k)
        want = evaluate(q, FactGraph(fs), rules, aggregate="noisy-or", k=k, goal_directed=False)
        assert got.stats.engine == "chain"
        assert [[p.to_json() for p in a.proof] for a in got.answers] == [[p.to_json() for p in a.proof]
                                                                         for a in want.answers]
        steps = got.answers[0].proof[0].premises[1].premises[0].conclusion
        assert (steps.subject, steps.object) == ("m", "n1")
