"""Syntax errors of :mod:`grammar.parser` described in words.

A source that fails to parse is parsed again statement by statement (:func:`collect_errors`), so that
every error in the file is reported, and each lark exception becomes a line, a column and a reason:
a missing period, an unterminated string, a keyword used as a symbol, or the terminals it expected,
named as a reader would (``_TERMINAL_WORDS``). No lark exception leaves this module.
"""

from __future__ import annotations

import re

from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from .builder import shown
from .errors import Diagnostic, make_diagnostic
from .lalr import lark_parser, run

__all__ = ["collect_errors"]

_TERMINAL_WORDS = {
    "SYMBOL": "a symbol",
    "STRING": "a quoted string",
    "VAR": "a variable such as ?x",
    "NUMBER": "a number",
    "INT": "a whole number",
    "DOT": "a period '.'",
    "AT": "'@' and a confidence",
    "COMMA": "','",
    "COLON": "':'",
    "QMARK": "'?'",
    "LPAR": "'('",
    "RPAR": "')'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "VBAR": "'|'",
    "SLASH": "'/'",
    "CIRCUMFLEX": "'^'",
    "PLUS": "'+'",
    "STAR": "'*'",
    "NOT": "'not'",
    "LESSTHAN": "'<'",
    "MORETHAN": "'>'",
    "EQUAL": "'='",
    "SIGNED": "a symbol",   # a signed number is a symbol too
    "MINUS": "'-'",
    "PERCENT": "'%'",
    "NARY": "an n-ary statement such as name(a, b, c)",
    "$END": "the end of the input",
}


def _expected_words(expected) -> str:
    names = sorted({_TERMINAL_WORDS.get(e, None) or _keyword_word(e) for e in expected})
    if len(names) > 6:
        names = names[:6] + ["..."]
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " or " + names[-1]


def _keyword_word(name: str) -> str:
    for term in lark_parser().terminals:
        if term.name == name and term.pattern.type == "str":
            return f"'{term.pattern.value}'"
    return name.lower()


def _describe(exc: UnexpectedInput, text: str) -> tuple[int, int, str]:
    if isinstance(exc, UnexpectedCharacters):
        ch = text[exc.pos_in_stream] if exc.pos_in_stream < len(text) else ""
        if ch == '"':
            return exc.line, exc.column, "unterminated quoted string (a closing \" is missing on this line)"
        if ch == "?":
            return exc.line, exc.column, "a variable needs a name, as in ?x"
        char = repr(ch) if ch.isprintable() and ch else f"U+{ord(ch):04X}" if ch else "end of input"
        return exc.line, exc.column, f"unexpected character {char}"
    if isinstance(exc, UnexpectedEOF) or (isinstance(exc, UnexpectedToken) and exc.token.type == "$END"):
        expected = getattr(exc, "expected", None) or getattr(exc, "accepts", None) or set()
        line, col = _end_position(text)
        if "DOT" in expected:
            return line, col, "missing period '.' at the end of the statement"
        return line, col, f"the input ends too early: expected {_expected_words(expected)}"
    assert isinstance(exc, UnexpectedToken)
    tok = exc.token
    expected = exc.accepts or exc.expected
    found = f"'{shown(tok.value)}'"
    if tok.type == "DOT" and "RULE" in expected:
        return tok.line, tok.column, "a stray period '.' with no statement before it"
    if tok.type == "QMARK" and "QMARK" not in expected:
        return tok.line, tok.column, "a variable needs a name, as in ?x"
    if tok.type == "NUMBER" or (tok.type == "SYMBOL" and "NUMBER" in expected):
        return tok.line, tok.column, f"a confidence must be a number, got {found}"
    if "DOT" in expected and "AT" in expected and tok.type in ("SYMBOL", "STRING"):
        return tok.line, tok.column, f"missing period '.' before {found}: a fact has exactly three parts"
    if "DOT" in expected and tok.type in ("SYMBOL", "STRING", "VAR", "RULE", "RELATION", "ALIAS", "WHY", "QMARK"):
        return tok.line, tok.column, f"missing period '.' at the end of the statement, before {found}"
    if "EQUAL" in expected and "LESSTHAN" in expected and "SYMBOL" not in expected:
        return tok.line, tok.column, (f"a comparison needs one of <, <=, >, >=, =, != between two expressions, "
                                      f"found {found}")
    if tok.type == "DOT":
        return tok.line, tok.column, f"the statement ends too early: expected {_expected_words(expected)} before '.'"
    if tok.type in ("RELATION", "ALIAS", "RULE", "WHY"):
        return tok.line, tok.column, (f"'{tok.value}' is a keyword here; quote it (\"{tok.value}\") to use it as a symbol")
    return tok.line, tok.column, f"expected {_expected_words(expected)}, found {found}"


def _end_position(text: str) -> tuple[int, int]:
    stripped = text.rstrip()
    line = stripped.count("\n") + 1
    col = len(stripped) - (stripped.rfind("\n") + 1) + 1
    return line, col


_SPLIT = re.compile(r'"(?:[^"\\\n]|\\.)*"?|#[^\n]*|\.(?!\w)|[^".#]+|.', re.S)


def _chunks(text: str):
    """Yield (start_offset, chunk) pieces that each end after one statement's period."""
    start = 0
    for m in _SPLIT.finditer(text):
        if m.group() == ".":
            yield start, text[start:m.end()]
            start = m.end()
    if text[start:].strip():
        yield start, text[start:]


def collect_errors(text: str, source: str, chunk: str, first_line: int) -> list[Diagnostic]:
    """Parse a failing chunk statement by statement and describe every error in it."""
    out: list[Diagnostic] = []
    for offset, piece in _chunks(chunk):
        base_line = first_line + chunk.count("\n", 0, offset)
        base_col = offset - (chunk.rfind("\n", 0, offset) + 1) + 1
        try:
            _, errors = run(piece)
            found = errors
        except UnexpectedInput as exc:
            found = [_describe(exc, piece)]
        except (LarkError, VisitError) as exc:  # pragma: no cover - defensive
            found = [(1, 1, f"cannot parse this statement ({type(exc).__name__})")]
        for line, col, reason, *code in found:
            abs_line = base_line + line - 1
            abs_col = col + base_col - 1 if line == 1 else col
            out.append(make_diagnostic(text, source, abs_line, abs_col, reason, *code))
    if not out:
        try:
            run(chunk)
        except UnexpectedInput as exc:
            line, col, reason = _describe(exc, chunk)
            out.append(make_diagnostic(text, source, first_line + line - 1, col, reason))
    return out
