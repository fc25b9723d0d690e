"""Arithmetic and comparisons in rule bodies: values against hand-computed ones and a plain-Python
oracle, assignments in any written order, proofs that show each step (and a re-check that catches a
forged one), bounds on recursion through arithmetic, why-not, the store and the query path."""

from __future__ import annotations

import itertools
import operator

import pytest
from hypothesis import given, settings, strategies as st

from thinkingdb.arith import Arith, Constraint, evaluate, holds
from thinkingdb.engine.closure import closure
from thinkingdb.engine.graph import FactGraph
from thinkingdb.engine.proofs import Proof, check_proof
from thinkingdb.engine.whynot import why_not
from thinkingdb.errors import ParseError, ValidationError
from thinkingdb.language import compile_source
from thinkingdb.model import Atom, Limits, Rule, Triple, Var


def run(text: str, limits: Limits = Limits()):
    p = compile_source(text)
    g = FactGraph([f for f, _ in p.facts])
    rules = [r for r, _ in p.rules]
    return closure(g, rules, limits=limits), g, rules


def derived(res, relation: str) -> set[tuple[str, str]]:
    return {(t.subject, t.object) for t in res.derived if t.relation == relation}


def test_hand_computed_values_of_each_operator():
    res, _, _ = run("""
        a x 7. a y 2. b x -7. b y 3. c x 6. c y 3. d x 1.5. d y 0.5. e x 4. e y 0.
        rule add: ?p x ?a, ?p y ?b, ?v = ?a + ?b => ?p add ?v.
        rule sub: ?p x ?a, ?p y ?b, ?v = ?a - ?b => ?p sub ?v.
        rule mul: ?p x ?a, ?p y ?b, ?v = ?a * ?b => ?p mul ?v.
        rule div: ?p x ?a, ?p y ?b, ?v = ?a / ?b => ?p div ?v.
        rule mod: ?p x ?a, ?p y ?b, ?v = ?a % ?b => ?p mod ?v.
    """)
    assert derived(res, "add") == {("a", "9"), ("b", "-4"), ("c", "9"), ("d", "2.0"), ("e", "4")}
    assert derived(res, "sub") == {("a", "5"), ("b", "-10"), ("c", "3"), ("d", "1.0"), ("e", "4")}
    assert derived(res, "mul") == {("a", "14"), ("b", "-21"), ("c", "18"), ("d", "0.75"), ("e", "0")}
    # exact division is an integer, inexact a decimal; division by zero has no value (e: no fact)
    assert derived(res, "div") == {("a", "3.5"), ("b", "-2.3333333333333335"), ("c", "2"), ("d", "3.0")}
    # the remainder takes the divisor's sign: -7 % 3 = 2
    assert derived(res, "mod") == {("a", "1"), ("b", "2"), ("c", "0"), ("d", "0.0")}


def test_precedence_and_left_associativity():
    res, _, _ = run("""
        s n 0.
        rule r1: ?s n ?z, ?v = 1 - 2 - 3 => ?s r1 ?v.
        rule r2: ?s n ?z, ?v = 2 + 3 * 4 => ?s r2 ?v.
        rule r3: ?s n ?z, ?v = (2 + 3) * 4 => ?s r3 ?v.
        rule r4: ?s n ?z, ?v = 1 - (2 - 3) => ?s r4 ?v.
        rule r5: ?s n ?z, ?v = 20 / 2 / 5 => ?s r5 ?v.
    """)
    assert {r: derived(res, r) for r in ("r1", "r2", "r3", "r4", "r5")} == {
        "r1": {("s", "-4")}, "r2": {("s", "14")}, "r3": {("s", "20")}, "r4": {("s", "2")}, "r5": {("s", "2")}}


