"""The exceptions of the ThinkingDB public API.

Every error raised through ``thinkingdb`` derives from :class:`ThinkingDBError`; each subclass also
inherits the builtin it resembles, so ``except ValueError`` keeps working for callers that predate us::

    ThinkingDBError
    ├── ParseError(ValueError)          syntax or validation error in ThinkingDB source, with diagnostics
    ├── ValidationError(ValueError)     a value from outside is out of range or malformed
    │   └── ProfileError                a retrieval profile (TOML) is invalid
    ├── IngestError(ValueError)         an input file could not be ingested; carries every diagnostic
    ├── QueryError(ValueError)          a query cannot be evaluated (unknown relation in a strict query, ...)
    ├── StoreError(OSError)             the SQLite file is foreign, newer, corrupt or locked
    ├── IndexError_(LookupError)        a saved lane index does not match (alias: ``LaneIndexError``)
    └── LimitError(RuntimeError)        a bound was hit where the caller asked for an exception

The leaf packages (``grammar``, ``lexical``, ``hdc``) stay importable on their own and raise their own
roots (``GrammarError``, ``LexicalError``, ``HDCError``); :func:`translate` converts them at the one
boundary where ``thinkingdb`` calls into them, so no leaf or third-party exception escapes this API.
"""

from __future__ import annotations

from grammar.errors import Diagnostic  # one record of a problem's place and reason, shared with the language

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:
    from typing import Iterable, Sequence


class ThinkingDBError(Exception):
    """Root of every error raised by the ThinkingDB API."""


class _WithDiagnostics(ThinkingDBError):
    def __init__(self, diagnostics: Sequence[Diagnostic] | str, message: str | None = None):
        if isinstance(diagnostics, str):
            diagnostics = [Diagnostic("", 0, 0, diagnostics)]   # a message that names no place
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)
        if message is None:
            message = "\n".join(d.render() for d in self.diagnostics[:20])
            if len(self.diagnostics) > 20:
                message += f"\n... and {len(self.diagnostics) - 20} more errors"
        super().__init__(message)

    @property
    def first(self) -> Diagnostic:
        return self.diagnostics[0]


class ParseError(_WithDiagnostics, ValueError):
    """ThinkingDB source text that does not parse or validate; ``diagnostics`` lists every problem."""


class IngestError(_WithDiagnostics, ValueError):
    """An ingest that was refused as a whole; nothing was written."""


class ValidationError(ThinkingDBError, ValueError):
    """A value from outside (a confidence, a bound, a weight) is malformed or out of range."""


class ProfileError(ValidationError):
    """A retrieval profile is invalid; the message names the key."""


class QueryError(ThinkingDBError, ValueError):
    """A query that cannot be evaluated."""


class StoreError(ThinkingDBError, OSError):
    """The store file cannot be used: foreign, newer schema, corrupt, or locked."""


class LaneIndexError(ThinkingDBError, LookupError):
    """A saved lexical or HDC index does not match the current settings; rebuild it."""


class LimitError(ThinkingDBError, RuntimeError):
    """A bound was hit and the caller asked for an exception instead of a truncated result."""


def diagnostics_from(errors: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Sort diagnostics by source, line and column (stable for equal positions)."""
    return sorted(errors, key=lambda d: (d.source, d.line, d.column))


def translate(exc: BaseException, store: str | None = None) -> ThinkingDBError:
    """Map an exception of a leaf package or a third-party library to a ThinkingDB error; an SQLite
    error names ``store``, the file it came from, when the caller knows it.

    >>> isinstance(translate(KeyError("x")), ThinkingDBError)
    True
    >>> str(translate(__import__("sqlite3").DatabaseError("database disk image is malformed"), "kb.sqlite"))
    'kb.sqlite: database error: database disk image is malformed'
    """
    if isinstance(exc, ThinkingDBError):
        return exc
    name = type(exc).__name__
    module = type(exc).__module__.split(".")[0]
    if module == "grammar" and hasattr(exc, "diagnostics"):
        return ParseError(list(exc.diagnostics))
    if module in {"lexical", "hdc"} and "Format" in name:
        return LaneIndexError(str(exc))
    if module == "sqlite3":
        return StoreError(f"{store + ': ' if store else ''}database error: {exc}")
    if isinstance(exc, OSError):
        return StoreError(str(exc))
    return ValidationError(str(exc) or name)
