"""The entry point of :func:`grammar.parse`: plain statements read without loading lark.

A cold ``thinkingdb query`` or ``why`` parses one short question and, with the default rules, the
small rule library; importing lark and loading its LALR tables cost more than answering a 1-hop
question on a million-fact store. :func:`parse` reads a text itself when each of its lines is blank,
a whole-line comment, or one plain statement:

* a query ``? T R T (, T R T)* .`` where each ``T`` is a symbol or a variable and each ``R`` a
  relation, maybe followed at once by ``+`` or ``*``;
* a why-question ``why S R O .`` of three symbols;
* a rule ``rule NAME [@W]: T R T (, T R T)* => T R T .`` (no ``not``, no comparisons, every head
  variable bound by a premise, a weight in (0, 1] written as a plain decimal);
* a declaration ``relation R transitive.`` / ``symmetric`` / ``inverse S`` / ``subrelation_of S``.

The words are the grammar's own terminals (``SYMBOL`` and ``VAR`` of ``thinkingdb.lark``, matched
atomically as the lexer matches them); a keyword in a word's place, a quote, a trailing comment, a
parenthesis, a statement over two lines or anything else sends the whole text to the full parser
(:mod:`grammar.parser`), as does anything the full parser would report as an error. The tree is the
one the full parser builds, positions included (tests/test_grammar_quick.py compares them).

>>> parse("? n5 depends_on+ ?x.").statements[0].patterns[0].path
Repeat(path=Step(relation=Relation(text='depends_on', phrase=False)), min=1, max=None, exact=False)
>>> parse("why a r b.").statements[0].object
Symbol(text='b')
>>> parse("# a library\\nrule t @0.5: ?x r ?y, ?y r ?z => ?x r ?z.").statements[0].premises[1].object
Variable(name='z')
"""

from __future__ import annotations

import math

from . import ast
from .ast import DECLARATION_KINDS, RESERVED

__all__ = ["parse", "parse_simple"]

SYMBOL = r"\w[\w\-]*(?:[.:]\w[\w\-]*)*"   # the grammar's SYMBOL and VAR terminals (checked by a test)
VAR = r"\?\w+"
MAX_CHARS = 1 << 16                       # a longer text goes to the full parser
_WS = " \t"                               # the white space between words of a line ([ \t])


def _word(text: str, i: int) -> tuple[int, int]:
    """``(kind, end)`` of the word at ``i``: kind 1 a variable (``VAR``), 2 a symbol (``SYMBOL``), 0 none.

    Read with string methods, not with the patterns above: ``re`` and what it loads (``enum``,
    ``functools``, ``collections``) cost a cold question about 4 ms where nothing else has loaded them
    (an installed package; an editable install's finder loads them for every process). A word
    character (``\\w``) is one ``str.isalnum`` calls alphanumeric, or ``_``, as in ``re``. Both terminals
    match as the lexer matches them, longest first, with nothing given back (``?x-y`` is ``?x`` and
    then ``-y``; ``a.b.`` is ``a.b`` and then ``.``); tests/test_grammar_quick.py compares this with
    the patterns on generated text.

    >>> [_word(t, 0) for t in ("?x-y", "a.b.", "GO:0006915 is_a", "?", "-a", "a-b:c-")]
    [(1, 2), (2, 3), (2, 10), (0, 0), (0, 0), (2, 6)]
    """
    n = len(text)
    if i >= n:
        return 0, i
    c = text[i]
    if c == "?":
        j = _word_chars(text, i + 1, n, False)
        return (1, j) if j > i + 1 else (0, i)
    if not (c.isalnum() or c == "_"):
        return 0, i
    j = _word_chars(text, i + 1, n, True)
    while j + 1 < n and text[j] in ".:" and (text[j + 1].isalnum() or text[j + 1] == "_"):
        j = _word_chars(text, j + 2, n, True)
    return 2, j


def _word_chars(text: str, i: int, n: int, hyphen: bool) -> int:
    """The end of the run of word characters (and ``-`` when ``hyphen``) at ``i``."""
    while i < n:
        c = text[i]
        if not (c.isalnum() or c == "_" or (hyphen and c == "-")):
            break
        i += 1
    return i


def _space(text: str, i: int) -> int:
    r"""The end of the run of ``[ \t]`` at ``i``."""
    n = len(text)
    while i < n and text[i] in _WS:
        i += 1
    return i


