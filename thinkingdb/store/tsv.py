"""The TSV reader: ``subject<TAB>relation<TAB>object[<TAB>confidence]`` per line, streamed."""

from __future__ import annotations

from typing import Iterator

from ..errors import ValidationError
from ..model import check_unit_float
from ..normalize import Vocabulary, relation_key, symbol_key
from .records import CHUNK, Batch, Reject, _decode, _reject, is_header

BLOCK = 1 << 20  # bytes read at a time by the streaming readers
_CACHE_MAX = 1 << 18  # symbol keys remembered per TSV file before the memo is cleared (bounded memory)


def _blocks(fh) -> Iterator[tuple[bytes, int]]:
    """Whole lines in blocks of about :data:`BLOCK` bytes: ``(data, number of lines)``."""
    rest = b""
    while True:
        data = fh.read(BLOCK)
        if not data:
            if rest:
                yield rest, 1
            return
        data = rest + data
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            rest = data
            continue
        rest = data[cut:]
        yield data[:cut], data.count(b"\n", 0, cut)


def _split_tsv(text: str, parts: list[str], source: str, line_no: int) -> Reject:
    """Describe why a TSV line was refused, pointing at the offending field."""
    if len(parts) not in (3, 4):
        return _reject(source, line_no, 1, "expected 3 or 4 tab-separated fields (subject, relation, object, "
                       f"confidence), found {len(parts)}", text)
    checks = ((symbol_key, "subject"), (relation_key, "relation"), (symbol_key, "object"))
    for i, (key, what) in enumerate(checks):
        col = len("\t".join(parts[:i])) + (2 if i else 1)
        try:
            key(parts[i])
        except ValidationError as exc:
            return _reject(source, line_no, col, f"{what}: {exc}", text)
    col = len("\t".join(parts[:3])) + 2
    try:
        value = float(parts[3])
    except ValueError:
        return _reject(source, line_no, col, f"confidence must be a number, got {parts[3]!r}", text)
    try:
        check_unit_float(value, "confidence")
    except ValidationError as exc:
        return _reject(source, line_no, col, str(exc), text)
    return _reject(source, line_no, col, "invalid line", text)  # pragma: no cover - defensive


def read_tsv(path: str, source: str, vocab: Vocabulary) -> Iterator[Batch]:
    """``subject<TAB>relation<TAB>object[<TAB>confidence]`` per line; ``#`` starts a comment line; a first
    row of column names (:func:`is_header`) is skipped and counted.

    Streams: the file is read in blocks and yielded in batches of :data:`CHUNK` facts, so memory stays
    bounded whatever the file size. Symbol and relation keys are memoized per file (the memo is cleared
    when it grows past :data:`_CACHE_MAX`).
    """
    batch = Batch(source)
    rows, labels = batch.rows, batch.labels
    seen_any = False
    skeys: dict[str, str] = {}
    rkeys: dict[str, tuple[str, bool]] = {}
    inverses, symbol = vocab.inverses, vocab.symbol
    line_no = 0
    with open(path, "rb") as fh:
        for data, count in _blocks(fh):
            batch.size += len(data)
            if line_no == 0 and data.startswith(b"\xef\xbb\xbf"):
                data = data[3:]
            text = None
            if b"\x00" not in data:
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    pass
            if text is None:  # find the offending line(s), keep the good ones
                lines = []
                for k, raw in enumerate(data.split(b"\n")[:count if data.endswith(b"\n") else count + 1]):
                    t, bad = _decode(raw, source, line_no + k + 1)
                    if bad is not None:
                        batch.rejects.append(bad)
                        lines.append("#")
                    else:
                        lines.append(t)
            else:
                lines = text.split("\n")
                if text.endswith("\n"):
                    lines.pop()
            for text in lines:
                line_no += 1
                if text.endswith("\r"):
                    text = text[:-1]
                if not text or text[0] == "#" or (text[0] in " \t\f\v" and (not text.strip()
                                                                            or text.lstrip()[0] == "#")):
                    continue
                parts = text.split("\t")
                if not seen_any and is_header(parts):
                    batch.notes["header rows"] = 1
                    seen_any = True
                    continue
                seen_any = True
                n = len(parts)
                try:
                    if n == 3:
                        s, r, o = parts
                        conf = 1.0
                    elif n == 4:
                        s, r, o, c = parts
                        conf = float(c)
                        if not 0.0 <= conf <= 1.0:
                            raise ValueError
                    else:
                        raise ValueError
                    ks = skeys.get(s)
                    if ks is None:
                        if len(skeys) > _CACHE_MAX:
                            skeys.clear()
                        ks = skeys[s] = symbol(s)
                        labels.setdefault(ks, s.strip())
                    ko = skeys.get(o)
                    if ko is None:
                        ko = skeys[o] = symbol(o)
                        labels.setdefault(ko, o.strip())
                    rel = rkeys.get(r)
                    if rel is None:
                        k = vocab.relation(r)
                        rel = rkeys[r] = (inverses.get(k, k), k in inverses)
                except ValueError:  # ValidationError is a ValueError too
                    batch.rejects.append(_split_tsv(text, parts, source, line_no))
                    continue
                if rel[1]:
                    rows.append((ko, rel[0], ks, conf, line_no, None, None))
                else:
                    rows.append((ks, rel[0], ko, conf, line_no, None, None))
                if len(rows) >= CHUNK:
                    yield batch
                    batch = Batch(source)
                    rows, labels = batch.rows, batch.labels
    if not seen_any and not batch.rejects:
        batch.rejects.append(_reject(source, 1, 1, "the file holds no triples", ""))
    yield batch