def test_comparisons_filter_numbers_by_value_and_symbols_by_key():
    res, _, _ = run("""
        a v 3. b v 3.0. c v 10. d v nginx. e v -1.
        rule small: ?x v ?n, ?n < 5 => ?x small yes.
        rule three: ?x v ?n, ?n = 3 => ?x three yes.
        rule other: ?x v ?n, ?n != nginx => ?x other yes.
        rule named: ?x v ?n, ?n = nginx => ?x named yes.
    """)
    assert derived(res, "small") == {("a", "yes"), ("b", "yes"), ("e", "yes")}   # nginx < 5 does not hold
    assert derived(res, "three") == {("a", "yes"), ("b", "yes")}                 # 3 = 3.0
    assert derived(res, "other") == {("a", "yes"), ("b", "yes"), ("c", "yes"), ("e", "yes")}
    assert derived(res, "named") == {("d", "yes")}


def test_arithmetic_on_a_symbol_that_is_no_number_drops_the_match():
    res, _, _ = run("a v 2. b v two. rule r: ?x v ?n, ?m = ?n + 1 => ?x next ?m.")
    assert derived(res, "next") == {("a", "3")}


def test_negative_numbers_are_their_own_symbols():
    res, _, _ = run("a v -4. b v 4. rule r: ?x v ?n, ?n < 0 => ?x negative yes.")
    assert derived(res, "negative") == {("a", "yes")}


def test_assignments_run_in_dependency_order_whatever_the_written_order():
    written = ["?w = ?v * 2", "?v = ?a + 1", "?w < 10"]
    for perm in itertools.permutations(written):
        res, _, _ = run(f"p n 3. q n 4. rule r: ?x n ?a, {', '.join(perm)} => ?x m ?w.")
        assert derived(res, "m") == {("p", "8")}, perm   # q: (4 + 1) * 2 = 10, not < 10


def test_an_assigned_variable_can_feed_a_not_premise():
    res, _, _ = run("""
        a n 1. b n 2. a2 seen 2.
        rule r: ?x n ?a, ?b = ?a + 1, not ?b taken yes => ?x free ?b.
        3 taken yes.
    """)
    assert derived(res, "free") == {("a", "2")}   # b: 2 + 1 = 3 is taken


OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul}
CMPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "=": operator.eq,
        "!=": operator.ne}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-50, 50), st.integers(-50, 50)), min_size=1, max_size=8),
       st.sampled_from(sorted(OPS)), st.sampled_from(sorted(CMPS)), st.integers(-60, 60))
def test_integer_arithmetic_matches_plain_python(pairs, op, cmp, bound):
    facts = " ".join(f"n{i} a {a}. n{i} b {b}." for i, (a, b) in enumerate(pairs))
    res, g, rules = run(f"{facts} rule r: ?x a ?p, ?x b ?q, ?v = ?p {op} ?q, ?v {cmp} {bound} => ?x out ?v.")
    expected = {(f"n{i}", str(OPS[op](a, b))) for i, (a, b) in enumerate(pairs) if CMPS[cmp](OPS[op](a, b), bound)}
    assert derived(res, "out") == expected
    asserted = {f.triple: f.confidence for f in g.facts()}
    for t in res.derived:
        assert check_proof(res.proof(t), rules, asserted.get) == []


def test_a_proof_shows_each_comparison_and_assignment_with_its_values():
    res, g, rules = run("y val 7. rule half: ?p val ?v, ?h = ?v / 2, ?h > 3 => ?p half ?h.")
    proof = res.proof(Triple("y", "half", "3.5"))
    assert proof.to_text() == ("y half 3.5  [score 1, depth 1, rule half @1]\n"
                               "├── y val 7  [score 1, asserted]\n"
                               "├── 3.5 = 7 / 2  [holds]\n"
                               "└── 3.5 > 3  [holds]")
    assert [p.kind for p in proof.premises] == ["asserted", "check", "check"]
    assert proof.to_json()["premises"][1] == {"fact": None, "score": 1.0, "depth": 0, "kind": "check",
                                              "rule": "3.5 = 7 / 2", "weight": 1.0, "premises": []}
    asserted = {f.triple: f.confidence for f in g.facts()}
    assert check_proof(proof, rules, asserted.get) == []
    forged = Proof.derived(Triple("y", "half", "4"), "half", 1.0,
                           (proof.premises[0], Proof.check("4 = 7 / 2"), Proof.check("4 > 3")))
    assert check_proof(forged, rules, asserted.get) == ["y half 4: premises do not match rule half"]


