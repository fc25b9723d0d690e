"""Linear chain rules answered from one bound end (``thinkingdb.engine.chain``), against the full
closure (the reference engine, ``goal_directed=False``): generated graphs with cycles, a right- or
left-linear rule ``t`` over a step relation ``e`` (premises in either order, any weight), ``e``
asserted only, closed by a transitive declaration, or derived by a join and its own linear recursion
(the default library's shape); confidences below 1 (ties common), some ``t`` facts asserted (they
win and end the chains through them); queries with the subject or the object bound, ``^t``, ``why``;
best and noisy-or; every ``Limits`` setting (the bounds that would cut hand the question to the
general engine). Then the class's edges (declarations on ``t`` decline) and cases by hand."""

from __future__ import annotations

import tempfile
from pathlib import Path
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from thinkingdb.engine.chain import shape_of
from thinkingdb.engine.closure import closure
from thinkingdb.engine.graph import FactGraph
from thinkingdb.engine.proofs import Proof
from thinkingdb.engine.query import evaluate, noisy_or, why
from thinkingdb.engine.stream import answer_stream
from thinkingdb.engine.rules import compile_declarations, default_rules, relevant_rules
from test_bulk import mapped
from thinkingdb.model import (Atom, Declaration, Fact, Limits, PathInv, PathRel, Query, QueryPattern, Rule, Triple,
                              Var)

SYMBOLS = ("a", "b", "c", "d", "e", "f", "g")
x, y, c, z = Var("x"), Var("y"), Var("c"), Var("z")
LIMITS = [Limits(), Limits(max_derived=2_000_000, timeout_ms=30_000, max_rows=1_000_000), Limits(max_depth=0),
          Limits(max_depth=1), Limits(max_depth=2), Limits(max_depth=3), Limits(max_depth=5),
          Limits(max_depth=2, max_derived=10_000, timeout_ms=30_000), Limits(max_derived=3), Limits(max_derived=10_000),
          Limits(max_nodes=3), Limits(max_nodes=1_000)]


def chain_rule(right: bool, e_first: bool, weight: float) -> Rule:
    if right:
        e, t = Atom(x, "e", c), Atom(c, "t", y)
    else:
        t, e = Atom(x, "t", c), Atom(c, "e", y)
    return Rule("tchain", (e, t) if e_first else (t, e), Atom(x, "t", y), weight)


def step_rules(kind: str) -> tuple[Rule, ...]:
    if kind == "asserted":
        return ()
    if kind == "transitive":
        return compile_declarations([Declaration("e", "transitive")])
    # the default library's has_capability: a join, and a linear recursion through a transitive d
    return (Rule("cap", (Atom(x, "u", y), Atom(y, "p", z)), Atom(x, "e", z), 0.95),
            Rule("through", (Atom(x, "d", y), Atom(y, "e", z)), Atom(x, "e", z), 0.85)) + \
        compile_declarations([Declaration("d", "transitive")])


facts = st.lists(st.builds(Fact, st.sampled_from(SYMBOLS), st.sampled_from(("e", "e", "e", "t", "t", "u", "p", "d")),
                           st.sampled_from(SYMBOLS), st.sampled_from((1.0, 0.9, 0.5, 0.8, 0.25))),
                 min_size=1, max_size=18)
# denser graphs for the answers' comparison: most questions have answers, many of them several proofs
dense_facts = st.lists(st.builds(Fact, st.sampled_from(SYMBOLS),
                                 st.sampled_from(("e", "e", "e", "e", "t", "t", "t", "u", "p", "d")),
                                 st.sampled_from(SYMBOLS), st.sampled_from((1.0, 0.9, 0.5, 0.8, 0.25))),
                       min_size=4, max_size=30)
CONFS = (1.0, 0.9, 0.5, 0.8, 0.25)


