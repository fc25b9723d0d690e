"""Ingestion: read sources into the store, atomically.

Readers turn a file into :class:`Batch` chunks (records plus rejected records with diagnostics);
:func:`ingest` writes all chunks of all files inside one transaction. Any rejected record aborts the
whole command — nothing is written — unless ``skip_invalid`` is set, in which case the good records
are written and the rejected ones go to a rejects file with their reasons. Ingesting a source again
replaces what it contributed before.
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from ..errors import Diagnostic, IngestError, ParseError, ThinkingDBError, ValidationError
from ..language import compile_source
from ..model import Evidence, Fact, check_unit_float
from ..normalize import Vocabulary, relation_key, symbol_key
from ..progress import Progress
from .bulk import FactWriter
from .markdown import read_markdown, read_text
from .fields import access_misspelling, check_region, check_tags
from .records import (CHUNK, MAX_DIAGNOSTICS, Batch, Reader, ReadOptions, Reject, _check_date, _decode,  # noqa: F401
                      _reject, is_header, read_whole)
from .sqlite import Store, StoreCreatedElsewhere, Unit
from .stdin import STDIN, sniff, spool_stdin  # noqa: F401

# -- .tdb --------------------------------------------------------------------------------------------
try:  # the language's one-line fact syntax, shared so the fast path reads exactly what the parser reads
    from grammar.parser import KEYWORDS as _KEYWORDS, _FACT_LINE, _ends_statement, _unquote
except ImportError:  # pragma: no cover - a grammar without these helpers: everything takes the parser
    _FACT_LINE = None


def _split_simple_facts(lines: list[str]) -> tuple[list[tuple[int, str, str, str, float]], list[str]]:
    """Plain one-line facts with a valid confidence, and the other lines (facts blanked out) for the parser.

    Mirrors the parser's own fast path: a line is a candidate only when no statement is pending.
    Anything doubtful (bad confidence, empty names) is left to the parser, which reports it.
    """
    simple: list[tuple[int, str, str, str, float]] = []
    rest = list(lines)
    if _FACT_LINE is None:
        return simple, rest
    pending = False
    fullmatch = _FACT_LINE.fullmatch
    for i, line in enumerate(lines):
        if not pending:
            m = fullmatch(line)
            if m is not None and m.group(1) not in _KEYWORDS:
                s, r, o, c = m.group(1, 2, 3, 4)
                if s[0] == '"':
                    s = _unquote(s)
                if r[0] == '"':
                    r = _unquote(r)
                if o[0] == '"':
                    o = _unquote(o)
                try:
                    conf = 1.0 if c is None else float(c)
                except ValueError:
                    conf = -1.0
                if 0.0 <= conf <= 1.0 and s.strip(_QUOTE_EDGES) and o.strip(_QUOTE_EDGES) and r.strip(_QUOTE_EDGES):
                    simple.append((i + 1, s, r, o, conf))
                    rest[i] = ""
                    continue
            stripped = line.strip()
            if not stripped or stripped[0] == "#":
                continue
        pending = not _ends_statement(line)
    return simple, rest


_QUOTE_EDGES = " \t\"'“”‘’«»`"


def read_tdb(path: str, source: str, vocab: Vocabulary) -> Iterator[Batch]:
    """The ThinkingDB language; with errors, each bad statement's lines become rejects.

    Plain one-line facts are read directly (the same syntax as the parser's fast path); the rest of the
    file goes through the parser and compiler, whose aliases and inverse declarations then apply to
    every fact of the file, wherever it stands.
    """
    text, batch = read_whole(path, source)
    if text is None:
        yield batch
        return
    lines = text.split("\n")
    simple, rest = _split_simple_facts(lines)
    blanked: set[int] = set()
    while True:
        try:
            program = compile_source("\n".join("" if i + 1 in blanked else ln for i, ln in enumerate(rest)),
                                     source, vocab)
            break
        except ParseError as exc:
            new = {d.line for d in exc.diagnostics} - blanked
            for d in exc.diagnostics:
                if d.line not in blanked:
                    text_line = lines[d.line - 1] if 0 < d.line <= len(lines) else ""
                    batch.rejects.append(Reject(d, text_line))
            if not new or len(batch.rejects) > MAX_DIAGNOSTICS:
                yield batch
                return
            blanked |= new
    rows = [(f.subject, f.relation, f.object, f.confidence, line, None, None) for f, line in program.facts]
    first_line: dict[str, int] = {}
    for s_, _, o_, _, line, _, _ in rows:
        first_line.setdefault(s_, line)
        first_line.setdefault(o_, line)
    labels: dict[str, str] = {}
    skeys: dict[str, str] = {}
    rkeys: dict[str, tuple[str, bool]] = {}
    inverses, symbol = vocab.inverses, vocab.symbol
    for line, s_, r_, o_, conf in simple:
        ks = skeys.get(s_)
        if ks is None:
            ks = skeys[s_] = symbol(s_)
        ko = skeys.get(o_)
        if ko is None:
            ko = skeys[o_] = symbol(o_)
        rel = rkeys.get(r_)
        if rel is None:
            k = vocab.relation(r_)
            rel = rkeys[r_] = (inverses.get(k, k), k in inverses)
        rows.append((ko, rel[0], ks, conf, line, None, None) if rel[1] else (ks, rel[0], ko, conf, line, None, None))
        if ks not in labels and first_line.get(ks, line + 1) > line:
            labels[ks] = s_.strip()
        if ko not in labels and first_line.get(ko, line + 1) > line:
            labels[ko] = o_.strip()
    for key, label in program.labels.items():
        labels.setdefault(key, label)
    rows.sort(key=lambda r: r[4])
    batch.rows = rows
    batch.labels = labels
    batch.rules, batch.declarations, batch.aliases = program.rules, program.declarations, program.aliases
    if not batch.records and not batch.rejects:
        batch.rejects.append(_reject(source, 1, 1, "the file holds no facts, rules, declarations or aliases", ""))
    yield batch


# -- .tsv --------------------------------------------------------------------------------------------
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


# -- .jsonl knowledge units ---------------------------------------------------------------------------
_TEXT_FIELDS = ("role", "topic", "claim", "condition", "procedure", "utility_note", "source", "chunk", "region")
_DATE_FIELDS = ("effective_from", "effective_to")


def _str_list(value, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationError(f"field {name!r} must be a list of strings")
    return tuple(value)


def _check_features(value: Any) -> None:
    """Alignment evidence stored on a unit: a mapping of features in [0, 1], or a list of them."""
    items = value if isinstance(value, list) else [value]
    for i, item in enumerate(items):
        where = "features" if not isinstance(value, list) else f"features[{i}]"
        if not isinstance(item, dict):
            raise ValidationError(f"field {where!r} must be an object of feature values")
        try:
            Evidence.from_mapping(item, where)
        except ValueError as exc:
            raise ValidationError(f"field {exc}") from None


def parse_unit(obj: dict, source: str, vocab: Vocabulary) -> tuple[Unit, list[Fact], dict[str, str]]:
    """Validate one knowledge unit object; return the unit, its facts and their labels."""
    if not isinstance(obj, dict):
        raise ValidationError("a knowledge unit must be a JSON object")
    uid = obj.get("id", obj.get("unit_id"))
    if not isinstance(uid, str) or not uid.strip():
        raise ValidationError("a knowledge unit needs a non-empty string field 'id'")
    values = {}
    for name in _TEXT_FIELDS:
        v = obj.get(name, "")
        if v is None:
            v = ""
        if not isinstance(v, str):
            raise ValidationError(f"field {name!r} must be a string, got {type(v).__name__}")
        values[name] = v
    acts = _str_list(obj.get("utility_acts", obj.get("utilityActs")), "utility_acts")
    for key in obj:
        meant = access_misspelling(key) if isinstance(key, str) else None
        if meant is not None:
            raise ValidationError(f"field {key!r} is not understood; did you mean {meant!r}? (a misspelled access "
                                  "field would leave the unit public)")
    acl = check_tags(obj.get("acl"), "field 'acl'")
    values["region"] = check_region(values["region"], "field 'region'")
    eff_from, eff_to = (_check_date(obj.get(n), n) for n in _DATE_FIELDS)
    if eff_from and eff_to and eff_to < eff_from:
        raise ValidationError(f"effective_to {eff_to} is before effective_from {eff_from}")
    facts, labels = [], {}
    triples = obj.get("triples", obj.get("facts", [])) or []
    if not isinstance(triples, list):
        raise ValidationError("field 'triples' must be a list")
    for i, t in enumerate(triples):
        if isinstance(t, dict):
            t = [t.get("subject"), t.get("relation"), t.get("object")] + (
                [t["confidence"]] if "confidence" in t else [])
        if not isinstance(t, list) or len(t) not in (3, 4) or not all(isinstance(x, str) for x in t[:3]):
            raise ValidationError(f"triples[{i}] must be [subject, relation, object] or with a confidence")
        conf = check_unit_float(t[3], f"triples[{i}] confidence") if len(t) == 4 else 1.0
        s, r, o = vocab.orient(t[0], t[1], t[2])
        facts.append(Fact(s, r, o, conf))
        labels.setdefault(s, t[0].strip())
        labels.setdefault(o, t[2].strip())
    known = set(_TEXT_FIELDS) | {"id", "unit_id", "utility_acts", "utilityActs", "acl", "triples", "facts", *_DATE_FIELDS}
    extra = {k: v for k, v in obj.items() if k not in known}
    if "features" in extra:
        _check_features(extra["features"])
    unit = Unit(uid.strip(), utility_acts=acts, acl=acl, effective_from=eff_from, effective_to=eff_to,
                extra=json.dumps(extra, sort_keys=True), **{**values, "source": values["source"] or source})
    return unit, facts, labels


# only a \uD800-\uDFFF escape can put a lone surrogate into a parsed JSON string
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _lone_surrogate(value: Any, where: str = "") -> str | None:
    """Where a parsed JSON value holds a string with a lone surrogate (an unpaired ``\\uD800`` escape).

    >>> _lone_surrogate({"id": "u", "triples": [["a", "r", "b\\ud800"]]})
    "field 'triples'[0][2]"
    >>> _lone_surrogate({"id": "ok"}) is None
    True
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where or "the value"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = _lone_surrogate(key, f"a key of {where or 'the object'}") or _lone_surrogate(
                item, f"{where}[{key!r}]" if where else f"field {key!r}")
            if found:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _lone_surrogate(item, f"{where}[{i}]")
            if found:
                return found
    return None


def read_jsonl(path: str, source: str, vocab: Vocabulary) -> Iterator[Batch]:
    """One knowledge unit per line (JSON Lines)."""
    batch = Batch(source)
    seen_ids: dict[str, int] = {}
    any_line = False
    with open(path, "rb") as fh:
        for line_no, raw in enumerate(fh, 1):
            batch.size += len(raw)
            text, bad = _decode(raw, source, line_no)
            if bad is not None:
                batch.rejects.append(bad)
                continue
            if not text.strip():
                continue
            any_line = True
            try:
                obj = json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(
                    ValidationError(f"{c} is not a finite number")))
            except json.JSONDecodeError as exc:
                batch.rejects.append(_reject(source, line_no, exc.colno, f"invalid JSON: {exc.msg}", text.rstrip()))
                continue
            except ValidationError as exc:
                batch.rejects.append(_reject(source, line_no, 1, str(exc), text.rstrip()))
                continue
            except RecursionError:
                batch.rejects.append(_reject(source, line_no, 1, "JSON nested too deeply to read", text[:200]))
                continue
            except ValueError as exc:   # e.g. an integer of more than 4,300 digits
                batch.rejects.append(_reject(source, line_no, 1, f"invalid JSON: {exc}", text[:200]))
                continue
            where = _lone_surrogate(obj) if _SURROGATE_ESCAPE.search(text) else None
            if where is not None:
                batch.rejects.append(_reject(source, line_no, 1, f"{where} is not valid Unicode: a lone surrogate "
                                             "(an unpaired \\uD800-\\uDFFF escape)", text.rstrip()))
                continue
            try:
                unit, facts, labels = parse_unit(obj, source, vocab)
            except ValidationError as exc:
                batch.rejects.append(_reject(source, line_no, 1, str(exc), text.rstrip()))
                continue
            if unit.id in seen_ids:
                batch.rejects.append(_reject(source, line_no, 1, f"unit id {unit.id!r} already appears on line "
                                             f"{seen_ids[unit.id]}", text.rstrip()))
                continue
            seen_ids[unit.id] = line_no
            batch.units.append((unit, line_no))
            for f in facts:
                batch.add_fact(f, line_no, unit.id)
            for k, v in labels.items():
                batch.labels.setdefault(k, v)
            if len(batch.units) >= CHUNK:
                yield batch
                batch = Batch(source)
    if not any_line and not batch.rejects:
        batch.rejects.append(_reject(source, 1, 1, "the file holds no knowledge units", ""))
    yield batch


