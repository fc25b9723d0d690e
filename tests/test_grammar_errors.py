"""The bad-input table: every input must produce exactly this diagnostic (line, column, reason)."""

import pytest

import grammar
from grammar import LanguageSyntaxError, parse

# (name, source, [(line, column, reason), ...])
BAD_INPUTS = [
    ("unterminated quote", '"abc uses b.', [(1, 1, 'unterminated quoted string (a closing " is missing on this line)')]),
    ("missing period", "a uses b", [(1, 9, "missing period '.' at the end of the statement")]),
    ("confidence above one", "a uses b @1.5.", [(1, 11, "confidence must be in [0, 1], got 1.5")]),
    ("confidence nan", "a uses b @nan.", [(1, 11, "confidence must be a finite number, got nan")]),
    ("confidence inf", "a uses b @inf.", [(1, 11, "confidence must be a finite number, got inf")]),
    ("confidence negative", "a uses b @-0.1.", [(1, 11, "confidence must be in [0, 1], got -0.1")]),
    ("confidence overflows", "a uses b @1e309.", [(1, 11, "confidence must be a finite number, got 1e309")]),
    ("confidence not a number", "a uses b @x.", [(1, 11, "a confidence must be a number, got 'x'")]),
    ("unknown relation property", "relation r transitve.",
     [(1, 12, "unknown relation property 'transitve'; expected transitive, symmetric, inverse or subrelation_of")]),
    ("inverse without partner", "relation r inverse.", [(1, 12, "'inverse' needs the other relation's name")]),
    ("transitive with partner", "relation r transitive s.", [(1, 23, "'transitive' takes no other relation")]),
    ("head variable not in body", "rule r: ?x a ?y => ?x b ?z.",
     [(1, 25, "head variable ?z of rule r does not occur in any premise")]),
    ("rule weight zero", "rule r @0: ?x a ?y => ?x b ?y.", [(1, 9, "rule weight must be in (0, 1], got 0")]),
    ("rule weight above one", "rule r @1.2: ?x a ?y => ?x b ?y.", [(1, 9, "rule weight must be in (0, 1], got 1.2")]),
    ("rule without premises", "rule r: => ?x b ?y.",
     [(1, 9, "expected '(', 'not', a quoted string, a symbol, a variable such as ?x or an n-ary statement such as "
             "name(a, b, c), found '=>'")]),
    ("rule without colon", "rule r ?x a ?y => ?x b ?y.", [(1, 8, "expected ':' or '@' and a confidence, found '?x'")]),
    ("anonymous variable in a head", "rule r: ?x a ?_ => ?x b ?_.",
     [(1, 25, "the anonymous variable ?_ cannot stand in the head of rule r: it binds nothing")]),
    ("unsafe negation", "rule r: ?x a ?y, not ?y b ?z => ?x c ?y.",
     [(1, 27, "unsafe negation in rule r: ?z of a 'not' premise is bound by no positive premise")]),
    ("only negated premises", "rule r: not ?x b c => ?x c d.",
     [(1, 9, "rule r has only 'not' premises with variables; add a positive premise that binds them"),
      (1, 13, "unsafe negation in rule r: ?x of a 'not' premise is bound by no positive premise"),
      (1, 23, "head variable ?x of rule r does not occur in any premise")]),
    ("variable as a relation", "rule r: ?x ?r ?y => ?x c ?y.", [(1, 12, "a relation cannot be a variable")]),
    ("quoted word in a phrase", 'a "relies" on b.',
     [(1, 3, "a relation phrase is bare words; a quoted name cannot be part of one")]),
    ("variable in an n-ary fact", "flight(qa, ?x, syd).", [(1, 12, "a fact cannot hold a variable")]),
    ("two parts", "a b.", [(1, 4, "the statement ends too early: expected a quoted string or a symbol before '.'")]),
    ("stray period", "a b c. .", [(1, 8, "a stray period '.' with no statement before it")]),
    ("empty repetition", "? ?x a{3,1} ?y.", [(1, 8, "repetition {3,1} has its maximum below its minimum")]),
    ("repetition without minimum", "? ?x a{,3} ?y.", [(1, 8, "expected a whole number, found ','")]),
    ("nameless variable", "? ? a b.", [(1, 3, "a variable needs a name, as in ?x")]),
    ("unbalanced parenthesis", "? ?x (a/b ?y.", [(1, 11, "expected ')', found '?y'")]),
    ("binary garbage", "\x00\x01\x02", [(1, 1, "unexpected character U+0000")]),
    ("why with two parts", "why a b.",
     [(1, 8, "the statement ends too early: expected a quoted string or a symbol before '.'")]),
    ("alias without arrow", "alias x depends_on.", [(1, 9, "expected '=>', found 'depends_on'")]),
    ("empty relation", 'a "" b.', [(1, 3, "a relation name cannot be empty")]),
    ("rule missing final period", "rule r: ?x a ?y => ?x b ?y", [(1, 27, "missing period '.' at the end of the statement")]),
    ("10 MB single line", "a" * 10_000_000, [(1, 10_000_001, "missing period '.' at the end of the statement")]),
    ("comparison of an unbound variable", "rule r: ?x a ?y, ?n <= 25 => ?x b ?y.",
     [(1, 18, "unbound variable in a comparison of rule r: ?n is bound by no positive premise and assigned by "
              "no '?n = ...'")]),
    ("assignment from an unbound variable", "rule r: ?x a ?y, ?z = ?n + 1 => ?x b ?z.",
     [(1, 23, "unbound variable in a comparison of rule r: ?n is bound by no positive premise and assigned by "
              "no '?n = ...'")]),
    ("assignment of itself", "rule r: ?x a ?y, ?z = ?z + 1 => ?x b ?z.",
     [(1, 23, "unbound variable in a comparison of rule r: ?z is bound by no positive premise and assigned by "
              "no '?z = ...'")]),
    ("anonymous variable in a comparison", "rule r: ?x a ?y, ?_ > 1 => ?x b ?y.",
     [(1, 18, "unbound variable in a comparison of rule r: the anonymous variable ?_ binds nothing")]),
    ("comparisons without a premise", "rule r: ?z = 1 + 2 => a b ?z.",
     [(1, 9, "rule r has comparisons but no positive premise: add one that they can test")]),
    ("expression without a comparison", "rule r: ?x a ?y, ?y + 1 => ?x b ?y.",
     [(1, 25, "a comparison needs one of <, <=, >, >=, =, != between two expressions, found '=>'")]),
    ("comparison without a right side", "rule r: ?x a ?y, ?y < => ?x b ?y.",
     [(1, 23, "expected '(', a quoted string, a symbol or a variable such as ?x, found '=>'")]),
    ("several errors", "a uses b.\nc d e @7.\nf g.\nh i j.\n? ?x r{2,1} ?y.",
     [(2, 8, "confidence must be in [0, 1], got 7"),
      (3, 4, "the statement ends too early: expected a quoted string or a symbol before '.'"),
      (5, 8, "repetition {2,1} has its maximum below its minimum")]),
]


