"""The entry point of :func:`grammar.parse`: one plain question read without loading lark.

A cold ``thinkingdb query`` or ``why`` parses one short statement; importing lark and loading its
LALR tables cost more than answering a 1-hop question on a million-fact store. :func:`parse` reads
exactly two shapes itself, each on one line and built from bare words only:

* a query ``? T R T (, T R T)* .`` where each ``T`` is a symbol or a variable and each ``R`` a
  relation, maybe followed at once by ``+`` or ``*``;
* a why-question ``why S R O .`` of three symbols.

The words are the grammar's own terminals (``SYMBOL`` and ``VAR`` of ``thinkingdb.lark``, matched
atomically as the lexer matches them); a keyword, a quote, a comment, a parenthesis or any other
character sends the text to the full parser (:mod:`grammar.parser`), as does anything else. The tree
is the one the full parser builds, positions included (tests/test_grammar_quick.py compares them).

>>> parse("? n5 depends_on+ ?x.").statements[0].patterns[0].path
Repeat(path=Step(relation=Relation(text='depends_on', phrase=False)), min=1, max=None, exact=False)
>>> parse("why a r b.").statements[0].object
Symbol(text='b')
"""

from __future__ import annotations

import re

from . import ast

__all__ = ["parse", "parse_simple"]

SYMBOL = r"\w[\w\-]*(?:[.:]\w[\w\-]*)*"   # the grammar's SYMBOL and VAR terminals (checked by a test)
VAR = r"\?\w+"
_KEYWORDS = frozenset({"relation", "alias", "rule", "why", "not"})   # the grammar's words: the full parser
_WS = r"[ \t]"
_TERM = rf"(?>({VAR})|({SYMBOL}))"
_PATTERN = rf"{_TERM}{_WS}+(?>({SYMBOL}))([+*]?){_WS}+{_TERM}"
_QUERY_HEAD = re.compile(rf"{_WS}*\?{_WS}+")
_QUERY_PATTERN = re.compile(_PATTERN)
_QUERY_SEP = re.compile(rf"{_WS}*(,|\.{_WS}*$){_WS}*")
_WHY = re.compile(rf"{_WS}*why{_WS}+(?>({SYMBOL})){_WS}+(?>({SYMBOL})){_WS}+(?>({SYMBOL})){_WS}*\.{_WS}*")


def parse(text: str, source: str = "<string>") -> ast.Document:
    """:func:`grammar.parser.parse` (same tree, same errors), without lark for a plain question."""
    doc = parse_simple(text, source) if isinstance(text, str) else None
    if doc is not None:
        return doc
    from .parser import parse as full
    return full(text, source)


def parse_simple(text: str, source: str = "<string>") -> ast.Document | None:
    """The tree of ``text`` when it is one of the two plain shapes (module docstring), else None."""
    if len(text) > 4096 or "\n" in text:
        return None
    if text.lstrip(" \t").startswith("?"):
        stmt = _query(text)
    else:
        stmt = _why(text)
    return None if stmt is None else ast.Document((stmt,), source)


def _term(m: re.Match, var: int, sym: int) -> ast.Variable | ast.Symbol | None:
    if m.group(var) is not None:
        return ast.Variable(m.group(var)[1:], 1, m.start(var) + 1)
    word = m.group(sym)
    return None if word in _KEYWORDS else ast.Symbol(word, 1, m.start(sym) + 1)


def _query(text: str) -> ast.Query | None:
    m = _QUERY_HEAD.match(text)
    if m is None:
        return None
    pos, patterns = m.end(), []
    while True:
        m = _QUERY_PATTERN.match(text, pos)
        if m is None:
            return None
        s, o = _term(m, 1, 2), _term(m, 5, 6)
        if s is None or o is None or m.group(3) in _KEYWORDS:
            return None
        path = ast.Step(ast.Relation(m.group(3), line=1, column=m.start(3) + 1))
        if m.group(4):
            path = ast.Repeat(path, 1 if m.group(4) == "+" else 0, None)
        patterns.append(ast.Pattern(s, path, o, s.line, s.column))
        sep = _QUERY_SEP.match(text, m.end())
        if sep is None:
            return None
        if sep.group(1) != ",":
            return ast.Query(tuple(patterns), patterns[0].line, patterns[0].column)
        pos = sep.end()


def _why(text: str) -> ast.Why | None:
    m = _WHY.fullmatch(text)
    if m is None or any(m.group(i) in _KEYWORDS for i in (1, 2, 3)):
        return None
    s, r, o = (ast.Symbol(m.group(i), 1, m.start(i) + 1) for i in (1, 2, 3))
    return ast.Why(s, ast.Relation(r.text, line=1, column=r.column), o, False, s.line, s.column)
