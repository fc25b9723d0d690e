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
import re

from . import ast
from .ast import DECLARATION_KINDS, RESERVED
from .safety import order_comparisons

__all__ = ["parse", "parse_simple"]

SYMBOL = r"\w[\w\-]*(?:[.:]\w[\w\-]*)*"   # the grammar's SYMBOL and VAR terminals (checked by a test)
VAR = r"\?\w+"
MAX_CHARS = 1 << 16                       # a longer text goes to the full parser
_WS = r"[ \t]"
_SYM = rf"(?>({SYMBOL}))"
_TERM = rf"(?>({VAR})|({SYMBOL}))"
_SOURCES = {
    "atom": rf"{_TERM}{_WS}+{_SYM}{_WS}+{_TERM}",
    "pattern": rf"{_TERM}{_WS}+{_SYM}([+*]?){_WS}+{_TERM}",
    "query_head": rf"{_WS}*\?{_WS}+",
    "sep": rf"{_WS}*(,|=>|\.{_WS}*$){_WS}*",
    "why": rf"{_WS}*why{_WS}+{_SYM}{_WS}+{_SYM}{_WS}+{_SYM}{_WS}*\.{_WS}*",
    "rule_head": rf"{_WS}*rule{_WS}+{_SYM}(?:{_WS}*@{_WS}*(?>(\d+(?:\.\d+)?|\.\d+)))?{_WS}*:{_WS}*",
    "relation": rf"{_WS}*relation{_WS}+{_SYM}{_WS}+{_SYM}(?:{_WS}+{_SYM})?{_WS}*\.{_WS}*",
}
_COMPILED: dict[str, re.Pattern] = {}


def _re(name: str) -> re.Pattern:
    """The pattern ``name`` of :data:`_SOURCES`, compiled on first use: a cold question needs three of
    the seven, and each costs a fresh process a fraction of a millisecond to compile."""
    got = _COMPILED.get(name)
    if got is None:
        got = _COMPILED[name] = re.compile(_SOURCES[name])
    return got


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


def _symbol(m: re.Match, g: int, line: int) -> ast.Symbol | None:
    word = m.group(g)
    return None if word in RESERVED else ast.Symbol(word, line, m.start(g) + 1)


def _term(m: re.Match, g: int, line: int) -> ast.Variable | ast.Symbol | None:
    """The term of groups ``g`` (a variable) and ``g + 1`` (a symbol) of ``m``."""
    if m.group(g) is not None:
        return ast.Variable(m.group(g)[1:], line, m.start(g) + 1)
    return _symbol(m, g + 1, line)


def _relation_at(m: re.Match, g: int, line: int) -> ast.Relation | None:
    word = m.group(g)
    return None if word in RESERVED else ast.Relation(word, line=line, column=m.start(g) + 1)


def _atoms(text: str, pos: int, line: int, kind: str, last: str):
    """``(atoms, end)``: terms-relation-terms (``kind``: ``"pattern"`` of a query, with an optional
    ``+``/``*``, or ``"atom"`` of a rule) separated by commas from ``pos`` up to the separator ``last``
    (``"."`` or ``"=>"``); None if anything else is there."""
    found = []
    pattern, sep_re, marked = _re(kind), _re("sep"), kind == "pattern"
    while True:
        m = pattern.match(text, pos)
        if m is None:
            return None
        s, rel, o = _term(m, 1, line), _relation_at(m, 3, line), _term(m, 5 if marked else 4, line)
        if s is None or rel is None or o is None:
            return None
        found.append((s, rel, o, m.group(4) if marked else ""))
        sep = sep_re.match(text, m.end())
        if sep is None:
            return None
        if sep.group(1) != ",":
            return (found, sep.end()) if sep.group(1).startswith(last) else None
        pos = sep.end()


def _query(text: str, line: int) -> ast.Query | None:
    m = _re("query_head").match(text)
    got = None if m is None else _atoms(text, m.end(), line, "pattern", ".")
    if got is None:
        return None
    patterns = []
    for s, rel, o, mark in got[0]:
        path = ast.Step(rel)
        if mark:
            path = ast.Repeat(path, 1 if mark == "+" else 0, None)
        patterns.append(ast.Pattern(s, path, o, s.line, s.column))
    return ast.Query(tuple(patterns), patterns[0].line, patterns[0].column)


def _why(text: str, line: int) -> ast.Why | None:
    m = _re("why").fullmatch(text)
    if m is None:
        return None
    s, r, o = (_symbol(m, i, line) for i in (1, 2, 3))
    if s is None or r is None or o is None:
        return None
    return ast.Why(s, ast.Relation(r.text, line=line, column=r.column), o, False, s.line, s.column)


def _rule(text: str, line: int) -> ast.RuleDecl | None:
    m = _re("rule_head").match(text)
    if m is None or m.group(1) in RESERVED:
        return None
    weight = None
    if m.group(2) is not None:
        weight = float(m.group(2))
        if not (math.isfinite(weight) and 0.0 < weight <= 1.0):
            return None   # the full parser reports it
    body = _atoms(text, m.end(), line, "atom", "=>")
    if body is None:
        return None
    head = _atoms(text, body[1], line, "atom", ".")
    if head is None or len(head[0]) != 1 or head[1] != len(text):
        return None
    premises = tuple(ast.Atom(s, rel, o, False, s.line, s.column) for s, rel, o, _ in body[0])
    (s, rel, o, _), = head[0]
    _, bound, _ = order_comparisons(premises)
    if any(isinstance(t, ast.Variable) and (t.name == "_" or t.name not in bound) for t in (s, o)):
        return None   # an anonymous or unbound head variable: the full parser reports it
    return ast.RuleDecl(m.group(1), premises, ast.Atom(s, rel, o, False, s.line, s.column), weight, line,
                        m.start(1) + 1)


def _relation(text: str, line: int) -> ast.RelationDecl | None:
    m = _re("relation").fullmatch(text)
    if m is None or any(m.group(i) in RESERVED for i in (1, 2, 3)):
        return None
    kind, has_other = m.group(2), m.group(3) is not None
    if kind not in DECLARATION_KINDS or has_other != (kind in ("inverse", "subrelation_of")):
        return None   # the full parser reports it
    rel = _relation_at(m, 1, line)
    other = _relation_at(m, 3, line) if has_other else None
    return ast.RelationDecl(rel, kind, other, rel.line, rel.column)
