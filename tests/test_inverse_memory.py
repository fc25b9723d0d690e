"""Inverse declarations in memory (``relation c inverse b``: facts of b are compiled as c, reversed) hold as
they do in a store: declarations over either name read b as c reversed (engine.rules.compile_declarations,
with normalize.orient_rules, which the store reads with too); chained inverses and two different rules of
one name are refused as a store refuses them. The oracle is test_inverse_store's naive fixpoint over the
program as stated, and a store's answers."""

import pytest
from hypothesis import given, settings

from test_inverse_store import RELS, _naive, programs
from thinkingdb.api import open_kb
from thinkingdb.engine.graph import FactGraph
from thinkingdb.engine.query import evaluate
from thinkingdb.engine.rules import compile_declarations
from thinkingdb.errors import ParseError
from thinkingdb.language import compile_source, parse_query
from thinkingdb.normalize import Vocabulary


def _answers(text, question):
    vocab = Vocabulary()
    p = compile_source(text, "m.tdb", vocab)
    rules = [r for r, _ in p.rules] + list(compile_declarations(d for d, _ in p.declarations))
    result = evaluate(parse_query(question, vocab), FactGraph([f for f, _ in p.facts]), rules)
    return sorted(tuple(a.bindings.values()) for a in result.answers)


@pytest.mark.parametrize("text, question, want", [
    # `n2 c n1` means n1 b n2, so n1 h n2
    ("n2 c n1.\nrelation c inverse b.\nrelation b subrelation_of h.\n", "? n1 h ?x.", [("n2",)]),
    # n2 b n1, n3 b n2, b transitive: n3 b n1 too (was: n2 only)
    ("n1 c n2.\nn2 c n3.\nrelation c inverse b.\nrelation b transitive.\n", "? n3 b ?x.", [("n1",), ("n2",)]),
    # n5 h n6, h within b (was: nothing)
    ("relation c inverse b.\nrelation h subrelation_of b.\nn5 h n6.\n", "? n5 b ?x.", [("n6",)]),
    ("relation c inverse b.\nrelation h subrelation_of b.\nn5 h n6.\n", "? ?x c n5.", [("n6",)]),
    ("n1 b n2.\nrelation c inverse b.\nrelation b symmetric.\n", "? n2 c ?x.", [("n1",)]),
])
def test_declarations_over_an_inverse_name_in_memory(text, question, want):
    assert _answers(text, question) == want


@pytest.mark.parametrize("text", ["n1 t n2.\nrelation c inverse a.\nrelation a inverse t.\n",
                                  "n1 t n2.\nrelation a inverse t.\nrelation c inverse a.\n"])
def test_chained_inverses_are_refused_in_either_order(text, tmp_path):
    with pytest.raises(ParseError, match="so t means c: write alias t => c") as exc:
        compile_source(text, "m.tdb")
    (d,) = exc.value.diagnostics
    assert (d.source, d.line) == ("m.tdb", 3)
    (tmp_path / "m.tdb").write_text(text)   # a store refuses it at the same place
    with open_kb(str(tmp_path / "kb.sqlite"), default_rules=False) as kb:
        with pytest.raises(Exception, match="so t means c: write alias t => c") as stored:
            kb.ingest([str(tmp_path / "m.tdb")])
    (s,) = stored.value.diagnostics
    assert (s.line, s.column, s.reason) == (d.line, d.column, d.reason)


def test_a_second_rule_of_one_name_is_refused_at_its_line_as_a_store_does(tmp_path):
    text = "n1 a n2.\nn1 b n2.\nrule r0: ?x a ?y => ?x h ?y.\n  rule r0: ?x b ?y => ?x g ?y.\n"
    with pytest.raises(ParseError) as exc:
        compile_source(text, "one.tdb")
    (d,) = exc.value.diagnostics
    assert (d.line, d.column) == (4, 3) and "a second rule named r0: the first is at line 3" in d.reason
    compile_source(text.replace("?x b ?y => ?x g", "?x a ?y => ?x h"), "one.tdb")   # the same rule again


@settings(max_examples=40, deadline=None)
@given(programs())
def test_memory_answers_as_a_store_and_the_naive_fixpoint(tmp_path_factory, program):
    facts, decls, rules, statements, _ = program
    text = "".join(s + "\n" for s in statements)
    tmp = tmp_path_factory.mktemp("invmem")
    (tmp / "p.tdb").write_text(text)
    want = _naive(facts, decls, rules)
    vocab = Vocabulary()
    p = compile_source(text, "p.tdb", vocab)
    g = FactGraph([f for f, _ in p.facts])
    compiled = [r for r, _ in p.rules] + list(compile_declarations(d for d, _ in p.declarations))
    with open_kb(str(tmp / "kb.sqlite"), default_rules=False) as kb:
        kb.ingest([str(tmp / "p.tdb")])
        for r in RELS:
            q = f"? ?x {r} ?y."
            got = {(a.bindings["x"], a.bindings["y"]) for a in evaluate(parse_query(q, vocab), g, compiled).answers}
            stored = {(a.bindings["x"], a.bindings["y"]) for a in kb.query(q).answers}
            assert got == stored == {(s, o) for s, rr, o in want if rr == r}, (r, statements)


def test_materialize_reads_declarations_over_an_inverse_of_another_file(tmp_path):
    from thinkingdb.spark.materialize import load_rules
    (tmp_path / "a.tdb").write_text("relation b subrelation_of h.\nrule g: ?x b ?y => ?x g ?y.\n")
    (tmp_path / "b.tdb").write_text("relation c inverse b.\n")
    rules, vocab = load_rules([str(tmp_path / "a.tdb"), str(tmp_path / "b.tdb")], default_rules=False)
    assert vocab.inverses == {"b": "c"}
    # a.tdb was compiled before the inverse was known: its rule and declaration still read b as c reversed
    # (was: ?x b ?y, over facts read as c, so neither ever applied)
    assert sorted(str(r) for r in rules) == [
        "rule b_subrelation_of_h @1: ?y c ?x => ?x h ?y.",
        "rule c_inverse_b @1: ?x c ?y => ?y b ?x.",
        "rule g @1: ?y c ?x => ?x g ?y.",
    ]


def test_materialize_refuses_a_rule_name_of_two_files(tmp_path):
    from thinkingdb.errors import IngestError
    from thinkingdb.spark.materialize import load_rules
    (tmp_path / "a.tdb").write_text("rule r0: ?x a ?y => ?x h ?y.\n")
    (tmp_path / "b.tdb").write_text("\n  rule r0: ?x b ?y => ?x h ?y.\n")
    with pytest.raises(IngestError) as exc:
        load_rules([str(tmp_path / "a.tdb"), str(tmp_path / "b.tdb")], default_rules=False)
    (d,) = exc.value.diagnostics
    assert (d.source.endswith("b.tdb"), d.line, d.column) == (True, 2, 3)
    assert f"rule r0 is already in the rules from {tmp_path / 'a.tdb'}:1" in d.reason
    (tmp_path / "b.tdb").write_text("rule r0: ?x a ?y => ?x h ?y.\n")   # the same rule again: no conflict
    assert len(load_rules([str(tmp_path / "a.tdb"), str(tmp_path / "b.tdb")], default_rules=False)[0]) == 2
