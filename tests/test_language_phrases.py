"""Relation phrases declared by aliases, anonymous variables and n-ary facts, end to end."""

from __future__ import annotations

import pytest

from thinkingdb.engine.graph import FactGraph
from thinkingdb.engine.query import evaluate
from thinkingdb.errors import ParseError
from thinkingdb.language import compile_source, parse_fact, parse_query
from thinkingdb.model import Triple, Var
from thinkingdb.normalize import Vocabulary


def facts(text: str) -> list[str]:
    return [str(f.triple) for f, _ in compile_source(text).facts]


def answers(text: str, query: str) -> list[dict]:
    vocab = Vocabulary()
    p = compile_source(text, vocab=vocab)
    res = evaluate(parse_query(query, vocab), FactGraph([f for f, _ in p.facts]), [r for r, _ in p.rules])
    return sorted((a.bindings for a in res.answers), key=lambda b: sorted(b.items()))


def test_alias_phrase_names_the_relation_in_facts():
    assert facts('alias "relies on" => depends_on.\nHarbor relies on Kestrel-OS.') == \
        ["harbor depends_on kestrel_os"]


def test_words_around_the_phrase_join_subject_and_object():
    assert facts('alias "relies on" => depends_on. Acme Corp relies on Kestrel OS @0.5.') == \
        ["acme_corp depends_on kestrel_os"]


def test_longest_phrase_wins():
    text = 'alias on => located_on. alias "relies on" => depends_on. Harbor relies on Kestrel.'
    assert facts(text) == ["harbor depends_on kestrel"]


def test_ambiguous_phrase_lists_the_candidates():
    text = 'alias "is part" => part_of. alias "part of" => within. x is part of y.'
    with pytest.raises(ParseError) as info:
        compile_source(text, "amb.tdb")
    d = info.value.diagnostics[0]
    assert d.code == "ambiguous_phrase"
    assert "'is part' or 'part of'" in d.reason and d.line == 1


def test_undeclared_phrase_is_an_error_at_the_phrase():
    with pytest.raises(ParseError) as info:
        compile_source("a b c d.", "f.tdb")
    d = info.value.diagnostics[0]
    assert (d.line, d.column, d.code) == (1, 3, "unknown_phrase")
    assert "'b c' is not a declared relation phrase" in d.reason


def test_phrase_in_rules_queries_and_why():
    text = ('alias "relies on" => depends_on. alias "is exposed to" => exposed_to.\n'
            "harbor relies on kestrel. kestrel has_flaw cve1.\n"
            "rule exp: ?x relies on ?y, ?y has_flaw ?c => ?x is exposed to ?c.\n")
    assert answers(text, "? ?x is exposed to ?c") == [{"x": "harbor", "c": "cve1"}]
    vocab = Vocabulary()
    compile_source(text, vocab=vocab)
    assert parse_fact("harbor is exposed to cve1", vocab) == Triple("harbor", "exposed_to", "cve1")


def test_variable_ends_cannot_take_extra_words():
    with pytest.raises(ParseError, match="not a declared relation phrase"):
        compile_source('alias "relies on" => depends_on. rule r: ?x uses relies on ?y => ?x z ?y.')


def test_each_anonymous_variable_is_fresh():
    text = ("a r b. c s d. a r c.\n"
            "rule both: ?x r ?_, ?_ s ?y => ?x linked ?y.\n")   # the two ?_ need not be equal
    p = compile_source(text)
    rule = [r for r, _ in p.rules][0]
    v1, v2 = rule.premises[0].object, rule.premises[1].subject
    assert isinstance(v1, Var) and v1.anonymous and v2.anonymous and v1 != v2
    assert answers(text, "? ?x linked ?y") == [{"x": "a", "y": "d"}]
    # a named variable would join: a r c, c s d -> only through c
    assert answers("a r b. c s d. a r c. rule j: ?x r ?m, ?m s ?y => ?x linked ?y.", "? ?x linked ?y") == \
        [{"x": "a", "y": "d"}]
    assert answers("a r b. c s d. rule j: ?x r ?m, ?m s ?y => ?x linked ?y.", "? ?x linked ?y") == []
    assert answers("a r b. c s d. rule j: ?x r ?_, ?_ s ?y => ?x linked ?y.", "? ?x linked ?y") == \
        [{"x": "a", "y": "d"}]


def test_anonymous_variables_are_not_answer_columns():
    # one answer per binding of the answered variables: 'a r b' and 'a r c' both say x = a
    assert answers("a r b. a r c.", "? ?x r ?_") == [{"x": "a"}]


def test_nary_fact_is_a_statement_node_with_role_edges():
    assert facts("flight(QA, Sydney, Melbourne) @0.9.") == [
        "flight(qa,sydney,melbourne) flight.1 qa", "flight(qa,sydney,melbourne) flight.2 sydney",
        "flight(qa,sydney,melbourne) flight.3 melbourne"]
    p = compile_source("flight(QA, Sydney, Melbourne) @0.9.")
    assert [f.confidence for f, _ in p.facts] == [0.9, 1.0, 1.0]
    assert p.labels["flight(qa,sydney,melbourne)"] == "flight(QA, Sydney, Melbourne)"


FLIGHTS = ("flight(QA, syd, mel). flight(QA, mel, per). flight(VA, syd, mel). flight(VA, per, dar).\n"
           "rule qa: flight(QA, ?x, ?y) => qa_leg(?x, ?y).\n"
           "rule only: qa_leg(?x, ?y), not flight(VA, ?x, ?y) => qa_only(?x, ?y).\n"
           "rule va_from: flight(VA, ?x, ?_) => ?x va_from yes.\n"
           "rule no_va: qa_leg(?x, ?y), not flight(VA, ?x, ?_) => ?x no_va_from yes.\n")


def test_queries_and_rules_match_nary_facts():
    assert answers(FLIGHTS, "? flight(?c, syd, ?y)") == [{"c": "qa", "y": "mel"}, {"c": "va", "y": "mel"}]
    assert answers(FLIGHTS, "? qa_only(?x, ?y)") == [{"x": "mel", "y": "per"}]
    assert answers(FLIGHTS, "? ?x va_from yes") == [{"x": "per"}, {"x": "syd"}]
    # mel has a QA leg and no VA flight from it at all; syd has one
    assert answers(FLIGHTS, "? ?x no_va_from yes") == [{"x": "mel"}]


def test_arity_mismatch_is_an_error():
    with pytest.raises(ParseError) as info:
        compile_source("fib(0, 0, 2).\nfib(1, 1).", "fib.tdb")
    d = info.value.diagnostics[0]
    assert (d.line, d.code) == (2, "arity_mismatch")
    assert d.reason == "n-ary relation fib has 2 arguments here but 3 at line 1"