@st.composite
def long_chains(draw):
    """A path n0 → n1 → … → n9 of ``e`` facts with extra steps (skips, back edges) and ``t`` facts
    both ways (``n t g`` for a right-linear rule's goals, ``g t n`` for a left-linear one's): chains
    longer than the depth bounds, so that a bound cuts answers."""
    fs = [Fact(f"n{i}", "e", f"n{i + 1}", draw(st.sampled_from(CONFS))) for i in range(9)]
    for i, j, conf, kind in draw(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9), st.sampled_from(CONFS),
                                                    st.sampled_from(("e", "t", "t", "^t"))), min_size=2, max_size=12)):
        if kind == "e":
            fs.append(Fact(f"n{i}", "e", f"n{j}", conf))
        else:
            fs.append(Fact(f"n{i}", "t", f"g{j % 3}", conf) if kind == "t" else Fact(f"g{j % 3}", "t", f"n{i}", conf))
    return fs


def graph_and_constant():
    return st.one_of(st.tuples(dense_facts, st.sampled_from(SYMBOLS)),
                     st.tuples(long_chains(), st.sampled_from(("n0", "n1", "n9", "n8", "g0", "g1"))))


def dump(res):
    def proofs(p):   # noisy-or: the combined proofs
        return [q.to_json() for q in p] if isinstance(p, tuple) else p.to_json()
    return [(a.to_json(), proofs(a.proof)) for a in res.answers], res.truncated


@settings(max_examples=200, deadline=None)
@given(graph_and_constant(), st.booleans(), st.booleans(), st.sampled_from((1.0, 0.9, 0.5)),
       st.sampled_from(("asserted", "transitive", "derived")), st.booleans(),
       st.booleans(), st.sampled_from(["best", "noisy-or"]), st.sampled_from((1, 2, 3, 5)))
def test_chain_answers_equal_the_full_closure(graph, right, e_first, weight, kind, bind_subject, inverted,
                                              aggregate, k):
    fs, const = graph
    g = FactGraph(fs)
    rules = (chain_rule(right, e_first, weight),) + step_rules(kind)
    s, o = (const, Var("v")) if bind_subject else (Var("v"), const)
    q = Query((QueryPattern(o, PathInv(PathRel("t")), s) if inverted else QueryPattern(s, PathRel("t"), o),))
    want = dump(evaluate(q, g, rules, aggregate=aggregate, k=k, goal_directed=False))
    best_free = dump(evaluate(q, g, rules, goal_directed=False))[0] if aggregate != "best" else want[0]
    fulls: dict = {}   # the full closure within each depth bound (the only bound it is compared under)

    def full_at(depth):
        if depth not in fulls:
            fulls[depth] = evaluate(q, g, rules, limits=Limits(max_depth=depth), aggregate=aggregate, k=k,
                                    goal_directed=False)
        return fulls[depth]

    # the chain engine answers (never hands over) a bound node, or a bound goal over asserted steps
    # (a transitive inner run there is a fast path), when no node or derived-fact bound is near
    in_graph = const in {t for f in fs for t in (f.subject, f.object)}
    node_bound = bind_subject == right
    for limits in LIMITS:
        got = evaluate(q, g, rules, limits=limits, aggregate=aggregate, k=k)
        if in_graph and (node_bound or kind == "asserted") and limits.max_nodes is None and \
                (limits.max_derived is None or limits.max_derived >= 10_000):
            assert got.stats.engine == "chain", limits
        if got.stats is not None and got.stats.engine == "chain" and limits.max_depth is not None:
            # the full closure's d rounds; "depth" exactly when an answer would be new or better past
            # them (so the best answers differ from the unbounded ones), which the full closure says too
            full = full_at(limits.max_depth)
            assert dump(got)[0] == dump(full)[0], limits
            best = dump(got)[0] if aggregate == "best" else dump(evaluate(q, g, rules, limits=limits))[0]
            cut = best != best_free
            assert got.truncated == ("depth" if cut else None), limits
            assert full.truncated == "depth" or not cut, limits
        elif got.stats is not None and got.stats.engine == "chain":   # only where no bound cuts
            assert dump(got) == want, limits
        elif limits.max_depth is not None:   # the general engine: the depth semantics are the full closure's
            assert dump(got)[0] == dump(full_at(limits.max_depth))[0], limits
        else:   # a node or derived-fact bound the general engine reports when it cuts
            assert dump(got) == want or got.truncated is not None, limits

