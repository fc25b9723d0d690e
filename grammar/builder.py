"""The tree builder of :mod:`grammar.parser`: lark's parse results straight into :mod:`grammar.ast`
nodes, inside the LALR parser, with the checks a statement's grammar cannot make.

The checks record an error (line, column, reason in words, sometimes a code) in the thread's
:data:`state` instead of raising, so every error of a statement is reported: confidences and weights
in range, declarations' kinds and arities, relation phrases of bare words, a fact without variables,
and a rule's safety (every head variable and every ``not`` premise's variable bound by a positive
premise, every comparison's variables bound or assigned, ``?_`` never in a head).
"""

from __future__ import annotations

import math
import re
import threading

from lark import Token, Transformer

from . import ast
from .ast import DECLARATION_KINDS
from .safety import order_comparisons

__all__ = ["ANONYMOUS", "ESCAPES", "Builder", "escape_errors", "number", "shown", "state", "unquote"]

ANONYMOUS = "_"   # ``?_``: each occurrence is a fresh variable that binds nothing


class _State(threading.local):
    errors: list[tuple[int, int, str]]
    line_offset: int

    def __init__(self) -> None:
        self.errors = []
        self.line_offset = 0


state = _State()


def _line(tok: Token) -> int:
    return tok.line + state.line_offset


def _err(tok: Token, reason: str) -> None:
    state.errors.append((_line(tok), tok.column, reason))


# The escapes of a quoted name (README, "symbol"); any other backslash pair is an error, not dropped.
ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t"}
_ESCAPE = re.compile(r"\\(.)", re.S)


def unquote(text: str) -> str:
    r"""The name a quoted token stands for (an unknown escape is kept as written; see escape_errors).

    >>> unquote(r'"a\\b\"c\td"')
    'a\\b"c\td'
    """
    body = text[1:-1]
    if "\\" not in body:
        return body
    return _ESCAPE.sub(lambda m: ESCAPES.get(m.group(1), m.group(0)), body)


def escape_errors(text: str, line: int, column: int) -> list[tuple[int, int, str]]:
    r"""One error per unknown escape of the quoted token ``text`` written at ``line``:``column``.

    >>> for e in escape_errors(r'"C:\users\\me"', 1, 1): print(*e)
    1 4 unknown escape \u in a quoted name; write \\ for a backslash (the escapes are \" \\ \n \t)
    """
    if "\\" not in text:
        return []
    return [(line, column + m.start(), f"unknown escape \\{shown(repr(m.group(1))[1:-1], 8)} in a quoted name; "
                                       r'write \\ for a backslash (the escapes are \" \\ \n \t)')
            for m in _ESCAPE.finditer(text, 1, len(text) - 1) if m.group(1) not in ESCAPES]


def shown(text: str, width: int = 30) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def number(tok: Token, what: str, *, low_open: bool) -> float:
    try:
        value = float(tok)
    except ValueError:  # the NUMBER terminal admits only float syntax; kept for safety
        value = math.nan
    if not math.isfinite(value):
        _err(tok, f"{what} must be a finite number, got {shown(tok.value)}")
        return 1.0
    if value > 1.0 or value < 0.0 or (low_open and value == 0.0):
        span = "(0, 1]" if low_open else "[0, 1]"
        _err(tok, f"{what} must be in {span}, got {shown(tok.value)}")
        return 1.0
    return value


class _Quoted(ast.Symbol):
    """A symbol written in quotes (only while building: a relation phrase takes bare words only)."""


def _plain(t):
    """The term as the tree keeps it: a :class:`_Quoted` becomes a plain :class:`ast.Symbol`."""
    if isinstance(t, Token):
        return ast.Variable(t.value[1:], _line(t), t.column)
    if type(t) is _Quoted:
        return ast.Symbol(t.text, t.line, t.column, quoted=True)
    return t


def _relation_of(middle: list) -> ast.Relation:
    """The relation between a subject and an object: one name, or bare words (a relation phrase)."""
    first = middle[0]
    if isinstance(first, Token):
        _err(first, "a relation cannot be a variable")
        return ast.Relation("_", line=_line(first), column=first.column)
    if len(middle) == 1:
        if not first.text.strip():
            state.errors.append((first.line, first.column, "a relation name cannot be empty"))
        return ast.Relation(first.text, line=first.line, column=first.column)
    for w in middle:
        if isinstance(w, Token):
            _err(w, "a relation cannot be a variable")
        elif type(w) is _Quoted:
            state.errors.append((w.line, w.column, "a relation phrase is bare words; a quoted name "
                                                    "cannot be part of one"))
    words = " ".join(w.value if isinstance(w, Token) else w.text for w in middle)
    return ast.Relation(words, phrase=True, line=first.line, column=first.column)


