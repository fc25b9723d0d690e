"""Quoted names' escapes (README, "symbol"): ``\\"`` ``\\\\`` ``\\n`` ``\\t``; any other backslash pair is a
syntax error at the backslash, never a silently dropped backslash, on every path that reads a quoted name
(the LALR builder, the parser's one-line fact path, the ``.tdb`` reader's fast path)."""
import re

import pytest
from hypothesis import given, strategies as st

from grammar import parse
from grammar.errors import LanguageSyntaxError
from grammar.lalr import run
from thinkingdb.errors import ParseError
from thinkingdb.language import compile_source
from thinkingdb.store.tdbfile import _split_simple_facts

STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')   # the grammar's STRING terminal


def decode(token: str):
    """Independent oracle: the name a quoted token means, or the 0-based offsets of its unknown escapes."""
    out, bad, i, body = [], [], 1, token
    while i < len(body) - 1:
        c = body[i]
        if c == "\\":
            nxt = body[i + 1]
            if nxt in 'nt"\\':
                out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
            else:
                bad.append(i)
            i += 2
        else:
            out.append(c)
            i += 1
    return ("".join(out), bad)


def test_an_unknown_escape_in_a_quoted_name_is_an_error_not_a_dropped_backslash():
    # main: '"C:\users\me" r x.' compiled to the symbol 'C:usersme' (each backslash silently dropped)
    with pytest.raises(ParseError) as info:
        compile_source('"C:\\users\\me" r x.', "w.tdb")
    found = [(d.source, d.line, d.column, d.reason) for d in info.value.diagnostics]
    assert found == [("w.tdb", 1, 4, 'unknown escape \\u in a quoted name; write \\\\ for a backslash '
                                     '(the escapes are \\" \\\\ \\n \\t)'),
                     ("w.tdb", 1, 10, 'unknown escape \\m in a quoted name; write \\\\ for a backslash '
                                      '(the escapes are \\" \\\\ \\n \\t)')]


@pytest.mark.parametrize("source, line, column", [
    ('? "a\\x" r ?x.', 1, 5),                      # a query (LALR path)
    ('a b c.\nrule q: ?x "r\\q" ?y => ?x s ?y.', 2, 14),   # a relation in a rule
    ('"ok" r\n  "tab\\T".', 2, 7),                 # a fact over two lines (LALR path)
    ('x "C:\\d" y @0.5.', 1, 6),                   # a quoted relation, with a confidence (fast path)
])
def test_the_error_points_at_the_backslash_on_every_path(source, line, column):
    with pytest.raises(ParseError) as info:
        compile_source(source, "w.tdb")
    assert [(d.line, d.column) for d in info.value.diagnostics] == [(line, column)]
    assert "unknown escape" in info.value.diagnostics[0].reason


def test_the_four_escapes_still_work():
    fact = compile_source('"a\\\\b\\"c\\nd\\te" r x.').facts[0][0].triple
    assert parse('"a\\\\b\\"c\\nd\\te" r x.').statements[0].subject.text == 'a\\b"c\nd\te'
    assert fact.subject   # the symbol is made (its key is the normalizer's business)


def test_the_tdb_reader_leaves_a_bad_escape_to_the_parser(tmp_path):
    simple, rest = _split_simple_facts(['"C:\\users" r x.', 'a r b.'])
    assert [s[1:4] for s in simple] == [("a", "r", "b")]
    assert rest == ['"C:\\users" r x.', ""]


BODY = st.text(alphabet='ab \\"ntuxZ', max_size=12).map(lambda b: '"' + b + '"').filter(STRING.fullmatch)


@given(BODY)
def test_every_path_reads_a_quoted_name_as_the_oracle_does(token):
    """The parser's one-line path, the LALR builder and the .tdb fast path against ``decode``."""
    name, bad = decode(token)
    line = f"{token} r x."
    want_errors = [(1, k + 1) for k in bad]
    # the one-line fact path of grammar.parser
    try:
        fast = parse(line).statements[0].subject.text
        fast_errors = []
    except LanguageSyntaxError as exc:
        fast, fast_errors = None, [(d.line, d.column) for d in exc.diagnostics]
    # the LALR builder
    found, errs = run(line)
    lalr_errors = sorted((ln, col) for ln, col, _ in errs)
    assert lalr_errors == want_errors
    assert [e for e in fast_errors if e in want_errors] == want_errors
    if not bad:
        assert found[0].subject.text == name
        if fast is not None:
            assert fast == name
    # the .tdb reader's fast path: takes the line only when the name is good, and then reads it the same
    simple, _ = _split_simple_facts([line])
    if bad:
        assert simple == []
    elif simple:
        assert simple[0][1] == name
