"""CSV and TSV as people write them: quoting through the standard :mod:`csv` module, any delimiter, a
header row detected or declared, and columns named in any order (``--columns s,r,o,confidence``).

A column spec names each column of the file in order: ``s``/``subject``, ``r``/``relation``/``p``/
``predicate``, ``o``/``object``, ``c``/``confidence``, and ``-`` for a column to ignore. Without one the
columns are subject, relation, object and an optional confidence.

>>> parse_columns("o,-,s,r")
(2, 3, 0, None)
>>> parse_columns("subject,predicate,object,confidence")
(0, 1, 2, 3)
"""

from __future__ import annotations

import csv
import io
from typing import Iterator

from ..errors import ValidationError
from ..model import check_unit_float
from ..normalize import Vocabulary
from .records import CHUNK, MAX_DIAGNOSTICS, Batch, ReadOptions, _reject, is_header

_ROLES = {"s": 0, "subject": 0, "r": 1, "relation": 1, "p": 1, "predicate": 1, "o": 2, "object": 2,
          "c": 3, "confidence": 3}
_NAMES = ("subject", "relation", "object", "confidence")


def parse_columns(spec: str) -> tuple[int, int, int, int | None]:
    """Positions of subject, relation, object and confidence (None: no confidence column) in a spec."""
    found: list[int | None] = [None, None, None, None]
    for i, name in enumerate(p.strip().casefold() for p in spec.split(",")):
        if name in ("-", "_", ""):
            continue
        if name not in _ROLES:
            raise ValidationError(f"unknown column {name!r} in {spec!r}; use s, r, o, confidence or - (ignored)")
        role = _ROLES[name]
        if found[role] is not None:
            raise ValidationError(f"column {_NAMES[role]} named twice in {spec!r}")
        found[role] = i
    missing = [_NAMES[k] for k in range(3) if found[k] is None]
    if missing:
        raise ValidationError(f"columns {spec!r} name no {' and no '.join(missing)} column")
    return found[0], found[1], found[2], found[3]  # type: ignore[return-value]


def read_delimited(path: str, source: str, vocab: Vocabulary, options: ReadOptions | None = None,
                   default_delimiter: str = ",") -> Iterator[Batch]:
    """Facts from a delimited file; rows are checked one by one and every bad row is a reject naming its
    line (a quoted field may span lines: the line is where the row starts) and column."""
    options = options or ReadOptions()
    delimiter = options.delimiter or default_delimiter
    if len(delimiter) != 1:
        raise ValidationError(f"a delimiter is one character, got {delimiter!r}")
    positions = parse_columns(options.columns) if options.columns else None
    batch = Batch(source)
    seen_any = False
    with open(path, "rb") as raw:
        size = 0
        try:
            text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
            reader = csv.reader(text, delimiter=delimiter, strict=True)
            line = 1
            for row in reader:
                start, line = line, reader.line_num + 1
                if not row or (len(row) == 1 and not row[0].strip()) or row[0].lstrip().startswith("#"):
                    continue
                if not seen_any:
                    seen_any = True
                    if options.header or (options.header is None and is_header(row)):
                        batch.notes["header rows"] = 1
                        continue
                _row(batch, row, positions, vocab, source, start, delimiter)
                if len(batch.rows) >= CHUNK or len(batch.rejects) > MAX_DIAGNOSTICS:
                    batch.size = raw.tell() - size
                    size = raw.tell()
                    yield batch
                    batch = Batch(source)
        except csv.Error as exc:
            batch.rejects.append(_reject(source, reader.line_num, 1, f"invalid CSV: {exc}", ""))
        except UnicodeDecodeError as exc:
            batch.rejects.append(_reject(source, reader.line_num + 1, 1,
                                         f"not UTF-8 text (byte {exc.object[exc.start]:#04x})", ""))
        batch.size = raw.tell() - size
    if not seen_any and not batch.rejects:
        batch.rejects.append(_reject(source, 1, 1, "the file holds no rows", ""))
    yield batch


def _row(batch: Batch, row: list[str], positions, vocab: Vocabulary, source: str, line: int,
         delimiter: str) -> None:
    record = delimiter.join(row)
    if positions is None:
        if len(row) not in (3, 4):
            batch.rejects.append(_reject(source, line, 1, f"expected 3 or 4 fields (subject, relation, object, "
                                         f"confidence), found {len(row)}", record))
            return
        positions = (0, 1, 2, 3 if len(row) == 4 else None)
    need = max(p for p in positions if p is not None) + 1
    if len(row) < need:
        batch.rejects.append(_reject(source, line, 1, f"expected at least {need} fields, found {len(row)}", record))
        return
    si, ri, oi, ci = positions
    column = 1
    try:
        column = len(delimiter.join(row[:si])) + (1 if si == 0 else 2)
        ks = vocab.symbol(row[si])
        column = len(delimiter.join(row[:oi])) + (1 if oi == 0 else 2)
        ko = vocab.symbol(row[oi])
        column = len(delimiter.join(row[:ri])) + (1 if ri == 0 else 2)
        rel = vocab.relation(row[ri])
        conf = 1.0
        if ci is not None and row[ci].strip():
            column = len(delimiter.join(row[:ci])) + (1 if ci == 0 else 2)
            try:
                value = float(row[ci])
            except ValueError:
                raise ValidationError(f"confidence must be a number, got {row[ci]!r}") from None
            conf = check_unit_float(value, "confidence")
    except ValidationError as exc:
        batch.rejects.append(_reject(source, line, column, str(exc), record))
        return
    if rel in vocab.inverses:
        batch.rows.append((ko, vocab.inverses[rel], ks, conf, line, None, None))
    else:
        batch.rows.append((ks, rel, ko, conf, line, None, None))
    batch.labels.setdefault(ks, row[si].strip())
    batch.labels.setdefault(ko, row[oi].strip())
