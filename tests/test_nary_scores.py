"""How an n-ary fact's confidence and a derived statement's score combine: the statement node's first
role edge carries it, the other role edges score 1, so matching the whole statement scores exactly
what the statement does -- asserted or derived (hand-computed values)."""

from __future__ import annotations

import pytest

from thinkingdb.engine.closure import closure
from thinkingdb.engine.graph import FactGraph
from thinkingdb.engine.proofs import check_proof
from thinkingdb.engine.query import evaluate
from thinkingdb.language import compile_source, parse_query
from thinkingdb.model import Triple

SOURCE = """
flight(QA, syd, mel) @0.8. flight(QA, syd, mel) @0.6. flight(VA, syd, per) @0.5. flight(QA, per, syd).
rule qa @0.9: flight(QA, ?x, ?y) => qa_only(?x, ?y).
rule hop @0.5: qa_only(?x, ?y), qa_only(?y, ?z) => route(?x, ?y, ?z).
"""


@pytest.fixture(scope="module")
def kb():
    p = compile_source(SOURCE)
    return FactGraph([f for f, _ in p.facts]), [r for r, _ in p.rules]


def scores(kb, text: str) -> dict:
    g, rules = kb
    return {tuple(a.bindings.values()): a.score for a in evaluate(parse_query(text), g, rules).answers}


def test_an_asserted_statement_scores_its_confidence_on_role_one(kb):
    g, _ = kb
    # the confidence sits on the first role edge (the maximum of the assertions), the others on 1
    assert g.confidence(Triple("flight(qa,syd,mel)", "flight.1", "qa")) == 0.8
    assert g.confidence(Triple("flight(qa,syd,mel)", "flight.2", "syd")) == 1.0
    assert g.confidence(Triple("flight(qa,syd,mel)", "flight.3", "mel")) == 1.0
    assert scores(kb, "? flight(?c, syd, ?to)") == {("qa", "mel"): 0.8, ("va", "per"): 0.5}


def test_a_derived_statement_scores_weight_times_premises_not_a_power_of_it(kb):
    got = scores(kb, "? qa_only(?x, ?y)")
    assert got == pytest.approx({("syd", "mel"): 0.9 * 0.8, ("per", "syd"): 0.9 * 1.0})
    # roles 2.. of a derived statement score 1, like an asserted one's
    assert scores(kb, "? ?n qa_only.2 ?y") == {("qa_only(syd,mel)", "mel"): 1.0, ("qa_only(per,syd)", "syd"): 1.0}
    # a statement built on statements: 0.5 x (0.9 x 1.0) x (0.9 x 0.8) = 0.324
    assert scores(kb, "? route(?x, ?y, ?z)") == pytest.approx({("per", "syd", "mel"): 0.5 * 0.9 * 0.9 * 0.8})


def test_every_proof_of_a_statement_edge_checks(kb):
    g, rules = kb
    res = closure(g, rules)
    for t in res.derived:
        proof = res.proof(t)
        assert check_proof(proof, rules, g.confidence) == []
        assert proof.score == (1.0 if t.relation.endswith((".2", ".3")) else res.score(t))