def read_rdf(path: str, source: str, vocab: Vocabulary, options: ReadOptions | None = None) -> Iterator[Batch]:
    """N-Triples, Turtle, N-Quads, TriG or JSON-LD through pyoxigraph (see :mod:`thinkingdb.store.rdf`)."""
    from .rdf import read_rdf as reader
    return reader(path, source, vocab, literals=(options or ReadOptions()).literals)


def _parquet_folder(path: str) -> bool:
    return os.path.isdir(path) and any(name.endswith(".parquet") for _, _, names in os.walk(path) for name in names)


def read_parquet(path: str, source: str, vocab: Vocabulary) -> Iterator[Batch]:
    """Parquet facts, or a folder of them such as a ``materialize`` output (see :mod:`thinkingdb.store.parquet`)."""
    from .parquet import read_parquet as reader
    return reader(path, source, vocab)


def read_csv(path: str, source: str, vocab: Vocabulary, options: ReadOptions | None = None) -> Iterator[Batch]:
    """CSV (or TSV read with options) through the :mod:`csv` module (see :mod:`thinkingdb.store.delimited`)."""
    from .delimited import read_delimited
    return read_delimited(path, source, vocab, options, "\t" if _extension(path, options) == ".tsv" else ",")


READERS: dict[str, Reader] = {".tdb": read_tdb, ".tsv": read_tsv, ".csv": read_csv, ".jsonl": read_jsonl,
                              ".md": read_markdown, ".markdown": read_markdown, ".txt": read_text, ".nt": read_rdf,
                              ".ttl": read_rdf, ".nq": read_rdf, ".trig": read_rdf, ".jsonld": read_rdf,
                              ".parquet": read_parquet}