def test_recursion_through_arithmetic_stops_at_a_bound_and_says_so():
    text = "z n 0. rule up: ?x n ?a, ?b = ?a + 1 => ?x n ?b."
    res, _, _ = run(text, Limits(max_derived=40))
    assert res.truncated == "derived" and len(derived(res, "n")) == 40
    res, _, _ = run(text, Limits(max_depth=5))
    assert res.truncated == "depth" and derived(res, "n") == {("z", str(i)) for i in range(1, 6)}


def test_fibonacci_with_a_guard_reaches_its_fixpoint():
    res, _, _ = run("""
        fib(0, 0). fib(1, 1).
        rule f: fib(?a, ?x), fib(?b, ?y), ?b = ?a + 1, ?n = ?a + 2, ?n <= 25, ?z = ?x + ?y => fib(?n, ?z).
    """)
    fib = [0, 1]
    while len(fib) <= 25:
        fib.append(fib[-1] + fib[-2])
    got = {}
    for s, o in derived(res, "fib.2"):
        got[s] = o
    assert res.truncated is None
    assert got == {f"fib({n},{fib[n]})": str(fib[n]) for n in range(2, 26)}


def test_why_not_names_the_comparison_that_failed_with_its_values():
    res, g, rules = run("a v 3. b v 9. rule small: ?x v ?n, ?n < 5 => ?x small yes.")
    w = why_not(Triple("b", "small", "yes"), g, rules)
    assert not w.holds
    assert w.failures[0].kind == "comparison"
    assert w.to_text().splitlines()[1] == "rule small: every premise matches, but ?n < 5 (with ?n=9) does not hold"


def test_model_refuses_a_constraint_on_an_unbound_variable():
    x, n = Var("x"), Var("n")
    with pytest.raises(ValidationError, match="variable \\?n of '\\?n < 5' is bound by no premise"):
        Rule("r", (Atom(x, "a", "b"),), Atom(x, "c", "d"), constraints=(Constraint("<", n, "5"),))
    with pytest.raises(ValidationError, match="assigns \\?x, which is already bound"):
        Rule("r", (Atom(x, "a", "b"),), Atom(x, "c", "d"), constraints=(Constraint(":=", x, "5"),))


def test_unbound_variable_errors_name_line_and_column():
    with pytest.raises(ParseError) as info:
        compile_source("a b c.\nrule r: ?x a ?y,\n  ?n <= 25 => ?x b ?y.", "f.tdb")
    d = info.value.diagnostics[0]
    assert (d.source, d.line, d.column, d.code) == ("f.tdb", 3, 3, "unbound_variable")


def test_evaluator_edge_cases():
    v = Var("v")
    assert evaluate(Arith("/", "1", "0"), {}) is None
    assert evaluate(Arith("*", "1" + "0" * 60, "1" + "0" * 60), {}) is None   # more than 100 digits
    assert evaluate(Arith("+", v, "1"), {v: "x"}) is None
    assert holds(">=", "2.5", "2") and not holds("<", "b", "c") and holds("!=", "b", "c")


def test_rules_with_arithmetic_survive_the_store_and_answer_queries(tmp_path):
    from thinkingdb.api import KnowledgeBase
    src = tmp_path / "ages.tdb"
    src.write_text("ann born 1990. bob born 2010.\n"
                   "rule age: ?p born ?y, ?a = 2026 - ?y => ?p age ?a.\n"
                   "rule adult: ?p age ?a, ?a >= 18 => ?p is adult.\n", encoding="utf-8")
    path = tmp_path / "kb.sqlite"
    with KnowledgeBase(str(path)) as kb:
        kb.ingest([str(src)])
    with KnowledgeBase(str(path), create=False) as kb:
        ages = {(a.bindings["p"], a.bindings["a"]) for a in kb.query("? ?p age ?a")}
        adults = {a.bindings["p"] for a in kb.query("? ?p is adult")}
        proof = kb.why("ann age 36")
    assert ages == {("ann", "36"), ("bob", "16")}
    assert adults == {"ann"}
    assert "36 = 2026 - 1990  [holds]" in proof.to_text()