def _after_keyword(text: str, keyword: str) -> int:
    r"""The start of the first word after ``[ \t]* keyword [ \t]+`` at the start of ``text``, or -1."""
    i = _space(text, 0)
    if not text.startswith(keyword, i):
        return -1
    i += len(keyword)
    j = _space(text, i)
    return j if j > i else -1


def _digits(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i].isdecimal():   # \d: a Unicode decimal digit
        i += 1
    return i


def _weight_end(text: str, i: int) -> int:
    r"""The end of a weight ``\d+(?:\.\d+)?|\.\d+`` at ``i`` (longest, nothing given back), or ``i``."""
    j = _digits(text, i)
    if j > i:
        if text.startswith(".", j) and _digits(text, j + 1) > j + 1:
            return _digits(text, j + 1)
        return j
    if text.startswith(".", i) and _digits(text, i + 1) > i + 1:
        return _digits(text, i + 1)
    return i


def _end_of_statement(text: str, i: int) -> bool:
    r"""``[ \t]* . [ \t]*`` from ``i`` to the end of the line."""
    i = _space(text, i)
    return text.startswith(".", i) and _space(text, i + 1) == len(text)


def parse(text: str, source: str = "<string>") -> ast.Document:
    """:func:`grammar.parser.parse` (same tree, same errors), without lark for plain statements."""
    doc = parse_simple(text, source) if isinstance(text, str) else None
    if doc is not None:
        return doc
    from .parser import parse as full
    return full(text, source)


def parse_simple(text: str, source: str = "<string>") -> ast.Document | None:
    """The tree of ``text`` when every line is blank, a comment or one plain statement (module
    docstring), else None."""
    if len(text) > MAX_CHARS:
        return None
    statements = []
    for lineno, line in enumerate(text.split("\n"), 1):
        body = line.strip(" \t")
        if not body or body[0] == "#":
            continue
        words = body.split(None, 1)
        if not words:     # only other white space (a lone \r, \f): the full parser decides
            return None
        word = words[0]
        read = _query if body[0] == "?" else {"why": _why, "rule": _rule, "relation": _relation}.get(word)
        stmt = None if read is None else read(line, lineno)
        if stmt is None:
            return None
        statements.append(stmt)
    return ast.Document(tuple(statements), source)


def _symbol(text: str, i: int, end: int, line: int) -> ast.Symbol | None:
    word = text[i:end]
    return None if word in RESERVED else ast.Symbol(word, line, i + 1)


def _term(text: str, kind: int, i: int, end: int, line: int) -> ast.Variable | ast.Symbol | None:
    """The term of the word ``text[i:end]`` of ``kind`` (see :func:`_word`)."""
    if kind == 1:
        return ast.Variable(text[i + 1:end], line, i + 1)
    return _symbol(text, i, end, line)


def _relation_at(text: str, i: int, end: int, line: int) -> ast.Relation | None:
    word = text[i:end]
    return None if word in RESERVED else ast.Relation(word, line=line, column=i + 1)


def _triple(text: str, pos: int, line: int, marked: bool):
    r"""``(subject, relation, object, mark, end)`` of ``T [ \t]+ R [+*]? [ \t]+ T`` at ``pos`` (the mark
    only when ``marked``: a query's pattern, not a rule's atom); None if anything else is there."""
    kind, end = _word(text, pos)
    if not kind:
        return None
    s = _term(text, kind, pos, end, line)
    i = _space(text, end)
    rkind, rend = _word(text, i)
    if i == end or rkind != 2:
        return None
    rel = _relation_at(text, i, rend, line)
    mark = ""
    if marked and rend < len(text) and text[rend] in "+*":
        mark, rend = text[rend], rend + 1
    j = _space(text, rend)
    okind, oend = _word(text, j)
    if j == rend or not okind:
        return None
    o = _term(text, okind, j, oend, line)
    if s is None or rel is None or o is None:
        return None
    return s, rel, o, mark, oend


def _separator(text: str, i: int) -> tuple[str, int] | None:
    r"""``(separator, end)`` of ``[ \t]* (, | => | . [ \t]* end of line) [ \t]*`` at ``i``."""
    i = _space(text, i)
    if text.startswith(",", i):
        return ",", _space(text, i + 1)
    if text.startswith("=>", i):
        return "=>", _space(text, i + 2)
    if _end_of_statement(text, i):
        return ".", len(text)
    return None


