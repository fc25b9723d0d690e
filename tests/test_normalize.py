"""Normalization of symbols and relations (SPEC §3), with hand-written cases and properties."""

import pytest
from hypothesis import example, given, strategies as st

from thinkingdb import ValidationError, Vocabulary, compile_source, relation_key, symbol_key


@pytest.mark.parametrize("label,key", [
    ("Secure Execution", "secure_execution"),
    ("secure-execution", "secure_execution"),
    ("secure_execution", "secure_execution"),
    ("  Secure   --  Execution ", "secure_execution"),
    ('"AchillesIDE"', "achilleside"),
    ("Straße", "strasse"),          # case folding, not lowercasing
    ("ＡＢＣ", "abc"),               # NFKC folds full-width letters
    ("GO:0000088", "GO:0000088"),    # a CURIE is its own key (issue 17)
    ("café", "café"),
])
def test_symbol_keys(label, key):
    assert symbol_key(label) == key


@pytest.mark.parametrize("label,exact,folded", [
    ("GO:0000088", "GO:0000088", "go:0000088"),
    ("ex:Paris", "ex:Paris", "ex:paris"),
    ("ex:New_York", "ex:New_York", "ex:new_york"),
    ("ex:New-York", "ex:New-York", "ex:new_york"),
    ("<http://example.org/A_b>", "http://example.org/A_b", "<http://example.org/a_b>"),
    ('"http://example.org/X"', "http://example.org/X", "http://example.org/x"),
    ("urn:isbn:0451450523", "urn:isbn:0451450523", "urn:isbn:0451450523"),
    ("New York", "new_york", "new_york"),      # plain words fold in both modes
    ("Note: a word", "note:_a_word", "note:_a_word"),  # a space: not a CURIE
    ("10:30", "10:30", "10:30"),                # a CURIE prefix starts with a letter
])
def test_iris_and_curies_are_exact_in_mode_iris(label, exact, folded):
    assert symbol_key(label) == exact == Vocabulary().symbol(label)
    assert symbol_key(label, "folded") == folded == Vocabulary(mode="folded").symbol(label)


def test_exact_iris_keep_paris_apart_and_new_york_not_a_self_loop():
    program = compile_source("ex:Paris ex:locatedIn ex:France. ex:paris ex:locatedIn ex:Texas. "
                             "ex:New_York ex:sameAs ex:New-York.", "t.tdb")
    assert sorted(str(f.triple) for f, _ in program.facts) == [
        "ex:New_York ex:sameAs ex:New-York", "ex:Paris ex:locatedIn ex:France", "ex:paris ex:locatedIn ex:Texas"]


def test_an_unknown_symbol_mode_is_refused():
    with pytest.raises(ValidationError, match="symbol mode"):
        Vocabulary(mode="lowercase")


@pytest.mark.parametrize("name", ["dependsOn", "depends-on", "depends on", "DEPENDS_ON", "Depends_On", "depends__on"])
def test_relation_keys(name):
    assert relation_key(name) == "depends_on"


def test_acronyms_split_sensibly():
    assert relation_key("HTTPServerOf") == "http_server_of"
    assert relation_key("isA") == "is_a"


@pytest.mark.parametrize("bad", ["", "   ", '""', "--", "_"])
def test_empty_symbols_are_refused(bad):
    with pytest.raises(ValidationError):
        symbol_key(bad)


@given(st.text(min_size=1))
@example('-"0')  # the fold made '_"0', whose quote only a second pass stripped (found by hypothesis)
def test_symbol_key_is_idempotent(text):
    try:
        key = symbol_key(text)
    except ValidationError:
        return
    assert symbol_key(key) == key
    assert key == key.strip() and "__" not in key and " " not in key


@given(st.text(min_size=1))
@example('-"0')
@example("x_'")
def test_relation_key_is_idempotent(text):
    try:
        key = relation_key(text)
    except ValidationError:
        return
    assert relation_key(key) == key


def test_aliases_and_inverses_apply_to_whole_file_in_any_order():
    p = compile_source('''
        w has_part c.
        x requires y.
        relation part_of inverse has_part.
        alias requires => depends_on.
        rule r: ?a has_part ?b => ?b inside ?a.
    ''')
    assert sorted(str(f.triple) for f, _ in p.facts) == ["c part_of w", "x depends_on y"]
    (rule, _), = p.rules
    assert (rule.premises[0].subject.name, rule.premises[0].relation, rule.premises[0].object.name) == ("b", "part_of", "a")


def test_conflicting_alias_is_an_error_with_position():
    from thinkingdb import ParseError
    with pytest.raises(ParseError) as info:
        compile_source("alias needs => depends_on.\nalias needs => uses.\n", "v.tdb")
    d = info.value.diagnostics[0]
    assert (d.source, d.line, d.column) == ("v.tdb", 2, 7)
    assert "already maps to 'depends_on'" in d.reason


def test_relation_cannot_be_its_own_inverse():
    from thinkingdb import ParseError
    with pytest.raises(ParseError, match="its own inverse"):
        compile_source("relation r inverse r.")


def test_vocabulary_orients_inverse_facts():
    v = Vocabulary()
    v.add_inverse("part_of", "has_part")
    assert v.orient("Car", "hasPart", "Wheel") == ("wheel", "part_of", "car")
    assert v.orient("Wheel", "part of", "Car") == ("wheel", "part_of", "car")


@given(st.text(alphabet="aZz09_- :.\"'<>é\u00b2", min_size=1, max_size=8), st.sampled_from(["iris", "folded", "quoted"]))
@example("42", "iris")
@example("007", "folded")
@example("a_b", "quoted")
def test_a_name_already_a_key_takes_the_fold_s_result(text, mode):
    """The shortcut (``_is_key``: return the name itself, no pattern compiled) gives what the full
    fold gives, in every mode; the oracle is the same functions with the shortcut turned off."""
    from thinkingdb import normalize
    if not normalize._is_key(text):
        return
    original = normalize._is_key
    normalize._is_key = lambda _: False
    try:
        assert normalize.symbol_key.__wrapped__(text, mode) == text
        assert normalize.relation_key.__wrapped__(text, mode) == text
    finally:
        normalize._is_key = original
    assert symbol_key(text, mode) == text and relation_key(text, mode) == text


def test_the_shortcut_takes_only_keys():
    from thinkingdb.normalize import _is_key
    assert [t for t in ("n5", "depends_on", "go_0001", "9") if not _is_key(t)] == []
    assert [t for t in ("N5", "dependsOn", "a__b", "_a", "a_", "a-b", "a b", "GO:1", "é", "x²", "") if _is_key(t)] == []