"""Readers by file extension."""


def _extension(path: str, options: ReadOptions | None) -> str:
    if options is not None and options.format:
        return "." + options.format.lower().lstrip(".")
    return os.path.splitext(path)[1].lower()


def reader_for(path: str, options: ReadOptions | None = None) -> Reader:
    """The reader for a file: by ``options.format`` when given, else by extension.

    >>> reader_for("notes.md").__name__, reader_for("edges.TSV").__name__, reader_for("-", ReadOptions(format="nt"))
    ('read_markdown', 'read_tsv', functools.partial(<function read_rdf ...>, options=ReadOptions(format='nt', ...)))
    """
    ext = _extension(path, options)
    if not ext and os.path.isdir(path):   # a folder of Parquet files: a materialize output or export
        ext = ".parquet"
    if ext not in READERS:
        raise IngestError([Diagnostic(path, 0, 0, f"unsupported file type {ext or '(none)'!r}; supported: "
                                      + ", ".join(sorted(READERS)) + ("" if ext or path != "-" else
                                      " (standard input needs a --format)"))])
    reader = READERS[ext]
    if reader is read_tsv and options is not None and options.delimited:
        reader = read_csv
    if reader in (read_csv, read_rdf) and options is not None:
        return functools.partial(reader, options=options)
    return reader