@settings(max_examples=150, deadline=None)
@given(graph_and_constant(), st.booleans(), st.booleans(), st.sampled_from(("asserted", "transitive", "derived")),
       st.booleans(), st.sampled_from((2, 3, 5)), st.sampled_from((None, 1, 2, 3)))
def test_noisy_or_scores_come_without_proofs_and_the_proofs_read_later_are_the_full_closures(
        graph, right, e_first, kind, bind_subject, k, depth):
    # noisy-or ranks every answer by the scores of its k best proofs, read from the chain engine's
    # versions and alternatives: no proof is built until one is read; read later (last answer first),
    # they are the full closure's, and their noisy-or is the answer's score, float for float
    fs, const = graph
    g = FactGraph(fs)
    rules = (chain_rule(right, e_first, 0.9),) + step_rules(kind)
    s, o = (const, Var("v")) if bind_subject else (Var("v"), const)
    q = Query((QueryPattern(s, PathRel("t"), o),))
    limits = Limits(max_depth=depth)
    built = []
    real = Proof.__init__

    def counting(self, *args, **kwargs):
        built.append(args[0] if args else None)
        real(self, *args, **kwargs)
    with mock.patch.object(Proof, "__init__", counting):
        got = evaluate(q, g, rules, aggregate="noisy-or", k=k, limits=limits)
        if got.stats is not None and got.stats.engine == "chain":
            assert built == []
    want = evaluate(q, g, rules, aggregate="noisy-or", k=k, limits=limits, goal_directed=False)
    if got.stats is None or got.stats.engine != "chain":
        return
    assert [(a.bindings, a.score) for a in got.answers] == [(a.bindings, a.score) for a in want.answers]
    for a, b in reversed(list(zip(got.answers, want.answers))):
        assert [p.to_json() for p in a.proof] == [p.to_json() for p in b.proof]
        assert noisy_or(p.score for p in a.proof) == a.score


@settings(max_examples=80, deadline=None)
@given(graph_and_constant(), st.booleans(), st.booleans(), st.sampled_from(("asserted", "transitive", "derived")),
       st.booleans(), st.sampled_from((2, 5)))
def test_a_noisy_or_stream_scores_without_proofs_as_evaluate_does(graph, right, e_first, kind, bind_subject, k):
    # the stream's noisy-or answers are scored from the chain engine's kept scores too: no proof is
    # built while the answers are read; their scores and (read later) proofs are evaluate's
    fs, const = graph
    g = FactGraph(fs)
    rules = (chain_rule(right, e_first, 0.9),) + step_rules(kind)
    s, o = (const, Var("v")) if bind_subject else (Var("v"), const)
    q = Query((QueryPattern(s, PathRel("t"), o),))
    built = []
    real = Proof.__init__

    def counting(self, *args, **kwargs):
        built.append(1)
        real(self, *args, **kwargs)
    with mock.patch.object(Proof, "__init__", counting):
        stream = answer_stream(q, g, rules, aggregate="noisy-or", k=k)
        got = list(stream)
        if stream.stats is not None and stream.stats.engine == "chain":
            assert built == []
    want = evaluate(q, g, rules, aggregate="noisy-or", k=k)
    key = lambda a: (a.bindings["v"], a.score)  # noqa: E731
    assert sorted(map(key, got)) == sorted(map(key, want.answers))
    proofs = {a.bindings["v"]: [p.to_json() for p in a.proof] for a in want.answers}
    for a in got:
        assert [p.to_json() for p in a.proof] == proofs[a.bindings["v"]]


