"""Goal-directed evaluation (``thinkingdb.engine.demand``, ``thinkingdb.engine.reach``) against the
full closure: on generated programs — recursive, non-linear and mutually recursive rules,
declarations, cycles, constants only in rule heads, premises sharing no variable — and generated
queries with every binding pattern (conjunctions mixing components, property paths), the answers,
scores (best and noisy-or) and proofs are those of the full closure, under every depth bound; a
run that reports no truncation has every answer the unbounded closure has."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from thinkingdb.engine.closure import closure
from thinkingdb.engine.graph import FactGraph
from thinkingdb.engine.query import evaluate, why
from thinkingdb.engine.rules import compile_declarations
from thinkingdb.model import (Atom, Declaration, Fact, Limits, PathAlt, PathInv, PathRel, PathRepeat, PathSeq, Query,
                              QueryPattern, Rule, Triple, Var)

from strategies import RELATIONS, SYMBOLS, VARS, WEIGHTS, declarations, facts

HEAD_ONLY = "k"   # a symbol no fact mentions: it exists only as a rule-head constant
QVARS = (Var("u"), Var("v"), Var("w"))


@st.composite
def rules(draw):
    """Premises over variables and sometimes a constant; premises need not share a variable; the
    head may hold a constant, including one no fact mentions."""
    n = draw(st.integers(1, 3))
    term = st.one_of(*[st.sampled_from(VARS[:n + 1])] * 4, st.sampled_from(SYMBOLS[:2]))
    premises = tuple(Atom(draw(term), draw(st.sampled_from(RELATIONS)), draw(term)) for _ in range(n))
    body = sorted({v for p in premises for v in p.variables()})
    head_term = st.one_of(*[st.sampled_from(body)] * 3, st.sampled_from((SYMBOLS[0], HEAD_ONLY))) if body \
        else st.sampled_from((SYMBOLS[0], HEAD_ONLY))
    head = Atom(draw(head_term), draw(st.sampled_from(RELATIONS)), draw(head_term))
    return Rule(f"rule{draw(st.integers(0, 10**6))}", premises, head, draw(st.sampled_from(WEIGHTS)))


paths = st.one_of(
    *[st.builds(PathRel, st.sampled_from(RELATIONS))] * 4,
    st.builds(lambda r: PathInv(PathRel(r)), st.sampled_from(RELATIONS)),
    st.recursive(st.builds(PathRel, st.sampled_from(RELATIONS)), lambda inner: st.one_of(
        st.builds(PathInv, inner),
        st.builds(lambda a, b: PathSeq((a, b)), inner, inner),
        st.builds(lambda a, b: PathAlt((a, b)), inner, inner),
        st.builds(lambda p, m, plus: PathRepeat(p, m, None if plus else m + 1), inner, st.integers(0, 1), st.booleans())),
        max_leaves=3))

terms = st.one_of(st.sampled_from(QVARS), st.sampled_from(QVARS), st.sampled_from(SYMBOLS + (HEAD_ONLY,)))
queries = st.lists(st.builds(QueryPattern, terms, paths, terms), min_size=1, max_size=2).map(lambda ps: Query(tuple(ps)))


def program(draw_rules, decls):
    return tuple(draw_rules) + compile_declarations(decls)


def dump(res):
    return [a.to_json() for a in res.answers]


@settings(max_examples=120)
@given(facts(max_size=12), st.lists(rules(), max_size=3, unique_by=lambda r: r.name), declarations(), queries,
       st.sampled_from([None, 0, 1, 2, 3]), st.sampled_from(["best", "noisy-or"]))
def test_goal_directed_equals_the_full_closure(fs, rs, decls, q, depth, aggregate):
    g, rule_set, limits = FactGraph(fs), program(rs, decls), Limits(max_depth=depth)
    got = evaluate(q, g, rule_set, limits=limits, aggregate=aggregate, k=2)
    want = evaluate(q, g, rule_set, limits=limits, aggregate=aggregate, k=2, goal_directed=False)
    assert dump(got) == dump(want)
    if depth is None:
        assert got.truncated is None and want.truncated is None
    elif got.truncated is None:   # nothing cut: these are all the answers there are, with their best proofs
        unbounded = evaluate(q, g, rule_set, goal_directed=False)
        best = evaluate(q, g, rule_set, limits=limits)
        assert dump(best) == dump(unbounded)
        # (noisy-or may still gain deeper alternative derivations of a fact: "depth" is about facts)
    else:
        assert got.truncated == "depth" and want.truncated == "depth"


@settings(max_examples=60)
@given(facts(max_size=12), st.lists(rules(), max_size=3, unique_by=lambda r: r.name), declarations(),
       st.sampled_from(SYMBOLS + (HEAD_ONLY,)), st.sampled_from(RELATIONS), st.sampled_from(SYMBOLS + (HEAD_ONLY,)),
       st.integers(0, 2), st.sampled_from([None, 1, 2]))
def test_why_goal_directed_equals_the_full_closure(fs, rs, decls, s, r, o, alternatives, depth):
    g, rule_set, t = FactGraph(fs), program(rs, decls), Triple(s, r, o)
    limits = Limits(max_depth=depth)
    got = why(t, g, rule_set, alternatives=alternatives, limits=limits)
    want = why(t, g, rule_set, alternatives=alternatives, limits=limits, goal_directed=False)
    assert (got is None) == (want is None)
    if got is not None:
        assert got.to_json() == want.to_json()


LIMITS = [Limits(), Limits(max_derived=10_000), Limits(timeout_ms=600_000), Limits(max_nodes=1_000),
          Limits(max_derived=2_000_000, timeout_ms=30_000), Limits(max_nodes=1_000, max_derived=10_000, timeout_ms=600_000)]


@settings(max_examples=60)
@given(facts(relations=("r", "s"), confidences=(1.0,), max_size=16), st.sampled_from([1.0, 0.5]),
       st.lists(st.builds(QueryPattern, terms, st.sampled_from([PathRel("r"), PathInv(PathRel("r")),
                                                                   PathRepeat(PathRel("r"), 1, None),
                                                                   PathRepeat(PathRel("r"), 0, None),
                                                                   PathSeq((PathRel("r"), PathRel("s")))]), terms),
                min_size=1, max_size=2))
def test_fast_paths_under_every_limits_setting(fs, conf, patterns):
    # a transitive relation fed by a subrelation: the single-source path, the full fast path and the
    # general goal-directed engine (which a node bound selects) agree under every bound that is not reached
    fs = [f if f.relation == "r" else Fact(f.subject, f.relation, f.object, conf) for f in fs]
    g = FactGraph(fs)
    rule_set = compile_declarations([Declaration("r", "transitive"), Declaration("s", "subrelation_of", "r")])
    q = Query(tuple(patterns))
    want = dump(evaluate(q, g, rule_set, goal_directed=False))
    for limits in LIMITS:
        got = evaluate(q, g, rule_set, limits=limits)
        assert got.truncated is None
        assert dump(got) == want, limits
    full = closure(g, rule_set)
    for limits in LIMITS:
        res = closure(g, rule_set, limits=limits)
        assert res.truncated is None and res.stats.engine == full.stats.engine
        assert {t: p.to_json() for t, p in res.derived.items()} == {t: p.to_json() for t, p in full.derived.items()}


def test_a_transitive_question_is_a_single_source_search():
    # a chain a → b → c → d plus a long chain elsewhere: `a r ?y` reaches 4 symbols, never the others
    fs = [Fact("a", "r", "b"), Fact("b", "r", "c"), Fact("c", "r", "d")]
    fs += [Fact(f"x{i}", "r", f"x{i + 1}") for i in range(50)] + [Fact("x0", "r", "a")]
    g = FactGraph(fs)
    rule_set = compile_declarations([Declaration("r", "transitive")])
    q = Query((QueryPattern("a", PathRel("r"), Var("y")),))
    res = evaluate(q, g, rule_set, limits=Limits(max_derived=2_000_000, timeout_ms=30_000))
    assert [a.bindings["y"] for a in res.answers] == ["b", "c", "d"]
    assert res.stats.engine == "transitive" and res.stats.nodes == 4
    # under a depth bound the columnar engine runs, on the demanded facts only
    bounded = evaluate(q, g, rule_set, limits=Limits(max_depth=1))
    assert [a.bindings["y"] for a in bounded.answers] == ["b", "c"]   # walks of at most 2 edges
    assert bounded.truncated == "depth"
    assert bounded.stats.engine == "columnar" and bounded.stats.nodes <= 4


def test_a_conjunction_passes_its_bindings_on():
    # `a r ?y, ?y s ?z`: the second pattern is asked only for the y the first one found
    fs = [Fact("a", "r", "b"), Fact("b", "s", "c")] + [Fact(f"p{i}", "s", f"q{i}") for i in range(30)]
    x, y, z = Var("x"), Var("y"), Var("z")
    rule_set = (Rule("copy", (Atom(x, "s", y),), Atom(x, "t", y)),)
    q = Query((QueryPattern("a", PathRel("r"), y), QueryPattern(y, PathRel("t"), z)))
    res = evaluate(q, FactGraph(fs), rule_set)
    assert [(a.bindings["y"], a.bindings["z"]) for a in res.answers] == [("b", "c")]
    assert res.stats.derived == 1 and res.stats.nodes == 3   # b t c only; a, b and c in scope


def test_the_closure_lane_is_goal_directed():
    # kb-thinkingdb's closure lane asks for the derived facts touching a query symbol: the chain
    # achilleside uses ploinky provides sandboxing relevant_for secure_execution is found, and the 200
    # tools hanging off ploinky by a relation no rule reads are never touched
    from thinkingdb.retrieval.expansion import expand
    x, y, z, c, goal = (Var(n) for n in ("x", "y", "z", "c", "g"))
    rule_set = (Rule("capability", (Atom(x, "uses", y), Atom(y, "provides", z)), Atom(x, "has_capability", z), 0.95),
                Rule("relevance", (Atom(x, "has_capability", c), Atom(c, "relevant_for", goal)),
                     Atom(x, "relevant_for", goal), 0.90))
    chain = [Fact("achilleside", "uses", "ploinky", 1.0), Fact("ploinky", "provides", "sandboxing", 0.95),
             Fact("sandboxing", "relevant_for", "secure_execution", 0.9)]
    g = FactGraph(chain + [Fact("ploinky", "used_by", f"tool{i}") for i in range(200)])
    unit_facts = {f"u{i}": [(f.triple, f.confidence)] for i, f in enumerate(chain)}
    fact_units = {f.triple: {f"u{i}": f.confidence} for i, f in enumerate(chain)}
    ex = expand(g, rule_set, unit_facts, fact_units, lambda _u: True, [], ["achilleside", "secure_execution"],
                ["relevant_for"], depth=2, max_nodes=50, max_derived=1000, timeout_ms=60_000, partial_weight=0.5)
    assert sorted(ex.credits) == ["u0", "u1", "u2"]
    for uid in ("u0", "u1", "u2"):   # 1.0 × 0.95 × 0.95 × 0.9 × 0.90, the exact tier
        assert ex.credits[uid].tier == "exact" and abs(ex.credits[uid].score - 0.731025) < 1e-12
    assert ex.truncated is None
    assert ex.stats["nodes"] == 4   # achilleside, ploinky, sandboxing, secure_execution


def test_single_source_over_a_mapped_graph(tmp_path):
    # reopened, the store's graph is memory-mapped: reach runs on its CSR arrays; same answers as the
    # full closure over the same graph
    import random
    from thinkingdb.api import open_kb
    rnd = random.Random(3)
    src = tmp_path / "deps.tdb"
    src.write_text("".join(f"n{rnd.randrange(40)} depends_on n{rnd.randrange(40)}.\n" for _ in range(120)))
    with open_kb(str(tmp_path / "kb.sqlite")) as kb:
        kb.ingest([str(src)])
    with open_kb(str(tmp_path / "kb.sqlite")) as kb:
        g, rule_set = kb.graph, kb.rules
        for text in ("? n5 depends_on ?x.", "? ?x depends_on n7.", "? n5 depends_on ?x, ?x depends_on n7."):
            q = kb.parse_query(text)
            got = evaluate(q, g, rule_set)
            assert got.stats.engine == "transitive"
            assert dump(got) == dump(evaluate(q, g, rule_set, goal_directed=False))
