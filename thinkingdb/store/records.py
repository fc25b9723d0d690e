"""What every reader produces: batches of records and rejects, and the small helpers they share
(decoding with a line and column for bad bytes, reading a whole file, checking a date field).

:mod:`thinkingdb.store.ingest` and :mod:`thinkingdb.store.markdown` both build on this module, so
neither imports the other's internals.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from itertools import repeat
from typing import Callable, Iterator, Sequence

from ..errors import Diagnostic, ValidationError
from ..model import Declaration, Fact, Rule
from ..normalize import Vocabulary
from .sqlite import Unit

CHUNK = 20_000
MAX_DIAGNOSTICS = 1000


@dataclass
class Reject:
    """A record that was refused: where, why, and its text."""

    diagnostic: Diagnostic
    record: str

    def to_json(self) -> dict:
        return {**self.diagnostic.to_json(), "record": self.record}


@dataclass
class Batch:
    """Part of one source, ready to write."""

    source: str
    rows: list[tuple] = field(default_factory=list)  # (s, r, o, confidence, line, unit_id, detail JSON)
    labels: dict[str, str] = field(default_factory=dict)
    units: list[tuple[Unit, int]] = field(default_factory=list)
    rules: list[tuple[Rule, int]] = field(default_factory=list)
    declarations: list[tuple[Declaration, int]] = field(default_factory=list)
    aliases: list[tuple[str, str, int]] = field(default_factory=list)
    unit_rules: list[tuple[Rule, int, str]] = field(default_factory=list)  # rules seen only by who sees the unit
    rejects: list[Reject] = field(default_factory=list)
    size: int = 0  # bytes consumed, for the progress bar
    notes: dict[str, int] = field(default_factory=dict)  # counted things the reader did not store as given
    columns: list[tuple] = field(default_factory=list)
    """Rows kept as columns (only the RDF reader makes them, see :mod:`thinkingdb.store.ntlines`): ``(at,
    subjects, relations, objects, lines)``, numpy arrays of the ids of :attr:`ids`, rows of confidence 1
    without unit or detail that stand before ``rows[at]``; :meth:`all_rows` gives every row in order."""
    ids: "Interner | None" = None

    def all_rows(self) -> list[tuple]:
        """``rows`` with the :attr:`columns` rows put in their places."""
        if not self.columns:
            return self.rows
        out, pos = [], 0
        text = self.ids.texts.__getitem__
        for at, s, r, o, lines in self.columns:
            out += self.rows[pos:at]
            pos = at
            out += zip(map(text, s.tolist()), map(text, r.tolist()), map(text, o.tolist()), repeat(1.0),
                       lines.tolist(), repeat(None), repeat(None))
        return out + self.rows[pos:]

    @property
    def fact_count(self) -> int:
        """How many fact rows the batch holds (``rows`` and ``columns``)."""
        return len(self.rows) + sum(len(c[1]) for c in self.columns)

    @property
    def facts(self) -> list[tuple[Fact, int, str | None]]:
        """The rows as ``(Fact, line, unit_id)``."""
        return [(Fact(s, r, o, c), line, unit) for s, r, o, c, line, unit, _ in self.all_rows()]

    def add_fact(self, fact: Fact, line: int, unit_id: str | None = None, detail: dict | None = None) -> None:
        """Append a validated fact (``detail``: extra provenance such as a sentence and its span)."""
        self.rows.append((fact.subject, fact.relation, fact.object, fact.confidence, line, unit_id,
                          None if detail is None else json.dumps(detail, ensure_ascii=False, sort_keys=True)))

    @property
    def records(self) -> int:
        return (self.fact_count + len(self.units) + len(self.rules) + len(self.declarations) + len(self.aliases)
                + len(self.unit_rules))


class Interner:
    """Integer ids of symbol and relation keys, numbered in first-seen order (one numbering for both:
    a text that is a symbol and a relation has two ids); ``texts[id]`` is the key of an id.

    >>> ids = Interner()
    >>> ids.symbol("a"), ids.relation("a"), ids.symbol("b"), ids.symbol("a"), ids.texts
    (0, 1, 2, 0, ['a', 'a', 'b'])
    >>> ids.symbol_ids(["b", "c", "c"]).tolist(), ids.texts[3]
    ([2, 3, 3], 'c')
    """

    def __init__(self) -> None:
        self.symbols: dict[str, int] = {}
        self.relations: dict[str, int] = {}
        self.texts: list[str] = []

    def _new(self, table: dict[str, int], key: str) -> int:
        i = table.get(key)
        if i is None:
            i = table[key] = len(self.texts)
            self.texts.append(key)
        return i

    def symbol(self, key: str) -> int:
        return self._new(self.symbols, key)

    def relation(self, key: str) -> int:
        return self._new(self.relations, key)

    def symbol_ids(self, keys: Sequence[str]):
        """The ids of ``keys`` as a numpy array (one dictionary look-up each; new keys numbered)."""
        return self._ids(self.symbols, keys)

    def relation_ids(self, keys: Sequence[str]):
        return self._ids(self.relations, keys)

    def _ids(self, table: dict[str, int], keys: Sequence[str]):
        import numpy as np
        out = np.fromiter(map(table.get, keys, repeat(-1)), np.int64, len(keys))
        miss = np.flatnonzero(out < 0)
        if len(miss):
            new = self._new
            out[miss] = [new(table, keys[j]) for j in miss.tolist()]
        return out


Reader = Callable[[str, str, Vocabulary], Iterator[Batch]]


@dataclass(frozen=True, kw_only=True)
class ReadOptions:
    """How to read the files of one ingest, beyond what their extension says.

    ``format``: a file type (``tsv``, ``csv``, ``nt``, ...) used instead of the extension (needed for
    ``-``, standard input); ``delimiter``, ``columns`` (see :mod:`thinkingdb.store.delimited`) and
    ``header`` (None: detected) for CSV and TSV; ``literals`` (``symbols`` or ``skip``) for RDF.
    """

    format: str | None = None
    delimiter: str | None = None
    columns: str | None = None
    header: bool | None = None
    literals: str = "symbols"

    def __post_init__(self) -> None:
        if self.literals not in ("symbols", "skip"):
            raise ValidationError(f"literals must be 'symbols' or 'skip', got {self.literals!r}")

    @property
    def delimited(self) -> bool:
        """Whether a TSV file needs the general CSV reader (a delimiter, columns or header was given)."""
        return self.delimiter is not None or self.columns is not None or self.header is not None


HEADER_WORDS = frozenset({"subject", "relation", "object", "confidence", "predicate", "property", "s", "r", "p",
                          "o", "c", "source", "target", "head", "tail", "from", "to", "weight", "score", "label"})
"""Column names that make a first row a header row."""


def is_header(fields: Sequence[str]) -> bool:
    """Whether a first row names columns rather than holding a fact: every field is a column name.

    >>> is_header(["subject", "relation", "object"]), is_header(["Source", "Predicate", "Target", "Weight"])
    (True, True)
    >>> is_header(["nginx", "depends_on", "openssl"]), is_header(["subject", "is_a", "object"])
    (False, False)
    """
    return 3 <= len(fields) and all(f.strip().strip('"').casefold() in HEADER_WORDS for f in fields)


def _reject(source: str, line: int, column: int, reason: str, record: str) -> Reject:
    return Reject(Diagnostic(source, line, column, reason, record[:200], column), record)


def _decode(data: bytes, source: str, line_no: int = 1) -> tuple[str | None, Reject | None]:
    """Text of ``data`` (line ``line_no`` onwards); a UTF-8 byte-order mark on line 1 is dropped."""
    if line_no == 1 and data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    nul = data.find(b"\x00")
    if nul >= 0:
        line = line_no + data.count(b"\n", 0, nul)
        col = nul - (data.rfind(b"\n", 0, nul) + 1) + 1
        return None, _reject(source, line, col, "binary data (a NUL byte): not a text file", "")
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        line = line_no + data.count(b"\n", 0, exc.start)
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, _reject(source, line, col, f"not UTF-8 text (byte {data[exc.start]:#04x})", "")



def read_whole(path: str, source: str) -> tuple[str | None, Batch]:
    """A whole file as text and a fresh batch for it; text None when it is not UTF-8 (the batch then
    holds the reject naming the line and column)."""
    with open(path, "rb") as fh:
        data = fh.read()
    text, bad = _decode(data, source)
    batch = Batch(source, size=len(data))
    if bad is not None:
        batch.rejects.append(bad)
    return text if bad is None else None, batch


def _check_date(value, name: str) -> str:
    if value in (None, ""):
        return ""
    if not isinstance(value, str):
        raise ValidationError(f"field {name!r} must be a date string YYYY-MM-DD, got {value!r}")
    try:
        return _dt.date.fromisoformat(value).isoformat()
    except ValueError:
        raise ValidationError(f"field {name!r} must be a date YYYY-MM-DD, got {value!r}") from None