@settings(max_examples=100, deadline=None)
@given(facts, st.booleans(), st.booleans(), st.sampled_from(("asserted", "derived")), st.sampled_from(SYMBOLS),
       st.sampled_from(SYMBOLS), st.sampled_from((0, 1, 3)), st.sampled_from((None, 0, 1, 2, 4)))
def test_why_of_a_chain_fact_equals_the_full_closure(fs, right, e_first, kind, a, b, alternatives, depth):
    g = FactGraph(fs)
    rules = (chain_rule(right, e_first, 0.9),) + step_rules(kind)
    limits = Limits(max_depth=depth)
    got = why(Triple(a, "t", b), g, rules, alternatives=alternatives, limits=limits)
    want = why(Triple(a, "t", b), g, rules, alternatives=alternatives, limits=limits, goal_directed=False)
    assert (got is None) == (want is None)
    if got is not None:
        assert got.to_json() == want.to_json()


@settings(max_examples=60, deadline=None)
@given(facts, st.booleans(), st.booleans(), st.sampled_from(("asserted", "derived")), st.sampled_from(SYMBOLS),
       st.booleans())
def test_chain_over_a_memory_mapped_graph_equals_the_full_closure(fs, right, e_first, kind, const, bind_subject):
    # the step facts' cone and the columnar run read the graph file's rows (ids are canonical ranks there)
    rules = (chain_rule(right, e_first, 0.9),) + step_rules(kind)
    s, o = (const, Var("v")) if bind_subject else (Var("v"), const)
    q = Query((QueryPattern(s, PathRel("t"), o),))
    want = dump(evaluate(q, FactGraph(fs), rules, goal_directed=False))
    with tempfile.TemporaryDirectory() as tmp:
        got = evaluate(q, mapped(fs, Path(tmp)), rules, limits=Limits(max_derived=2_000_000, timeout_ms=30_000))
        assert dump(got) == want


def engine_of(fs, rules, pattern, limits=Limits()):
    q = Query((pattern,))
    res = closure(FactGraph(fs), relevant_rules(rules, ["t"]), goals=[q], limits=limits)
    return res.stats.engine


def test_the_chain_engine_answers_both_shapes_and_declines_outside_the_class():
    fs = [Fact("a", "e", "b"), Fact("b", "t", "g")]
    for right in (True, False):
        rules = (chain_rule(right, True, 0.9),)
        assert engine_of(fs, rules, QueryPattern("a", PathRel("t"), Var("v"))) == "chain"
        assert engine_of(fs, rules, QueryPattern(Var("v"), PathRel("t"), "g")) == "chain"
        assert engine_of(fs, rules, QueryPattern("a", PathRel("t"), Var("v")), Limits(max_depth=4)) == "chain"
    for decl in (Declaration("t", "transitive"), Declaration("s", "subrelation_of", "t"),
                 Declaration("t", "symmetric")):
        rules = (chain_rule(True, True, 0.9),) + compile_declarations([decl])
        assert shape_of(rules, "t") is None
        assert engine_of(fs, rules, QueryPattern("a", PathRel("t"), Var("v"))) != "chain"
    # e depending on t: not a chain
    rules = (chain_rule(True, True, 0.9), Rule("back", (Atom(x, "t", y),), Atom(x, "e", y), 0.5))
    assert shape_of(rules, "t") is None