@dataclass(frozen=True)
class IngestReport:
    """What an ingest wrote: ``{"units": N, "facts": N, "rejected": N}`` plus details."""

    units: int
    facts: int
    rejected: int
    rules: int = 0
    declarations: int = 0
    aliases: int = 0
    sources: tuple[str, ...] = ()
    rejects_path: str | None = None
    notes: tuple[tuple[str, int], ...] = ()  # counted things not stored as given (skipped literals, labels ...)

    def to_json(self) -> dict:
        return {"units": self.units, "facts": self.facts, "rejected": self.rejected, "rules": self.rules,
                "declarations": self.declarations, "aliases": self.aliases, "sources": list(self.sources),
                "rejects_path": self.rejects_path, "notes": dict(self.notes)}


def ingest(store: Store, paths: Sequence[str], *, skip_invalid: bool = False, rejects_path: str | None = None,
           progress: bool | None = False, options: ReadOptions | None = None) -> IngestReport:
    """Ingest files into ``store`` in one transaction; see the module docstring for the contract.

    A refused ingest raises :class:`IngestError` with every diagnostic and leaves the store file exactly
    as it was; a store this ``Store`` object was creating never appears. Another process writing the
    same store is waited for; if it created the same new store at the same moment, the ingest runs
    again on that store (the writer protocol of :mod:`thinkingdb.store.locking`).

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> _ = open(os.path.join(d, "a.tsv"), "w").write("nginx\\tdependsOn\\topenssl\\t0.9\\n")
    >>> with Store(os.path.join(d, "kb.sqlite")) as st:
    ...     ingest(st, [os.path.join(d, "a.tsv")]).to_json()["facts"], [str(f.triple) for f in st.facts()]
    (1, ['nginx depends_on openssl'])

    ``-`` reads standard input, recorded as source ``<stdin>``; its type is ``options.format`` or, without
    one, told from its first line (:func:`sniff`).
    """
    if paths.count("-") > 1:
        raise IngestError([Diagnostic("-", 0, 0, "standard input can be read only once")])
    for p in paths:
        if p != "-" and not os.path.isfile(p) and not _parquet_folder(p):
            raise IngestError([Diagnostic(p, 0, 0, "no such file" if not os.path.exists(p) else
                                          "not a regular file (a folder is read only when it holds .parquet files)")])
        if p != "-" or (options is not None and options.format):
            reader_for(p, options)
    spooled = None
    try:
        if "-" in paths:
            spooled = spool_stdin(_extension("-", options) if options is not None and options.format else None)
        files = [(spooled if p == "-" else p, STDIN if p == "-" else os.path.normpath(p)) for p in paths]
        for attempt in range(3):
            try:
                return _ingest(store, files, skip_invalid, rejects_path, progress, options)
            except StoreCreatedElsewhere:   # another process created the same new store: run on it
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover
    except BaseException:
        store.discard()  # only a store this object was creating, never committed
        raise
    finally:
        if spooled is not None:
            os.remove(spooled)