@pytest.mark.parametrize("name,source,expected", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_table(name, source, expected):
    with pytest.raises(LanguageSyntaxError) as info:
        parse(source, "bad.tdb")
    got = [(d.line, d.column, d.reason) for d in info.value.diagnostics]
    assert got == expected
    for d in info.value.diagnostics:
        assert d.source == "bad.tdb"
        assert "^" in d.render()
        assert len(d.snippet) <= 80  # long lines are windowed around the column


def test_error_is_value_error_and_grammar_root():
    with pytest.raises(ValueError):
        parse("a b")
    assert issubclass(LanguageSyntaxError, grammar.GrammarError)


def test_caret_points_at_the_column():
    with pytest.raises(LanguageSyntaxError) as info:
        parse("x y z.\nalpha beta gamma @2.", "f.tdb")
    rendered = info.value.diagnostics[0].render().splitlines()
    assert rendered[0] == "f.tdb:2:19: confidence must be in [0, 1], got 2"
    assert rendered[1].strip() == "alpha beta gamma @2."
    assert rendered[2].index("^") - rendered[1].index("alpha") == 18


def test_no_lark_exception_escapes_on_random_bytes():
    import random
    rng = random.Random(7)
    for _ in range(300):
        text = "".join(rng.choice('ab ?.@"#{}()^|/+*,:=>\n\\x09é') for _ in range(rng.randint(1, 40)))
        try:
            parse(text)
        except LanguageSyntaxError as exc:
            assert exc.diagnostics


@pytest.fixture(scope="module")
def filled_store(tmp_path_factory):
    from thinkingdb.api import KnowledgeBase
    d = tmp_path_factory.mktemp("store")
    good = d / "good.tdb"
    good.write_text("AchillesIDE uses Ploinky @1.0.\nPloinky provides sandboxing @0.95.\n", encoding="utf-8")
    path = d / "kb.sqlite"
    with KnowledgeBase(str(path)) as kb:
        kb.ingest([str(good)])
    return path


@pytest.mark.parametrize("name,source,expected", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_each_bad_input_leaves_the_store_byte_for_byte_unchanged(tmp_path, filled_store, name, source, expected):
    from thinkingdb.api import KnowledgeBase
    from thinkingdb.errors import IngestError
    before = filled_store.read_bytes()
    bad = tmp_path / "bad.tdb"
    bad.write_bytes(source.encode("utf-8", "surrogateescape") if isinstance(source, str) else source)
    with KnowledgeBase(str(filled_store), create=False) as kb:
        with pytest.raises(IngestError) as info:
            kb.ingest([str(bad)])
    line, column, _ = expected[0]
    assert f"bad.tdb:{line}:" in str(info.value)   # the error names the file and the line
    assert filled_store.read_bytes() == before


def test_a_diagnostic_without_a_line_or_a_place_shows_none():
    # before: "nosuch.tdb:0:0: no such file" and "<input>:0:0: not an ingested source: ..."
    from grammar.errors import Diagnostic
    from thinkingdb.errors import IngestError
    assert Diagnostic("nosuch.tdb", 0, 0, "no such file").render() == "nosuch.tdb: no such file"
    assert Diagnostic("a.tdb", 2, 0, "unused").render() == "a.tdb:2: unused"
    assert Diagnostic("a.tdb", 2, 5, "bad").render() == "a.tdb:2:5: bad"
    assert str(IngestError("not an ingested source: x.tdb")) == "not an ingested source: x.tdb"