def test_a_chain_by_hand_asserted_facts_win_and_stop_the_chain():
    # a → b → c → d (e steps, 1.0, 0.5, 1.0); b t g @0.1 is asserted, d t g @1.0:
    # b's fact is its own 0.1, so a's is 0.9 × 1.0 × 0.1 = 0.09 (the chain through b to d is cut);
    # c t g = 0.9 × 1.0 × 1.0 = 0.9 (depth 1); a reaches c only through b.
    # a also steps to x (0.5), x t h @1.0: a t h = 0.9 × 0.5 × 1.0 = 0.45, depth 1
    fs = [Fact("a", "e", "b"), Fact("b", "e", "c", 0.5), Fact("c", "e", "d"), Fact("b", "t", "g", 0.1),
          Fact("d", "t", "g"), Fact("a", "e", "x", 0.5), Fact("x", "t", "h")]
    rules = (chain_rule(True, True, 0.9),)
    q = Query((QueryPattern("a", PathRel("t"), Var("v")),))
    res = evaluate(q, FactGraph(fs), rules)
    assert res.stats.engine == "chain"
    got = [(a.bindings["v"], round(a.score, 12), a.proof.depth) for a in res.answers]
    assert got == [("h", 0.45, 1), ("g", 0.09, 1)]
    assert dump(res) == dump(evaluate(q, FactGraph(fs), rules, goal_directed=False))
    q2 = Query((QueryPattern(Var("v"), PathRel("t"), "g"),))   # the goal bound: b keeps 0.1, c 0.9, a 0.09
    res2 = evaluate(q2, FactGraph(fs), rules)
    assert res2.stats.engine == "chain"
    assert sorted((a.bindings["v"], round(a.score, 12)) for a in res2.answers) == [
        ("a", 0.09), ("b", 0.1), ("c", 0.9), ("d", 1.0)]


def test_equal_scores_take_the_shallower_proof_then_the_canonical_premises():
    # a → b → g_end and a → c → d → g_end, all steps 1 and weight 1: equal scores (1.0), depth 2 wins
    # over depth 3; a → p and a → q both one step from an asserted end: depth 1 both, p sorts first
    fs = [Fact("a", "e", "b"), Fact("b", "e", "g1"), Fact("a", "e", "c"), Fact("c", "e", "d"),
          Fact("d", "e", "g1"), Fact("g1", "t", "goal"), Fact("a", "e", "q"), Fact("a", "e", "p"),
          Fact("q", "t", "other"), Fact("p", "t", "other")]
    rules = (chain_rule(True, True, 1.0),)
    q = Query((QueryPattern("a", PathRel("t"), Var("v")),))
    res = evaluate(q, FactGraph(fs), rules)
    assert res.stats.engine == "chain"
    by = {a.bindings["v"]: a.proof for a in res.answers}
    assert by["goal"].depth == 2 and str(by["goal"].premises[0].conclusion) == "a e b"
    assert by["other"].depth == 1 and str(by["other"].premises[0].conclusion) == "a e p"
    assert dump(res) == dump(evaluate(q, FactGraph(fs), rules, goal_directed=False))


def test_a_left_linear_chain_asked_from_its_object():
    # ?x t ?c, ?c e ?y => ?x t ?y @0.5: src t a @0.8 asserted, a e b @0.5, b e c, a e c @0.25:
    # src t b = 0.5 × 0.8 × 0.5 = 0.2 (depth 1); src t c: through b 0.5 × 0.2 × 1.0 = 0.1 (depth 2)
    # against straight from a 0.5 × 0.8 × 0.25 = 0.1 (depth 1): equal scores, the shallower wins
    fs = [Fact("src", "t", "a", 0.8), Fact("a", "e", "b", 0.5), Fact("b", "e", "c"), Fact("a", "e", "c", 0.25)]
    rules = (chain_rule(False, False, 0.5),)
    q = Query((QueryPattern(Var("v"), PathRel("t"), "c"),))   # the node bound (the object): every subject
    res = evaluate(q, FactGraph(fs), rules)
    assert res.stats.engine == "chain"
    (a,) = res.answers
    assert (a.bindings["v"], a.score, a.proof.depth) == ("src", 0.1, 1)
    assert [str(p.conclusion) for p in a.proof.premises] == ["src t a", "a e c"]
    assert dump(res) == dump(evaluate(q, FactGraph(fs), rules, goal_directed=False))