def ingest_as(store: Store, path: str, source: str, *, options: ReadOptions | None = None) -> IngestReport:
    """Ingest one file under another source name (``kb.add_text`` writes text to a temporary file)."""
    reader_for(path, options)
    try:
        return _ingest(store, [(path, source)], False, None, False, options)
    except BaseException:
        store.discard()
        raise


def _ingest(store: Store, files: Sequence[tuple[str, str]], skip_invalid: bool, rejects_path: str | None,
            progress: bool | None, options: ReadOptions | None = None) -> IngestReport:
    totals = dict(units=0, facts=0, rules=0, declarations=0, aliases=0)
    notes: dict[str, int] = {}
    rejects: list[Reject] = []
    with store.transaction():
        vocab = store.vocabulary()   # inside: another writer's aliases committed before this one count
        writer = FactWriter(store)
        for path, source in files:
            kind = _extension(path, options).lstrip(".")
            if store.has_source(source):
                writer.flush()   # the source may be one read earlier in this ingest
                store.retract_source(source)
            origin = store.source_id(source, kind)
            bar = Progress(f"ingest {os.path.basename(path)}", os.path.getsize(path), enabled=progress)
            records = 0
            for batch in reader_for(path, options)(path, source, vocab):
                _check_units(store, batch)
                rejects.extend(batch.rejects)
                for what, n in batch.notes.items():
                    notes[what] = notes.get(what, 0) + n
                bar.update(batch.size, batch.records)
                if rejects and not skip_invalid:
                    if len(rejects) > MAX_DIAGNOSTICS:
                        break
                    continue  # keep reading to report every error; nothing will be committed
                _write(store, writer, origin, batch, totals)
                records += batch.records
            bar.done()
            store.record_source(source, kind, records)
        if rejects and not skip_invalid:
            raise IngestError([r.diagnostic for r in rejects])
        writer.flush()
    if rejects and rejects_path:
        with open(rejects_path, "w", encoding="utf-8") as fh:
            for r in rejects:
                fh.write(json.dumps(r.to_json(), ensure_ascii=False) + "\n")
    return IngestReport(totals["units"], totals["facts"], len(rejects), totals["rules"], totals["declarations"],
                        totals["aliases"], tuple(source for _, source in files),
                        rejects_path if rejects else None, tuple(sorted(notes.items())))


