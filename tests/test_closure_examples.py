"""Worked examples with hand-checked values (issue 3), the default library, declarations, exports."""

from __future__ import annotations

import json
import math

import pytest

from thinkingdb.engine.closure import closure
from thinkingdb.engine.graph import FactGraph
from thinkingdb.model import Atom, Declaration, Fact, Limits, PathRel, Query, QueryPattern, Rule, Triple, Var
from thinkingdb.engine.proofs import check_proof
from thinkingdb.engine.query import evaluate, noisy_or, why
from thinkingdb.engine.rules import compile_declarations, default_rules, default_rules_text

X, Y, Z, C, G = (Var(n) for n in "xyzcg")
CAPABILITY = Rule("capability", (Atom(X, "uses", Y), Atom(Y, "provides", Z)), Atom(X, "has_capability", Z), 0.95)
RELEVANCE = Rule("relevance", (Atom(X, "has_capability", C), Atom(C, "relevant_for", G)), Atom(X, "relevant_for", G), 0.90)
RULES = (CAPABILITY, RELEVANCE)
FACTS = [Fact("achilleside", "uses", "ploinky", 1.0), Fact("ploinky", "provides", "sandboxing", 0.95),
         Fact("sandboxing", "relevant_for", "secure_execution", 0.9)]
GOAL = Triple("achilleside", "relevant_for", "secure_execution")


def q(s, rel, o):
    return Query((QueryPattern(s, PathRel(rel), o),))


@pytest.fixture
def graph():
    return FactGraph(FACTS)


def test_worked_example_scores_and_depths(graph):
    res = closure(graph, RULES)
    cap = Triple("achilleside", "has_capability", "sandboxing")
    assert res.score(cap) == pytest.approx(0.9025, abs=1e-12)          # 1.0 × 0.95 × 0.95
    assert res.score(GOAL) == pytest.approx(0.731025, abs=1e-12)       # 0.9025 × 0.9 × 0.90
    assert res.depth(cap) == 1 and res.depth(GOAL) == 2
    proof = res.proof(GOAL)
    assert proof.rule == "relevance"
    assert [p.conclusion for p in proof.premises] == [cap, Triple("sandboxing", "relevant_for", "secure_execution")]
    assert [p.conclusion for p in proof.premises[0].premises] == [f.triple for f in FACTS[:2]]
    assert check_proof(proof, RULES, graph.confidence) == []


def test_worked_example_seeded_depth_bound(graph):
    assert GOAL not in closure(graph, RULES, seeds=["achilleside"], limits=Limits(max_depth=1)).derived
    res = closure(graph, RULES, seeds=["achilleside"], limits=Limits(max_depth=1))
    assert res.truncated == "depth"
    res = closure(graph, RULES, seeds=["achilleside"], limits=Limits(max_depth=2))
    assert res.truncated is None and res.score(GOAL) == pytest.approx(0.731025)


def test_asserted_fact_stays_an_answer_with_its_confidence(graph):
    graph.add(Fact("achilleside", "relevant_for", "secure_execution", 0.6))
    res = evaluate(q("achilleside", "relevant_for", G), graph, RULES)
    assert [(a.bindings, a.score) for a in res.answers] == [({"g": "secure_execution"}, 0.6)]
    assert res.answers[0].proof.kind == "asserted"
    noisy = evaluate(q("achilleside", "relevant_for", G), graph, RULES, aggregate="noisy-or")
    # 1 - (1 - 0.731025)(1 - 0.6) = 0.89241
    assert noisy.answers[0].score == pytest.approx(0.89241, abs=1e-12)
    assert len(noisy.answers[0].proof) == 2


def test_noisy_or_ranks_many_proofs_above_one():
    facts = [Fact("tool_a", "uses", f"lib{i}", 0.7) for i in range(3)]
    facts += [Fact(f"lib{i}", "provides", "sandboxing", 0.7) for i in range(3)]
    facts += [Fact("tool_b", "uses", "lib9", 0.8), Fact("lib9", "provides", "sandboxing", 0.8)]
    g = FactGraph(facts)
    query = q(X, "has_capability", "sandboxing")
    best = evaluate(query, g, RULES)
    assert [a.bindings["x"] for a in best.answers] == ["tool_b", "tool_a"]
    combined = evaluate(query, g, RULES, aggregate="noisy-or", k=5)
    assert [a.bindings["x"] for a in combined.answers] == ["tool_a", "tool_b"]
    one = 0.7 * 0.7 * 0.95
    assert combined.answers[0].score == pytest.approx(noisy_or([one] * 3))