def test_the_default_relevance_rule_is_a_chain():
    fs = [Fact("ide", "uses", "ploinky"), Fact("ploinky", "provides", "sandboxing", 0.95),
          Fact("sandboxing", "relevant_for", "secure_execution", 0.9)]
    q = Query((QueryPattern("ide", PathRel("relevant_for"), Var("g")),))
    res = evaluate(q, FactGraph(fs), default_rules())
    assert res.stats.engine == "chain"
    # docs/closure.md's worked example: 0.9025 × 0.9 × 0.90 = 0.731025, depth 2
    (a,) = res.answers
    assert a.bindings["g"] == "secure_execution" and abs(a.score - 0.731025) < 1e-12 and a.proof.depth == 2
    assert dump(res) == dump(evaluate(q, FactGraph(fs), default_rules(), goal_directed=False))


def test_two_step_rules_of_one_name_keep_the_full_closures_proof():
    # The columnar engine tie-breaks rules that share a name unlike the full closure (closure()
    # leaves them to the reference engine); the chain engine's step facts must do the same.
    x, c, y = Var("x"), Var("c"), Var("y")
    rules = (Rule("rel", (Atom(x, "e", c), Atom(c, "t", y)), Atom(x, "t", y), 0.5),
             Rule("mk", (Atom(x, "b", c),), Atom(x, "e", c), 0.9),
             Rule("mk", (Atom(x, "a", c),), Atom(x, "e", c), 0.9))
    g = FactGraph([Fact("s", "a", "m"), Fact("s", "b", "m"), Fact("m", "t", "goal", 0.8)])
    q = Query((QueryPattern("s", PathRel("t"), Var("g")),))
    limits = Limits(max_nodes=1000)
    got = evaluate(q, g, rules, limits=limits)
    full = closure(g, rules)
    proof = full.derived[Triple("s", "t", "goal")]
    assert got.stats.engine == "chain" and [a.proof for a in got.answers] == [proof]
    assert [p.conclusion for p in proof.premises[0].premises] == [Triple("s", "a", "m")]   # 'a' sorts first


def test_noisy_or_combines_the_best_derivations_through_each_step():
    # a t g @0.1 asserted; a → b (1.0) with b t g @0.5; a → c (0.5) with c t g @1; a → d (0.8), d → c (1.0):
    # derivations of a t g (weight 0.9): via d 0.9 × 0.8 × (0.9 × 1 × 1) = 0.648 (depth 2), via b 0.45,
    # via c 0.45 (depth 1 both: b's premises sort first). k = 2: the two derivations, 1 − 0.352 × 0.55
    # = 0.8064 (the assertion's 0.1 is the weakest); k = 3: with b's, 1 − 0.352 × 0.55 × 0.55 = 0.89352
    fs = [Fact("a", "e", "b"), Fact("a", "e", "c", 0.5), Fact("a", "e", "d", 0.8), Fact("b", "t", "g", 0.5),
          Fact("c", "t", "g"), Fact("d", "e", "c"), Fact("a", "t", "g", 0.1), Fact("d", "t", "h")]
    rules = (chain_rule(True, True, 0.9),)
    q = Query((QueryPattern("a", PathRel("t"), Var("v")),))
    for k, score, via in ((2, 0.8064, ["a e d", "a e b"]), (3, 0.89352, ["a e d", "a e b", "a e c"])):
        res = evaluate(q, FactGraph(fs), rules, aggregate="noisy-or", k=k)
        assert res.stats.engine == "chain"
        a = res.answers[0]
        assert a.bindings["v"] == "g" and abs(a.score - score) < 1e-12
        assert [str(p.premises[0].conclusion) for p in a.proof] == via
        assert dump(res) == dump(evaluate(q, FactGraph(fs), rules, aggregate="noisy-or", k=k, goal_directed=False))
    proof = why(Triple("a", "t", "g"), FactGraph(fs), rules, alternatives=2)
    assert proof.score == 0.1 and [round(p.score, 12) for p in proof.alternatives] == [0.648, 0.45]


