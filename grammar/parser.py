"""Parse ThinkingDB source into the frozen syntax tree of :mod:`grammar.ast`.

Plain one-line facts are read here by one regular expression (the same syntax); every other statement
goes through the LALR parser of :mod:`grammar.lalr`, whose tree builder is :mod:`grammar.builder`. When
a source has errors it is parsed again statement by statement (:mod:`grammar.diagnose`) so that every
error in the file is reported, each with line, column, a reason in words and a caret snippet. No lark
exception leaves this module.
"""

from __future__ import annotations

import re

from lark import Token
from lark.exceptions import LarkError, UnexpectedInput, VisitError

from . import ast
from .ast import KEYWORDS  # noqa: F401 (KEYWORDS: also read by thinkingdb.store.tdbfile)
from .builder import ANONYMOUS, escape_errors, number, state, unquote as _unquote  # noqa: F401 (ANONYMOUS: as before the split)
from .errors import Diagnostic, LanguageSyntaxError, make_diagnostic
from .lalr import run


_NAME = r'(\w[\w\-]*(?:[.:]\w[\w\-]*)*|"(?:[^"\\\n]|\\.)*")'
_FACT_LINE = re.compile(r"[ \t]*" + _NAME + r"[ \t]+" + _NAME + r"[ \t]+" + _NAME
                        + r"(?:[ \t]*@[ \t]*([+-]?(?:\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)))?"
                        + r"[ \t]*\.[ \t\r]*(?:#[^\n]*)?")
_LINE_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"?|#[^\n]*|[^"#]+')


def _ends_statement(line: str) -> bool:
    """Whether the last significant character of ``line`` (outside strings and comments) is a period."""
    code = "".join(t for t in _LINE_TOKENS.findall(line) if not t.startswith("#"))
    code = code.rstrip()
    return code.endswith(".") and not code.endswith('"')


def _fact_from_match(m: re.Match, lineno: int, line: str, errors: list) -> ast.Fact:
    names = []
    for g in (1, 2, 3):
        text = m.group(g)
        if text[0] == '"':
            errors.extend(escape_errors(text, lineno, m.start(g) + 1))
        names.append((_unquote(text) if text[0] == '"' else text, m.start(g) + 1, text[0] == '"'))
    conf = None
    if m.group(4) is not None:
        tok = Token("NUMBER", m.group(4), line=1, column=m.start(4) + 1)
        state.line_offset = lineno - 1
        state.errors = errors
        try:
            conf = number(tok, "confidence", low_open=False)
        finally:
            state.line_offset = 0
            state.errors = []
    (s, sc, sq), (r, rc, _), (o, oc, oq) = names
    if not r.strip():
        errors.append((lineno, rc, "a relation name cannot be empty"))
    return ast.Fact(ast.Symbol(s, lineno, sc, sq), ast.Relation(r, line=lineno, column=rc), ast.Symbol(o, lineno, oc, oq),
                    conf, lineno, sc)


def parse(text: str, source: str = "<string>") -> ast.Document:
    """Parse ThinkingDB source text; raise :class:`LanguageSyntaxError` listing every error.

    Plain one-line facts take a fast path (one regular expression, the same syntax); every other
    statement goes through the LALR parser.

    >>> doc = parse('nginx depends_on openssl. "AchillesIDE" uses Ploinky @0.9.')
    >>> [type(s).__name__ for s in doc.statements]
    ['Fact', 'Fact']
    >>> doc.statements[1].confidence
    0.9
    >>> parse("a b c @1.5.")
    Traceback (most recent call last):
    ...
    grammar.errors.LanguageSyntaxError: <string>:1:8: confidence must be in [0, 1], got 1.5
        a b c @1.5.
               ^
    """
    if not isinstance(text, str):
        raise TypeError("parse() takes text (str); decode bytes first")
    statements: list[ast.Statement] = []
    errors: list[tuple[int, int, str]] = []
    diagnostics: list[Diagnostic] = []
    pending: list[str] = []
    pending_start = 0
    lines = text.split("\n")

    def flush() -> None:
        chunk = "\n".join(pending)
        try:
            found, errs = run(chunk, pending_start - 1)
            statements.extend(found)
            errors.extend(errs)
        except (UnexpectedInput, VisitError, LarkError):
            from .diagnose import collect_errors  # noqa: PLC0415 (a source without errors never needs it)
            diagnostics.extend(collect_errors(text, source, chunk, pending_start))
        except RecursionError:   # e.g. 20,000 nested ^ or parentheses: a statement too deep to build
            diagnostics.append(make_diagnostic(text, source, pending_start, 1, "this statement is nested too "
                                               "deeply to read (thousands of nested parentheses or ^)"))
        pending.clear()

    for lineno, line in enumerate(lines, 1):
        if not pending:
            m = _FACT_LINE.fullmatch(line)
            if m is not None and m.group(1) not in KEYWORDS:
                statements.append(_fact_from_match(m, lineno, line, errors))
                continue
            stripped = line.strip()
            if not stripped or stripped[0] == "#":
                continue
            pending_start = lineno
        pending.append(line)
        if _ends_statement(line):
            flush()
    if pending:
        flush()
    diagnostics.extend(make_diagnostic(text, source, *e) for e in errors)
    if diagnostics:
        raise LanguageSyntaxError(sorted(diagnostics, key=lambda d: (d.line, d.column)))
    return ast.Document(tuple(statements), source)