def _variables(node) -> list:
    terms = (node.subject, node.object) if isinstance(node, (ast.Atom, ast.Pattern)) else node.args
    return [t for t in terms if isinstance(t, ast.Variable)]


class Builder(Transformer):
    """Turns parse results straight into :mod:`grammar.ast` nodes (runs inside the LALR parser)."""

    def sym(self, c):
        tok = c[0]
        if tok.type == "STRING":
            state.errors.extend(escape_errors(tok.value, _line(tok), tok.column))
            return _Quoted(unquote(tok.value), _line(tok), tok.column)
        return ast.Symbol(tok.value, _line(tok), tok.column)

    def rel(self, c):
        tok = c[0]
        text = tok.value
        if tok.type == "STRING":
            state.errors.extend(escape_errors(tok.value, _line(tok), tok.column))
            text = unquote(tok.value)
        if not text.strip():
            _err(tok, "a relation name cannot be empty")
        return ast.Relation(text, line=_line(tok), column=tok.column)

    def confidence(self, c):
        return c[0]

    def fact(self, c):
        conf_tok = c[-1] if isinstance(c[-1], Token) else None
        words = c[:-1] if conf_tok is not None else c
        s, o = _plain(words[0]), _plain(words[-1])
        conf = number(conf_tok, "confidence", low_open=False) if conf_tok is not None else None
        return ast.Fact(s, _relation_of(words[1:-1]), o, conf, s.line, s.column)

    def nary_fact(self, c):
        tok, args = c[0], c[1]
        rel = ast.Relation(tok.value[:-1], line=_line(tok), column=tok.column)
        conf = number(c[2], "confidence", low_open=False) if len(c) > 2 and c[2] is not None else None
        for a in args:
            if isinstance(a, ast.Variable):
                state.errors.append((a.line, a.column, "a fact cannot hold a variable"))
        return ast.NaryFact(rel, args, conf, rel.line, rel.column)

    def args(self, c):
        return tuple(_plain(t) for t in c)

    def nary(self, c):
        tok = c[0]
        return ast.NaryAtom(ast.Relation(tok.value[:-1], line=_line(tok), column=tok.column), c[1],
                            False, _line(tok), tok.column)

    def relation_decl(self, c):
        rel, kind_tok = c[0], c[1]
        other = c[2] if len(c) > 2 else None
        kind = kind_tok.value
        if kind not in DECLARATION_KINDS:
            _err(kind_tok, f"unknown relation property '{shown(kind)}'; expected transitive, symmetric, "
                           "inverse or subrelation_of")
        elif kind in ("inverse", "subrelation_of") and other is None:
            _err(kind_tok, f"'{kind}' needs the other relation's name")
        elif kind in ("transitive", "symmetric") and other is not None:
            state.errors.append((other.line, other.column, f"'{kind}' takes no other relation"))
        return ast.RelationDecl(rel, kind, other, rel.line, rel.column)

    def alias_decl(self, c):
        phrase = _plain(c[0])
        return ast.Alias(phrase, c[1], phrase.line, phrase.column)

    def atom(self, c):
        s, o = _plain(c[0]), _plain(c[-1])
        return ast.Atom(s, _relation_of(c[1:-1]), o, False, s.line, s.column)

    def _arith(self, op, c):
        left, right = _plain(c[0]), _plain(c[1])
        return ast.Arith(op, left, right, left.line, left.column)

    def add(self, c):
        return self._arith("+", c)

    def sub(self, c):
        return self._arith("-", c)

    def mul(self, c):
        return self._arith("*", c)

    def div(self, c):
        return self._arith("/", c)

    def mod(self, c):
        return self._arith("%", c)

    def compare(self, c):
        return c[0].value

    def comparison(self, c):
        left, op, right = _plain(c[0]), c[1], _plain(c[2])
        return ast.Comparison(left, op, right, left.line, left.column)

    def premise(self, c):
        node = c[-1]
        if len(c) == 1:
            return node
        if isinstance(node, ast.Atom):
            return ast.Atom(node.subject, node.relation, node.object, True, _line(c[0]), c[0].column)
        return ast.NaryAtom(node.relation, node.args, True, _line(c[0]), c[0].column)

    def head(self, c):
        return c[0]

    def rule_decl(self, c):
        name_tok = c[0]
        rest = c[1:]
        weight = None
        if rest and (isinstance(rest[0], Token) or rest[0] is None):
            weight = None if rest[0] is None else number(rest[0], "rule weight", low_open=True)
            rest = rest[1:]
        premises, head = tuple(rest[:-1]), rest[-1]
        name = name_tok.value
        _, body_vars, unbound = order_comparisons(premises)
        comparisons = [a for a in premises if isinstance(a, ast.Comparison)]
        premises_only = [a for a in premises if not isinstance(a, ast.Comparison)]
        for t in unbound:
            why = ("the anonymous variable ?_ binds nothing" if t.name == ANONYMOUS else
                   f"?{t.name} is bound by no positive premise and assigned by no '?{t.name} = ...'")
            state.errors.append((t.line, t.column, f"unbound variable in a comparison of rule {name}: {why}",
                                  "unbound_variable"))
        if comparisons and not any(not a.negated for a in premises_only):
            state.errors.append((comparisons[0].line, comparisons[0].column, f"rule {name} has comparisons but no "
                                  "positive premise: add one that they can test", "unbound_variable"))
        assigned_somewhere = {side.name for c in comparisons if c.op == "=" for side in (c.left, c.right)
                              if isinstance(side, ast.Variable)}   # unbound: the cause is reported above
        for t in _variables(head):
            if t.name not in body_vars and t.name in assigned_somewhere and unbound:
                continue
            if t.name == ANONYMOUS:
                state.errors.append((t.line, t.column, f"the anonymous variable ?_ cannot stand in the head "
                                                        f"of rule {name}: it binds nothing", "anonymous_in_head"))
            elif t.name not in body_vars:
                state.errors.append((t.line, t.column,
                                      f"head variable ?{t.name} of rule {name} does not occur in any premise",
                                      "unbound_variable"))
        for a in premises_only:
            if a.negated:
                for t in _variables(a):
                    if t.name != ANONYMOUS and t.name not in body_vars:
                        state.errors.append((t.line, t.column, f"unsafe negation in rule {name}: ?{t.name} of a "
                                                                f"'not' premise is bound by no positive premise",
                                                                "unsafe_negation"))
        if premises_only and all(a.negated for a in premises_only) and any(_variables(a) for a in premises_only):
            state.errors.append((premises[0].line, premises[0].column,
                                  f"rule {name} has only 'not' premises with variables; add a positive premise "
                                  "that binds them", "unsafe_negation"))
        return ast.RuleDecl(name, premises, head, weight, _line(name_tok), name_tok.column)

    def qpattern(self, c):
        if len(c) == 1:
            return c[0]
        s, path, rest = _plain(c[0]), c[1], c[2:]
        o = _plain(rest[-1])
        if len(rest) > 1:   # words after the path: ``? Harbor relies on ?x`` (a relation phrase)
            if not isinstance(path, ast.Step):
                state.errors.append((o.line, o.column, "a path is followed by one term, the object"))
                return ast.Pattern(s, path, o, s.line, s.column)
            first = path.relation
            path = ast.Step(_relation_of([ast.Symbol(first.text, first.line, first.column)] + list(rest[:-1])))
        return ast.Pattern(s, path, o, s.line, s.column)

    def query(self, c):
        return ast.Query(tuple(c), c[0].line, c[0].column)

    def why(self, c):
        negated = isinstance(c[0], Token) and c[0].type == "NOT"
        words = c[1:] if negated else c
        s, o = _plain(words[0]), _plain(words[-1])
        return ast.Why(s, _relation_of(words[1:-1]), o, negated, s.line, s.column)

    def step(self, c):
        return ast.Step(c[0])

    def alt(self, c):
        return ast.Alternative(tuple(c))

    def seq(self, c):
        return ast.Sequence(tuple(c))

    def inverse(self, c):
        return ast.Inverse(c[0])

    def plus(self, c):
        return ast.Repeat(c[0], 1, None)

    def star(self, c):
        return ast.Repeat(c[0], 0, None)

    def repeat(self, c):
        lo = int(c[1])
        hi = int(c[2]) if len(c) > 2 and c[2] is not None else None
        if hi is not None and hi < lo:
            _err(c[1], f"repetition {{{lo},{hi}}} has its maximum below its minimum")
            hi = lo
        return ast.Repeat(c[0], lo, hi)

    def repeat_exact(self, c):
        n = int(c[1])
        return ast.Repeat(c[0], n, n, exact=True)

    def start(self, c):
        return tuple(c)