def test_a_depth_bound_keeps_the_best_chain_within_it_and_says_when_an_answer_would_change():
    # weight 0.9: s → a (0.5), a t g @0.5: 0.9 × 0.5 × 0.5 = 0.225 at depth 1; s → b → c, c t g @1:
    # b t g = 0.9 (depth 1), s t g = 0.81 (depth 2). max_depth 1: 0.225 and "depth" (round 2 betters
    # it); max_depth 2: 0.81, nothing cut. Noisy-or (k = 2) within depth 1 has the one derivation;
    # within 2, 1 − 0.19 × 0.775 = 0.85275. The goal bound (? ?x t g) at depth 1: a, b, c (asserted
    # a and c, b's 0.9) and s's 0.225, "depth" (s's fact changes in round 2)
    fs = [Fact("s", "e", "a", 0.5), Fact("a", "t", "g", 0.5), Fact("s", "e", "b"), Fact("b", "e", "c"),
          Fact("c", "t", "g")]
    rules = (chain_rule(True, True, 0.9),)
    q = Query((QueryPattern("s", PathRel("t"), Var("v")),))
    for depth, score, cut in ((0, None, "depth"), (1, 0.225, "depth"), (2, 0.81, None), (3, 0.81, None)):
        res = evaluate(q, FactGraph(fs), rules, limits=Limits(max_depth=depth))
        assert res.stats.engine == "chain" and res.truncated == cut
        assert [round(a.score, 12) for a in res.answers] == ([score] if score else [])
        full = evaluate(q, FactGraph(fs), rules, limits=Limits(max_depth=depth), goal_directed=False)
        assert dump(res)[0] == dump(full)[0]
    for depth, score in ((1, 0.225), (2, 0.85275)):
        res = evaluate(q, FactGraph(fs), rules, limits=Limits(max_depth=depth), aggregate="noisy-or", k=2)
        assert res.stats.engine == "chain" and round(res.answers[0].score, 12) == score
    q2 = Query((QueryPattern(Var("v"), PathRel("t"), "g"),))
    res = evaluate(q2, FactGraph(fs), rules, limits=Limits(max_depth=1))
    assert res.stats.engine == "chain" and res.truncated == "depth"
    assert sorted((a.bindings["v"], round(a.score, 12)) for a in res.answers) == [
        ("a", 0.5), ("b", 0.9), ("c", 1.0), ("s", 0.225)]


