"""Errors of the language package.

    GrammarError(ValueError)        root; ``diagnostics`` lists every problem found in the source
    └── LanguageSyntaxError         the text does not parse or a value in it is invalid

The ``thinkingdb`` package translates these into ``thinkingdb.errors.ParseError`` at its boundary.
"""

from __future__ import annotations

from .values import Value

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence

SNIPPET_WIDTH = 72


class Diagnostic(Value):
    """One problem: where (source, 1-based line and column), why (a reason in words) and the snippet.

    ``thinkingdb.errors`` re-exports this class; its errors carry these records.

    >>> d = Diagnostic("facts.tdb", 3, 7, "expected a period at the end of the fact", "a b c", 7)
    >>> print(d.render())
    facts.tdb:3:7: expected a period at the end of the fact
        a b c
              ^
    """

    __slots__ = ("source", "line", "column", "reason", "snippet", "caret", "code")
    source: str
    line: int
    column: int
    reason: str
    snippet: str
    caret: int
    code: str   # the kind of problem, for programs: "syntax", "unsafe_negation", "cyclic_negation", ...

    def __init__(self, source: str, line: int, column: int, reason: str, snippet: str = "", caret: int = 0,
                 code: str = "") -> None:
        _set = object.__setattr__
        _set(self, "source", source)
        _set(self, "line", line)
        _set(self, "column", column)
        _set(self, "reason", reason)
        _set(self, "snippet", snippet)
        _set(self, "caret", caret)
        _set(self, "code", code)

    def render(self) -> str:
        # no line (a whole file, or no file at all): no made-up ":0:0"
        where = self.source if not self.line else f"{self.source}:{self.line}" if not self.column \
            else f"{self.source}:{self.line}:{self.column}"
        head = f"{where}: {self.reason}" if where else self.reason
        if not self.snippet:
            return head
        return f"{head}\n    {self.snippet}\n    {' ' * max(self.caret - 1, 0)}^"

    def to_json(self) -> dict:
        return {"source": self.source, "line": self.line, "column": self.column, "reason": self.reason,
                "code": self.code or "syntax"}


_SPLIT_CACHE: list = [None, []]   # the last text split into lines: one file's many errors split it once


def _lines(text: str) -> list[str]:
    if _SPLIT_CACHE[0] is not text:
        _SPLIT_CACHE[0], _SPLIT_CACHE[1] = text, text.split("\n")
    return _SPLIT_CACHE[1]


def make_diagnostic(text: str, source: str, line: int, column: int, reason: str, code: str = "") -> Diagnostic:
    """Build a diagnostic with a caret snippet cut from ``text`` (long lines are windowed).

    >>> d = make_diagnostic("a b c d.", "x.tdb", 1, 7, "missing period")
    >>> print(d.render())
    x.tdb:1:7: missing period
        a b c d.
              ^
    """
    lines = _lines(text)
    raw = lines[line - 1] if 0 < line <= len(lines) else ""
    raw = raw.replace("\t", " ").replace("\r", "")
    start = max(0, column - 1 - SNIPPET_WIDTH // 2) if len(raw) > SNIPPET_WIDTH else 0
    window = raw[start:start + SNIPPET_WIDTH]
    caret = column - start
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + SNIPPET_WIDTH < len(raw) else ""
    printable = "".join(ch if ch.isprintable() else "?" for ch in window)
    return Diagnostic(source, line, column, reason, prefix + printable + suffix, caret + len(prefix), code)


class GrammarError(ValueError):
    """Root of the language package's errors."""

    def __init__(self, diagnostics: Sequence[Diagnostic]):
        self.diagnostics = tuple(diagnostics)
        shown = "\n".join(d.render() for d in self.diagnostics[:20])
        more = len(self.diagnostics) - 20
        super().__init__(shown + (f"\n... and {more} more errors" if more > 0 else ""))


class LanguageSyntaxError(GrammarError):
    """Source text that does not parse, or holds an invalid value (``@1.5``, ``@nan``, ...)."""