def _check_units(store: Store, batch: Batch) -> None:
    """Refuse units whose id another source already holds (retract that source first)."""
    if not batch.units:
        return
    owners = store.unit_owner([u.id for u, _ in batch.units])
    if not owners:
        return
    keep = []
    for u, line in batch.units:
        if u.id in owners:
            batch.rejects.append(_reject(batch.source, line, 1, f"unit id {u.id!r} already belongs to source "
                                         f"{owners[u.id]!r}", u.id))
        else:
            keep.append((u, line))
    batch.units = keep
    batch.rows = [r for r in batch.rows if r[5] not in owners]
    batch.unit_rules = [r for r in batch.unit_rules if r[2] not in owners]


def _write(store: Store, writer: FactWriter, origin: int, batch: Batch, totals: dict[str, int]) -> None:
    src = batch.source
    if batch.labels:
        store.add_label_rows(origin, batch.labels.items())
    if batch.units:
        store.add_units(batch.units, src)
        totals["units"] += len(batch.units)
    if batch.rows:
        totals["facts"] += writer.add(origin, batch.rows)
    if batch.rules:
        store.add_rules((r, src, line) for r, line in batch.rules)
        totals["rules"] += len(batch.rules)
    if batch.declarations:
        store.add_declarations((d, src, line) for d, line in batch.declarations)
        totals["declarations"] += len(batch.declarations)
    if batch.unit_rules:
        store.add_rules((r, src, line, unit) for r, line, unit in batch.unit_rules)
        totals["rules"] += len(batch.unit_rules)
    if batch.aliases:
        store.add_aliases((p, r, src, line) for p, r, line in batch.aliases)
        totals["aliases"] += len(batch.aliases)


__all__ = ["Batch", "IngestReport", "READERS", "Reject", "ingest", "parse_unit", "reader_for",
           "read_jsonl", "read_markdown", "read_tdb", "read_text", "read_tsv", "ThinkingDBError"]