def test_a_depth_bound_builds_the_step_facts_within_the_chains_reach_only():
    # the default library's shape: cap (x u y, y p z => x e z @0.95), through (x d y, y e z => x e z
    # @0.85, d transitive), t over e @0.9. s u a, a p b: s e b = 0.95 (depth 1); b e c, c t g:
    # b t g = 0.9 (depth 1), s t g = 0.9 × 0.95 × 0.9 = 0.7695 (depth 2), through c, 3 facts from s.
    # s d m, m u p1, p1 p a: m e a = 0.95 (depth 1), s e a = 0.85 × 0.95 = 0.8075 (depth 2); a t k:
    # s t k = 0.9 × 0.8075 = 0.72675 (depth 3). max_depth 2: the derived step facts within 2 facts
    # of s (radius) hold s e b, so s t g; the cone run is 2 more facts wide (4), where s reaches a
    # (k's asserting node) with no chain within the bound: "depth" without the whole cone.
    # max_depth 1: radius 0, the cone within 2 holds s e b and s e a, past the bound. max_depth 3:
    # radius 2 + 4, the cone within 8 leaves z6 and z7 out of the inner run (9 and 10 facts away),
    # but asserted steps are read wherever they are: s reaches z7, whose "far" is past the bound
    # (c → z1 → … → z7 is 7 more steps): "depth" from the near cone
    fs = [Fact("s", "u", "a"), Fact("a", "p", "b"), Fact("b", "e", "c"), Fact("c", "t", "g"), Fact("s", "d", "m"),
          Fact("m", "u", "p1"), Fact("p1", "p", "a"), Fact("a", "t", "k"), Fact("c", "e", "z1"), Fact("z1", "e", "z2"),
          Fact("z2", "e", "z3"), Fact("z3", "e", "z4"), Fact("z4", "e", "z5"), Fact("z5", "e", "z6"),
          Fact("z6", "e", "z7"), Fact("z7", "t", "far")]
    rules = (chain_rule(True, True, 0.9),) + step_rules("derived")
    q = Query((QueryPattern("s", PathRel("t"), Var("v")),))
    from thinkingdb.engine import chain
    for depth, answers, cut, reaches in ((1, [], "depth", [2]), (2, [("g", 0.7695)], "depth", [4]),
                                         (3, [("g", 0.7695), ("k", 0.72675)], "depth", [8])):
        calls = []
        real = chain._cone

        def spy(*args, **kwargs):
            got = real(*args, **kwargs)
            calls.append((args[4] if len(args) > 4 else kwargs.get("reach"), got[3]))
            return got
        with mock.patch.object(chain, "_cone", spy):
            res = evaluate(q, FactGraph(fs), rules, limits=Limits(max_depth=depth))
        assert res.stats.engine == "chain" and res.truncated == cut, depth
        assert [(a.bindings["v"], round(a.score, 12)) for a in res.answers] == answers, depth
        assert [r for r, _ in calls] == reaches and [c for _, c in calls] == [True]
        full = evaluate(q, FactGraph(fs), rules, limits=Limits(max_depth=depth), goal_directed=False)
        assert dump(res)[0] == dump(full)[0] and full.truncated == "depth", depth
    # without the z chain the cone within 8 is the whole cone: one run, nothing cut
    fs2 = fs[:8]
    calls = []
    with mock.patch.object(chain, "_cone", lambda *a, **k: calls.append(a[4] if len(a) > 4 else None) or real(*a, **k)):
        res = evaluate(q, FactGraph(fs2), rules, limits=Limits(max_depth=3))
    assert res.truncated is None and [a.bindings["v"] for a in res.answers] == ["g", "k"] and calls == [8]


def test_noisy_or_successors_replayed_together_keep_each_ones_own_best():
    # weight 1. s → d (0.8), d → x, x t g @0.9: s's best, 0.72. s → f, f → y (0.6), y t g: 0.6.
    # s → c, c → a1 → a2 with a1 t g @0.1 and a2 t g @1: the search from c bounds c by a2 (1.0), but
    # the chain stops at a1 (asserted facts win): 0.1 there; c → a3 (0.5), a3 t g: c's fact is 0.5.
    # c and f are replayed together; c's value falls short of its bound, so c is searched on its own.
    # k = 3: 1 − 0.28 × 0.4 × 0.5 = 0.944 (with c's short value 0.1 it would be 0.8992)
    fs = [Fact("s", "e", "d", 0.8), Fact("d", "e", "x"), Fact("x", "t", "g", 0.9), Fact("s", "e", "f"),
          Fact("f", "e", "y", 0.6), Fact("y", "t", "g"), Fact("s", "e", "c"), Fact("c", "e", "a1"),
          Fact("a1", "t", "g", 0.1), Fact("a1", "e", "a2"), Fact("a2", "t", "g"), Fact("c", "e", "a3", 0.5),
          Fact("a3", "t", "g")]
    rules = (chain_rule(True, True, 1.0),)
    q = Query((QueryPattern("s", PathRel("t"), Var("v")),))
    res = evaluate(q, FactGraph(fs), rules, aggregate="noisy-or", k=3)
    assert res.stats.engine == "chain" and round(res.answers[0].score, 12) == 0.944
    assert [str(p.premises[0].conclusion) for p in res.answers[0].proof] == ["s e d", "s e f", "s e c"]
    assert dump(res) == dump(evaluate(q, FactGraph(fs), rules, aggregate="noisy-or", k=3, goal_directed=False))