def test_why_and_exports(graph):
    proof = why(GOAL, graph, RULES)
    assert proof.score == pytest.approx(0.731025)
    text = proof.to_text({"achilleside": "AchillesIDE", "secure_execution": "secure execution"})
    assert text.splitlines()[0] == "AchillesIDE relevant_for secure execution  [score 0.731025, depth 2, rule relevance @0.9]"
    doc = json.loads(json.dumps(proof.to_json()))
    assert doc["rule"] == "relevance" and doc["premises"][0]["premises"][1]["score"] == 0.95
    dot = proof.to_dot()
    assert dot.startswith("digraph proof {") and dot.count("->") == 4
    assert why(Triple("ploinky", "relevant_for", "secure_execution"), graph, RULES) is None


def test_declarations_compile():
    rules = compile_declarations([Declaration("part_of", "inverse", "has_part"),
                                  Declaration("positively_regulates", "subrelation_of", "regulates"),
                                  Declaration("neighbor_of", "symmetric")])
    g = FactGraph([Fact("wheel", "part_of", "car"), Fact("x", "positively_regulates", "y", 0.7),
                   Fact("fr", "neighbor_of", "de")])
    res = closure(g, rules)
    assert res.score(Triple("car", "has_part", "wheel")) == 1.0
    assert res.score(Triple("x", "regulates", "y")) == 0.7
    assert res.score(Triple("de", "neighbor_of", "fr")) == 1.0
    assert all(r.weight == 1.0 for r in rules)


def test_default_library_parses_and_reasons():
    assert "rule capability @0.95" in default_rules_text()
    rules = default_rules()
    names = {r.name for r in rules}
    assert {"capability", "relevance", "provider", "dependency_support", "capability_through_dependency",
            "causal_chain", "depends_on_transitive"} <= names
    g = FactGraph([Fact("app", "depends_on", "nginx"), Fact("nginx", "depends_on", "openssl"),
                   Fact("openssl", "uses", "aesni"), Fact("aesni", "provides", "encryption", 0.8),
                   Fact("smoke", "causes", "fire"), Fact("fire", "causes", "damage")])
    res = closure(g, rules)
    assert res.score(Triple("app", "depends_on", "openssl")) == 1.0
    assert res.score(Triple("openssl", "supports", "nginx")) == pytest.approx(0.9)
    # app -> openssl (1.0) ; openssl has_capability encryption 0.95 × 0.8 ; through dependency × 0.85
    assert res.score(Triple("app", "has_capability", "encryption")) == pytest.approx(0.85 * 0.95 * 0.8)
    assert res.score(Triple("smoke", "causes", "damage")) == pytest.approx(0.9)


def test_rule_constants_and_unknown_relations():
    rule = Rule("docker", (Atom(X, "uses", "docker"),), Atom(X, "relevant_for", "containers"), 0.8)
    g = FactGraph([Fact("svc", "uses", "docker")])
    res = closure(g, [rule], seeds=["svc"])
    assert res.score(Triple("svc", "relevant_for", "containers")) == pytest.approx(0.8)
    res = closure(g, [rule], seeds=["svc"], limits=Limits(max_nodes=2))
    assert res.truncated == "nodes" and len(res.derived) == 0   # "containers" would be a third symbol
    assert evaluate(q("svc", "never_seen", X), g, [rule]).answers == []


def test_max_derived_is_reported_and_canonical():
    g = FactGraph([Fact(f"n{i}", "r", f"n{i + 1}") for i in range(6)])
    rules = compile_declarations([Declaration("r", "transitive")])
    res = closure(g, rules, limits=Limits(max_derived=3))
    assert res.truncated == "derived" and len(res.derived) == 3
    assert [str(t) for t in res.derived] == ["n0 r n2", "n1 r n3", "n2 r n4"]


def test_alternatives_are_distinct_and_sorted():
    g = FactGraph([Fact("a", "uses", "b", 0.9), Fact("b", "provides", "z"), Fact("a", "uses", "c", 0.5),
                   Fact("c", "provides", "z")])
    res = closure(g, RULES, alternatives=3)
    proof = res.proof(Triple("a", "has_capability", "z"))
    assert proof.score == pytest.approx(0.9 * 0.95)
    assert [p.score for p in proof.alternatives] == [pytest.approx(0.5 * 0.95)]
    assert proof.alternatives[0].premises[0].conclusion == Triple("a", "uses", "c")