def _atoms(text: str, pos: int, line: int, marked: bool, last: str):
    """``(atoms, end)``: terms-relation-terms (``marked``: of a query, with an optional ``+``/``*``;
    else of a rule) separated by commas from ``pos`` up to the separator ``last`` (``"."`` or
    ``"=>"``); None if anything else is there."""
    found = []
    while True:
        got = _triple(text, pos, line, marked)
        if got is None:
            return None
        found.append(got[:4])
        sep = _separator(text, got[4])
        if sep is None:
            return None
        if sep[0] != ",":
            return (found, sep[1]) if sep[0] == last else None
        pos = sep[1]


def _query(text: str, line: int) -> ast.Query | None:
    i = _space(text, 0)
    j = _space(text, i + 1)
    if not text.startswith("?", i) or j == i + 1:   # [ \t]* ? [ \t]+
        return None
    got = _atoms(text, j, line, True, ".")
    if got is None:
        return None
    patterns = []
    for s, rel, o, mark in got[0]:
        path = ast.Step(rel)
        if mark:
            path = ast.Repeat(path, 1 if mark == "+" else 0, None)
        patterns.append(ast.Pattern(s, path, o, s.line, s.column))
    return ast.Query(tuple(patterns), patterns[0].line, patterns[0].column)


def _symbols(text: str, i: int, line: int, count: int) -> tuple[list, int] | None:
    r"""``count`` symbols ``(start, end)`` at ``i``, separated by ``[ \t]+``; None if anything else is there."""
    found = []
    for k in range(count):
        if k:
            j = _space(text, i)
            if j == i:
                return None
            i = j
        kind, end = _word(text, i)
        if kind != 2:
            return None
        found.append((i, end))
        i = end
    return found, i


def _why(text: str, line: int) -> ast.Why | None:
    start = _after_keyword(text, "why")
    got = None if start < 0 else _symbols(text, start, line, 3)
    if got is None or not _end_of_statement(text, got[1]):
        return None
    s, r, o = (_symbol(text, i, end, line) for i, end in got[0])
    if s is None or r is None or o is None:
        return None
    return ast.Why(s, ast.Relation(r.text, line=line, column=r.column), o, False, s.line, s.column)


def _rule(text: str, line: int) -> ast.RuleDecl | None:
    start = _after_keyword(text, "rule")
    kind, end = _word(text, start) if start >= 0 else (0, 0)
    if kind != 2 or text[start:end] in RESERVED:
        return None
    i = _space(text, end)
    weight = None
    if text.startswith("@", i):   # [ \t]* @ [ \t]* a weight
        w = _space(text, i + 1)
        i = _weight_end(text, w)
        if i == w:
            return None
        weight = float(text[w:i])
        if not (math.isfinite(weight) and 0.0 < weight <= 1.0):
            return None   # the full parser reports it
        i = _space(text, i)
    if not text.startswith(":", i):
        return None
    body = _atoms(text, _space(text, i + 1), line, False, "=>")
    if body is None:
        return None
    head = _atoms(text, body[1], line, False, ".")
    if head is None or len(head[0]) != 1 or head[1] != len(text):
        return None
    premises = tuple(ast.Atom(s, rel, o, False, s.line, s.column) for s, rel, o, _ in body[0])
    (s, rel, o, _), = head[0]
    from .safety import order_comparisons   # only a rule: not a question
    _, bound, _ = order_comparisons(premises)
    if any(isinstance(t, ast.Variable) and (t.name == "_" or t.name not in bound) for t in (s, o)):
        return None   # an anonymous or unbound head variable: the full parser reports it
    return ast.RuleDecl(text[start:end], premises, ast.Atom(s, rel, o, False, s.line, s.column), weight, line,
                        start + 1)


def _relation(text: str, line: int) -> ast.RelationDecl | None:
    start = _after_keyword(text, "relation")
    got = None if start < 0 else _symbols(text, start, line, 2)
    if got is None:
        return None
    words, i = got
    j = _space(text, i)
    if j > i:   # a third symbol, the other relation, maybe
        kind, end = _word(text, j)
        if kind == 2:
            words.append((j, end))
            i = end
    if not _end_of_statement(text, i) or any(text[a:b] in RESERVED for a, b in words):
        return None
    kind, has_other = text[words[1][0]:words[1][1]], len(words) == 3
    if kind not in DECLARATION_KINDS or has_other != (kind in ("inverse", "subrelation_of")):
        return None   # the full parser reports it
    rel = _relation_at(text, *words[0], line)
    other = _relation_at(text, *words[2], line) if has_other else None
    return ast.RelationDecl(rel, kind, other, rel.line, rel.column)
