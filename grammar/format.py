"""Format a syntax tree back into ThinkingDB source, so that ``parse(format(x)) == x``."""

from __future__ import annotations

import re

from . import ast

_BARE = re.compile(r"\w[\w\-]*(?:[.:]\w[\w\-]*)*\Z")
_KEYWORDS = ast.RESERVED
_SIGNED = re.compile(r"[+-]\d+(?:\.\d+)?\Z")
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "%": 2}


def format_name(text: str) -> str:
    """A symbol or relation as source: bare when the lexer reads it back whole, quoted otherwise.

    >>> format_name("nginx"), format_name("Secure Execution"), format_name('say "hi"')
    ('nginx', '"Secure Execution"', '"say \\\\"hi\\\\""')
    """
    if _BARE.match(text) and text not in _KEYWORDS:
        return text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def format_symbol(text: str) -> str:
    """A symbol as source: like :func:`format_name`, and a signed number is bare too.

    >>> format_symbol("-4"), format_symbol("2.5"), format_symbol("New York")
    ('-4', '2.5', '"New York"')
    """
    return text if _SIGNED.match(text) else format_name(text)


def format_expr(e: ast.Expr) -> str:
    """An arithmetic expression with the parentheses its tree needs (and no others).

    >>> from grammar import ast
    >>> x, y, one = ast.Variable("x"), ast.Variable("y"), ast.Symbol("1")
    >>> format_expr(ast.Arith("-", x, ast.Arith("-", y, one))), format_expr(ast.Arith("*", ast.Arith("+", x, y), one))
    ('?x - (?y - 1)', '(?x + ?y) * 1')
    """
    if not isinstance(e, ast.Arith):
        return _term(e)
    mine = _PRECEDENCE[e.op]
    left, right = format_expr(e.left), format_expr(e.right)
    if isinstance(e.left, ast.Arith) and _PRECEDENCE[e.left.op] < mine:
        left = f"({left})"
    if isinstance(e.right, ast.Arith) and _PRECEDENCE[e.right.op] <= mine:
        right = f"({right})"
    return f"{left} {e.op} {right}"


def _number(value: float) -> str:
    text = repr(float(value))
    return text


def _term(t: ast.Term) -> str:
    if isinstance(t, ast.Variable):
        return f"?{t.name}"
    text = format_symbol(t.text)
    return text if not getattr(t, "quoted", False) or text[0] == '"' else f'"{text}"'   # quoted stays quoted


def _rel(r: ast.Relation) -> str:
    """A relation name, or a relation phrase as its bare words."""
    return r.text if r.phrase else format_name(r.text)


def _nary(n: ast.NaryAtom | ast.NaryFact) -> str:
    """``name(a, b, c)``; the name is written bare (the NARY token), so it must be a bare symbol."""
    return f"{n.relation.text}({', '.join(_term(a) for a in n.args)})"


def format_path(p: ast.PathExpr) -> str:
    """``depends_on+``, ``uses/provides``, ``^part_of``, ``(a|b){1,3}``."""
    if isinstance(p, ast.Step):
        return _rel(p.relation)
    if isinstance(p, ast.Inverse):
        return "^" + _atomic(p.path)
    if isinstance(p, ast.Sequence):
        return "/".join(_seq_part(x) for x in p.parts)
    if isinstance(p, ast.Alternative):
        return "|".join(_alt_part(x) for x in p.options)
    if isinstance(p, ast.Repeat):
        inner = _atomic(p.path, for_postfix=True)
        if (p.min, p.max) == (1, None):
            return inner + "+"
        if (p.min, p.max) == (0, None):
            return inner + "*"
        if p.max == p.min and p.exact:
            return f"{inner}{{{p.min}}}"
        return f"{inner}{{{p.min},{'' if p.max is None else p.max}}}"
    raise TypeError(f"not a path: {p!r}")


def _atomic(p: ast.PathExpr, for_postfix: bool = False) -> str:
    if isinstance(p, ast.Step):
        return format_path(p)
    if isinstance(p, ast.Inverse) and not for_postfix:
        return format_path(p)
    return f"({format_path(p)})"


def _seq_part(p: ast.PathExpr) -> str:
    return f"({format_path(p)})" if isinstance(p, (ast.Alternative, ast.Sequence)) else format_path(p)


def _alt_part(p: ast.PathExpr) -> str:
    return f"({format_path(p)})" if isinstance(p, ast.Alternative) else format_path(p)


def _atom(a: ast.Atom | ast.Pattern | ast.NaryAtom | ast.Comparison) -> str:
    if isinstance(a, ast.Comparison):
        return f"{format_expr(a.left)} {a.op} {format_expr(a.right)}"
    neg = "not " if getattr(a, "negated", False) else ""
    if isinstance(a, ast.NaryAtom):
        return neg + _nary(a)
    middle = _rel(a.relation) if isinstance(a, ast.Atom) else format_path(a.path)
    return f"{neg}{_term(a.subject)} {middle} {_term(a.object)}"


def format_statement(s: ast.Statement) -> str:
    """One statement as a line of source.

    >>> from grammar import parse
    >>> format_statement(parse("rule r @0.5: ?x a ?y => ?y b ?x.").statements[0])
    'rule r @0.5: ?x a ?y => ?y b ?x.'
    """
    if isinstance(s, ast.Fact):
        conf = "" if s.confidence is None else f" @{_number(s.confidence)}"
        return f"{_term(s.subject)} {_rel(s.relation)} {_term(s.object)}{conf}."
    if isinstance(s, ast.NaryFact):
        conf = "" if s.confidence is None else f" @{_number(s.confidence)}"
        return f"{_nary(s)}{conf}."
    if isinstance(s, ast.RelationDecl):
        other = "" if s.other is None else " " + format_name(s.other.text)
        return f"relation {format_name(s.relation.text)} {s.kind}{other}."
    if isinstance(s, ast.Alias):
        return f"alias {format_name(s.phrase.text)} => {format_name(s.relation.text)}."
    if isinstance(s, ast.RuleDecl):
        weight = "" if s.weight is None else f" @{_number(s.weight)}"
        body = ", ".join(_atom(a) for a in s.premises)
        return f"rule {s.name}{weight}: {body} => {_atom(s.head)}."
    if isinstance(s, ast.Query):
        return "? " + ", ".join(_atom(p) for p in s.patterns) + "."
    if isinstance(s, ast.Why):
        neg = "not " if s.negated else ""
        return f"why {neg}{_term(s.subject)} {_rel(s.relation)} {_term(s.object)}."
    raise TypeError(f"not a statement: {s!r}")


def format_document(doc: ast.Document) -> str:
    """The whole document, one statement per line."""
    return "".join(format_statement(s) + "\n" for s in doc.statements)
