"""grammar.quick reads plain questions without lark: the same tree as the full parser, positions
included, or None (the full parser then runs). The oracle is grammar.parser itself."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import grammar.parser as full
from grammar import LanguageSyntaxError, ast, quick

GRAMMAR = (Path(full.__file__).parent / "thinkingdb.lark").read_text(encoding="utf-8")


def deep(node):
    """A node with every field, positions and ``quoted`` included (equality of the tree ignores them)."""
    if dataclasses.is_dataclass(node):
        return (type(node).__name__,) + tuple((f.name, deep(getattr(node, f.name))) for f in dataclasses.fields(node))
    if isinstance(node, tuple):
        return tuple(deep(x) for x in node)
    return node


def full_parse(text: str):
    try:
        return full.parse(text)
    except LanguageSyntaxError:
        return None


def test_terminals_are_the_grammars():
    for name, pattern in (("SYMBOL", quick.SYMBOL), ("VAR", quick.VAR)):
        assert re.search(rf"^{name}: /(.*)/$", GRAMMAR, re.M).group(1) == pattern


@pytest.mark.parametrize("text, shape", [
    ("? n5 depends_on ?x.", [("n5", "depends_on", "", "?x")]),
    ("?  ?x r+ b ,b s* ?y .", [("?x", "r", "+", "b"), ("b", "s", "*", "?y")]),
    ("\t? a:b.c r-x 12.d.", [("a:b.c", "r-x", "", "12.d")]),
])
def test_plain_queries_by_hand(text, shape):
    doc = quick.parse_simple(text)
    got = []
    for p in doc.statements[0].patterns:
        path = p.path
        mark = {1: "+", 0: "*"}[path.min] if isinstance(path, ast.Repeat) else ""
        rel = (path.path if mark else path).relation.text
        term = lambda t: t.text if hasattr(t, "text") else "?" + t.name  # noqa: E731
        got.append((term(p.subject), rel, mark, term(p.object)))
    assert got == shape
    assert deep(doc) == deep(full.parse(text))


def test_the_default_rule_library_is_read_quickly():
    from thinkingdb.engine.rules import default_rules_text
    text = default_rules_text()
    doc = quick.parse_simple(text)
    assert doc is not None and deep(doc) == deep(full.parse(text))
    assert [type(st).__name__ for st in doc.statements].count("RuleDecl") >= 6


def test_rules_and_declarations_by_hand():
    doc = quick.parse_simple("# c\n\n  rule t @0.5: ?x r ?y, ?y r ?z => ?x r ?z.\nrelation r inverse s .\n")
    rule, decl = doc.statements
    assert (rule.name, rule.weight, rule.line, rule.column) == ("t", 0.5, 3, 8)
    assert [(a.subject.name, a.relation.text, a.object.name, a.column) for a in rule.premises] == [
        ("x", "r", "y", 16), ("y", "r", "z", 25)]
    assert (rule.head.subject.name, rule.head.object.name, rule.head.relation.column) == ("x", "z", 39)
    assert (decl.relation.text, decl.kind, decl.other.text, decl.line, decl.column, decl.other.column) == (
        "r", "inverse", "s", 4, 10, 20)
    assert deep(doc) == deep(full.parse("# c\n\n  rule t @0.5: ?x r ?y, ?y r ?z => ?x r ?z.\nrelation r inverse s .\n"))


def test_positions_by_hand():
    q = quick.parse_simple("? n5 dep ?x.").statements[0]
    p = q.patterns[0]
    assert (q.line, q.column, p.subject.column, p.path.relation.column, p.object.column) == (1, 3, 3, 6, 10)
    w = quick.parse_simple("why a r bb.").statements[0]
    assert (w.column, w.relation.column, w.object.column) == (5, 7, 9)


@pytest.mark.parametrize("text", [
    "? a relies on b.", "? a not b.", "? not r b.", "why not a r b.", "? a r b. ? c r d.", '? "a" r b.',
    "? a r b # c", "? a r b @0.5.", "? a ?r b.", "? a r+b c.", "? a (r) b.", "? a r b", "? a ^r b.", "? a r|s b.",
    "? a r {1,2} b.", "? n(a, b).", "?a r b.", "why a r ?x.", "why a r b c.", "a r b.", "? a r -1.",
    "why a rule b.", "? a r b.\r", "? a r\nb.", "rule r: ?x a ?y => ?y b ?w.", "rule r @0: ?x a ?y => ?y b ?x.",
    "rule r @1.5: ?x a ?y => ?x b ?y.", "rule r @1e-1: ?x a ?y => ?x b ?y.", "rule r: ?x a ?y => ?_ b ?x.",
    "rule r: not ?x a ?y, ?y b ?x => ?x c ?y.", "rule r: ?x a ?y, ?n < 3 => ?x c ?y.", "rule r: ?x a ?y => ?x c ?y, ?y c ?x.",
    "rule not: ?x a ?y => ?x c ?y.", "relation r transitive s.", "relation r inverse.", "relation r bogus.",
    "relation r transitive. # a comment", "a r b.\nrule r: ?x a ?y => ?x b ?y.",
])
def test_other_shapes_go_to_the_full_parser(text):
    assert quick.parse_simple(text) is None


WORDS = ["a", "n5", "r", "x-y", "a.b", "b:c", "12", "é", "?x", "?y1", "?", "not", "why", "rule", "-1", "+", "*",
         ",", ".", ".5", "(", ")", "^", "|", '"q"', "@0.5", "#c"]
SPACE = ["", " ", "  ", "\t"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(SPACE), st.sampled_from(WORDS)), max_size=12), st.sampled_from(SPACE))
def test_same_tree_as_the_full_parser(parts, tail):
    text = "".join(s + w for s, w in parts) + tail
    for candidate in (text, "? " + text, "why " + text, "? " + text + ".", "why " + text + "."):
        got, want = quick.parse_simple(candidate), full_parse(candidate)
        if got is not None:
            assert deep(got) == deep(want), candidate
        if want is None:
            with pytest.raises(LanguageSyntaxError):
                quick.parse(candidate)
        else:
            assert deep(quick.parse(candidate)) == deep(want)


# plain words many times over, so that most examples are plain or one change away from it
TERMS = ["a", "n5", "x-y", "a.b", "b:c", "12", "é", "?x", "?y1", "?_"] * 8 + ["not", "why", "-1", '"q"', "a(", "?", "a."]
RELS = ["r", "depends_on", "r-s", "a.b", "r+", "r*"] * 8 + ["rule", "not", "?r", "^r", '"r"', "r +", "r{1}", "r|s"]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(TERMS), st.sampled_from(SPACE * 4 + ["\n"]), st.sampled_from(RELS),
                          st.sampled_from(SPACE), st.sampled_from(TERMS)), min_size=1, max_size=3),
       st.sampled_from([",", " ,", ", "] * 3 + [""]), st.sampled_from([".", " .", ". "] * 3 + ["", ".."]),
       st.sampled_from(["? ", " ?\t", "why ", "why\t"] * 3 + ["?", "? ?"]))
def test_near_plain_shapes(patterns, sep, end, head):
    """Mostly plain questions with one thing changed: the quick path agrees or declines."""
    text = head + sep.join(f"{s}{w1 or ' '}{r}{w2 or ' '}{o}" for s, w1, r, w2, o in patterns) + end
    got, want = quick.parse_simple(text), full_parse(text)
    if got is not None:
        assert deep(got) == deep(want), text


LINES = (["rule t @0.5: ?x r ?y, ?y r ?z => ?x r ?z.", "rule u: ?a p ?b => ?b q ?a.", "relation r transitive.",
          "relation p inverse q.", "? a r ?x.", "why a r b.", "# note", "", "  "] * 4
         + ["rule v @2: ?x r ?y => ?y r ?x.", "rule w: ?x r ?y => ?z r ?x.", "relation r inverse.", "a r b.",
            "rule x: ?x r ?y", "=> ?y r ?x.", "rule y: ?x r ?y => ?y r ?x. # c", "relation r symmetric s."])
EDITS = [lambda t: t, lambda t: t.replace(" ", "  "), lambda t: t.replace(" ", "\t"), lambda t: t.replace(":", " :"),
         lambda t: t.replace(",", " ,"), lambda t: t.replace(".", " ."), lambda t: t.replace("?x", "?_"),
         lambda t: t.replace("r", "rule"), lambda t: t.replace("=>", "= >"), lambda t: t.replace("@0.5", "@ .5")]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(LINES), st.sampled_from(EDITS)), max_size=6))
def test_documents_of_plain_lines(lines):
    """Rule libraries, declarations and questions a line each, some edited out of the plain shape."""
    text = "\n".join(edit(line) for line, edit in lines)
    got, want = quick.parse_simple(text), full_parse(text)
    if got is not None:
        assert deep(got) == deep(want), text


@pytest.mark.parametrize("text", ["# T\n \r\n? a r ?x.", "? a r ?x.\n\r\n", "\x0c\n? a r ?x.", "\r"])
def test_a_line_of_other_white_space_goes_to_the_full_parser(text):
    """A line blank but for \\r or \\f raised IndexError from parse_simple (found by
    benchmarks/fuzz.py --seed 11: 34 escapes in 1,803 cases of the language target)."""
    assert quick.parse_simple(text) is None
    want = full_parse(text)
    if want is None:
        with pytest.raises(LanguageSyntaxError):
            quick.parse(text)
    else:
        assert deep(quick.parse(text)) == deep(want)


_WORD_CHARS = st.sampled_from(list("ab_Z09-.:?é٣Ⅻ²ß中 \t,+*(")).map(str)   # Ⅻ, ² and ٣: \w beyond [A-Za-z0-9_]


@settings(max_examples=400, deadline=None)
@given(st.lists(_WORD_CHARS, max_size=12).map("".join), st.integers(0, 3))
def test_words_are_read_as_the_terminals_match(text, i):
    """quick reads a word with string methods; it ends where the grammar's own patterns end."""
    m = re.compile(rf"({quick.VAR})|{quick.SYMBOL}").match(text, i)
    want = (0, i) if m is None else ((1 if m.group(1) else 2), m.end())
    assert quick._word(text, i) == want


def test_words_by_hand():
    assert quick._word("?x-y", 0) == (1, 2)
    assert quick._word("a.b.", 0) == (2, 3)
    assert quick._word("x:y:-z", 0) == (2, 3)
    assert quick._word("? x", 0) == (0, 0)
    assert quick._word("Ⅻ_b-c", 0) == (2, 5)
    assert quick._word("n5 r", 3) == (2, 4)
