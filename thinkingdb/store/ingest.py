"""Ingestion: read sources into the store, atomically.

Readers turn a file into :class:`Batch` chunks (records plus rejected records with diagnostics);
:func:`ingest` writes all chunks of all files inside one transaction. Any rejected record aborts the
whole command — nothing is written — unless ``skip_invalid`` is set, in which case the good records
are written and the rejected ones go to a rejects file with their reasons. Ingesting a source again
replaces what it contributed before.

The ``.tdb``, TSV and JSON Lines readers are in :mod:`~thinkingdb.store.tdbfile`,
:mod:`~thinkingdb.store.tsv` and :mod:`~thinkingdb.store.jsonl`; the fact write path is
:mod:`~thinkingdb.store.bulk`.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from typing import Iterator, Sequence

from ..errors import Diagnostic, IngestError, ThinkingDBError
from ..normalize import Vocabulary
from ..progress import Progress
from .bulk import FactWriter
from .jsonl import parse_unit, read_jsonl
from .markdown import read_markdown, read_text
from .records import MAX_DIAGNOSTICS, Batch, Interner, Reader, ReadOptions, Reject, _reject
from .sqlite import Store, StoreCreatedElsewhere
from .tdbfile import read_tdb
from .tsv import read_tsv
from .stdin import STDIN, sniff, spool_stdin  # noqa: F401


def read_rdf(path: str, source: str, vocab: Vocabulary, options: ReadOptions | None = None, *,
             ids: Interner | None = None) -> Iterator[Batch]:
    """N-Triples, Turtle, N-Quads, TriG or JSON-LD through pyoxigraph (see :mod:`thinkingdb.store.rdf`);
    ``ids``: plain IRI lines come as :attr:`Batch.columns` of these ids (only the ingest's bulk writer asks)."""
    from .rdf import read_rdf as reader
    return reader(path, source, vocab, literals=(options or ReadOptions()).literals, ids=ids)


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
        known = dict(vocab.inverses)
        writer = FactWriter(store)
        for path, source in files:
            kind = _extension(path, options).lstrip(".")
            if store.has_source(source):
                writer.flush()   # the source may be one read earlier in this ingest
                store.retract_source(source)
                # what its old text declared (an inverse, an alias) no longer holds for its new text
                vocab = store.vocabulary()
            origin = store.source_id(source, kind)
            bar = Progress(f"ingest {os.path.basename(path)}", os.path.getsize(path), enabled=progress)
            records = 0
            read = reader_for(path, options)
            if getattr(read, "func", read) is read_rdf and writer.bulk:   # plain IRI lines as columns of
                read = functools.partial(read, ids=writer.ids)                 # the bulk writer's ids
            for batch in read(path, source, vocab):
                _check_units(store, batch)
                _check_rule_names(store, batch, path, vocab.inverses)
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
        _check_strata(store)
        writer.flush()
        if vocab.inverses != known:
            _check_inverses(store, vocab.inverses, {b: c for b, c in vocab.inverses.items() if known.get(b) != c})
        if known:   # a source ingested again may no longer declare an inverse it did
            check_dropped_inverses(store, known, "cannot ingest " + ", ".join(source for _, source in files))
    if rejects and rejects_path:
        with open(rejects_path, "w", encoding="utf-8") as fh:
            for r in rejects:
                fh.write(json.dumps(r.to_json(), ensure_ascii=False) + "\n")
    return IngestReport(totals["units"], totals["facts"], len(rejects), totals["rules"], totals["declarations"],
                        totals["aliases"], tuple(source for _, source in files),
                        rejects_path if rejects else None, tuple(sorted(notes.items())))


def _check_strata(store: Store) -> None:
    """Refuse an ingest after which the store's rules and declarations cycle through ``not``: each file
    compiles alone, but a rule of one file and a declaration (or rule) of another can close a cycle, and
    then every later question would fail with no place to look. Checked inside the transaction."""
    c = store.conn
    if c.execute("SELECT 1 FROM rules WHERE body LIKE '%\"negated\"%' LIMIT 1").fetchone() is None:
        return   # no `not` premise anywhere: nothing can cycle through it
    from ..engine.rules import StratificationError, compile_declarations, strata
    from .rulejson import orient_rules
    from ..engine.rules import library_rules
    decls = [d for d in store.declarations() if d.kind != "inverse"]   # inverses are stored oriented
    try:   # and read oriented (api.KnowledgeBase._read_rules); with the default library, which every
        # question applies unless asked not to (a cycle may run through a rule of each of two files and
        # the library: each file alone passed read_tdb's check against the library)
        strata(orient_rules([r for r, _ in store.rule_rows()] + list(compile_declarations(decls)),
                            store.vocabulary().inverses) + library_rules())
    except StratificationError as exc:
        names = list(dict.fromkeys([exc.rule] + [step[1] for step in exc.cycle]))   # the cycle's rules:
        rows = [c.execute("SELECT r.origin, s.source, r.line FROM rules r JOIN sources s ON s.id = r.origin "
                          "WHERE r.name = ? ORDER BY r.origin DESC LIMIT 1", (n,)).fetchone() for n in names]
        rows = [r for r in rows if r is not None]   # the stored one this ingest wrote last (not the library's)
        source, line = max(rows)[1:] if rows else ("<store>", 0)
        raise IngestError([Diagnostic(source, line, 1 if line else 0, f"{exc} (with the rules and declarations "
                                      "already in the store and the default rule library)",
                                      code="cyclic_negation")]) from None


def _check_inverses(store: Store, inverses: dict[str, str], new: dict[str, str]) -> None:
    """Refuse an ingest whose inverse declarations chain (``relation c inverse b. relation b inverse a.``:
    a fact is turned once, so a's would be stored as b, a name read as c reversed), or whose ``relation c
    inverse b`` comes after facts of b in the store (or in an earlier file of this ingest): b is read as c
    reversed, so those facts would silently fall out of every answer. Checked inside the transaction;
    the error points at the declaration. ``new``: the inverses this ingest declared."""
    c = store.conn
    problems = []

    def declared(canon: str, b: str) -> tuple[str, int]:
        row = c.execute("SELECT s.source, d.line FROM declarations d JOIN sources s ON s.id = d.origin WHERE "
                        "d.kind = 'inverse' AND d.relation = ? AND d.other = ? ORDER BY d.origin DESC LIMIT 1",
                        (canon, b)).fetchone()
        return row if row is not None else ("<store>", 0)

    for b, canon in sorted(inverses.items()):   # b is c reversed is d: one direction is stored, b's is not
        far = inverses.get(canon)
        if far is not None and (b in new or canon in new):
            source, line = declared(canon, b)
            where = "%s:%d" % declared(far, canon)
            problems.append(Diagnostic(
                source, line, 1 if line else 0,
                f"relation {canon} inverse {b}: {canon} is itself the inverse of {far} (relation {far} inverse "
                f"{canon}, {where}), so {b} means {far}: write alias {b} => {far}", f"relation {canon} inverse {b}.",
                1 if line else 0, code="inverse_chain"))
    if problems:
        raise IngestError(problems)
    for b, canon in sorted(new.items()):
        fact = c.execute("SELECT f.subject, f.object, s.source, p.line FROM facts f JOIN provenance p ON p.fact = f.id "
                         "JOIN sources s ON s.id = p.origin WHERE f.relation = ? ORDER BY p.origin, p.line LIMIT 1",
                         (b,)).fetchone()
        if fact is None:
            continue
        source, line = declared(canon, b)
        problems.append(Diagnostic(
            source, line, 1 if line else 0,
            f"relation {canon} inverse {b} comes after facts of {b} (first: {fact[0]} {b} {fact[1]}, "
            f"{fact[2]}:{fact[3]}), which it would hide: {b} is read as {canon} reversed; declare the inverse "
            f"before them, or state them with {canon}", f"relation {canon} inverse {b}.", 1 if line else 0,
            code="inverse_after_facts"))
    if problems:
        raise IngestError(problems)


def check_dropped_inverses(store: Store, before: dict[str, str], what: str) -> None:
    """Refuse (inside the write's transaction, so nothing changes) a write — a retract, or a source
    ingested again without it — that removes the last ``relation c inverse b.`` while facts of ``c``
    or rules over ``c`` stay: some may have been written as ``b`` and turned when ingested, and would
    then answer only under ``c``, which no longer means ``b`` reversed. Those sources must go too (and be ingested again),
    or the declaration stay. ``before``: the store's inverses before the write (b -> c)."""
    after = store.vocabulary().inverses
    problems = []
    for b, c in sorted(before.items()):
        if after.get(b) == c:
            continue
        held = [src for (src,) in store.conn.execute(
            "SELECT DISTINCT s.source FROM facts f JOIN provenance p ON p.fact = f.id JOIN sources s ON "
            "s.id = p.origin WHERE f.relation = ? ORDER BY s.source LIMIT 4", (c,))]
        if held:
            problems.append(f"it removes 'relation {c} inverse {b}.', but facts of {c} from {', '.join(held[:3])}"
                            f"{' and more' if len(held) > 3 else ''} stay, and those written as {b} were stored "
                            f"turned by it: retract those sources too (and ingest them again), or keep the "
                            "declaration")
        ruled = _rule_sources(store, c)   # rules are stored turned too (?x h ?y => ?x b ?y as => ?y c ?x)
        if ruled:
            problems.append(f"it removes 'relation {c} inverse {b}.', but rules over {c} from {', '.join(ruled[:3])}"
                            f"{' and more' if len(ruled) > 3 else ''} stay, and those written over {b} were "
                            f"stored turned by it: retract those sources too (and ingest them again), or keep "
                            "the declaration")
    if problems:
        raise IngestError(f"{what}: " + "; ".join(problems))


def _rule_sources(store: Store, relation: str) -> list[str]:
    """The sources of the stored rules that name ``relation`` in a premise or their head, sorted."""
    from .rulejson import rule_from_json
    found = set()
    for name, source, body in store.conn.execute(
            "SELECT r.name, s.source, r.body FROM rules r JOIN sources s ON s.id = r.origin"):
        rule = rule_from_json(name, body)
        if any(a.relation == relation for a in rule.premises + rule.negated + (rule.head,)):
            found.add(source)
    return sorted(found)


def _check_rule_names(store: Store, batch: Batch, path: str, inverses: dict[str, str] | None = None) -> None:
    """Reject a rule whose name an earlier rule of this ingest or the store has: a name identifies a rule
    (the store keeps one rule per name, and proofs name rules), so a second ``rule r0`` would silently
    replace or hide the first. Re-ingesting a source replaces its rules (it is retracted first). Rules
    compare as a question reads them, with ``inverses`` (a row stored before ``relation k inverse h.`` is
    unturned, the same rule compiled after it turned), and by statement: a stored n-ary ``rule r`` (rows
    r/1, r/2) and a binary ``rule r`` are two rules of one name."""
    if not batch.rules and not batch.unit_rules:
        return
    from ..language import _stated
    from ..normalize import orient_rules
    from .rulejson import rule_from_json
    turn = (lambda r: orient_rules([r], inverses)[0]) if inverses else (lambda r: r)  # noqa: E731
    seen: dict[str, tuple] = {}   # name -> (line, rule, unit)
    bad: dict[int, str] = {}
    # a restricted note's rules (its declarations' among them) count too: another rule of a stored name
    # is refused; the same rule scoped to another unit is stored beside it (Store.rule_rows reads each),
    # but not twice in one source (one row per name and source)
    entries = [(r, line, None) for r, line in batch.rules] + list(batch.unit_rules)
    statements: dict[str, tuple[set, int]] = {}   # statement -> (its rules' names, its first line)
    for r, line, _ in entries:
        statements.setdefault(_stated(r.name), (set(), line))[0].add(r.name)
    # the stored rows of each statement's names (a name, r/1 and r/2, r.not.1: one index range each)
    stored: dict[str, tuple[str, int, str]] = {}   # a name of this batch -> its stored row
    theirs: dict[str, list[tuple[str, str, int]]] = {}   # statement -> its stored names, sources, lines
    for st, (mine, _) in statements.items():
        for n, src, ln, body in store.conn.execute(
                "SELECT r.name, s.source, r.line, r.body FROM rules r JOIN sources s ON s.id = r.origin WHERE "
                "r.name = ? OR (r.name >= ? AND r.name < ?) OR (r.name >= ? AND r.name < ?)",
                (st, st + "/", st + "0", st + ".not.", st + ".not/")):
            if _stated(n) == st:
                theirs.setdefault(st, []).append((n, src, ln))
                if n in mine:
                    stored[n] = src, ln, body
    for r, line, unit in entries:   # one statement never gives one name twice; the same rule again is harmless
        name = _stated(r.name)
        if r.name in seen:
            first, earlier, earlier_unit = seen[r.name]
            if (earlier, earlier_unit) != (r, unit):
                bad.setdefault(line, f"a second rule named {name}: the first is at line {first}"
                                     "; rule names identify rules"
                                     f"{' (a rule scoped to a restricted unit is another rule)' if earlier == r else ''}"
                                     ", rename one")
        else:
            seen[r.name] = line, r, unit
        if r.name in stored and line not in bad:   # (the same rule scoped to another unit is stored beside it)
            src, ln, body = stored[r.name]
            if turn(rule_from_json(r.name, body)) != turn(r):
                bad.setdefault(line, f"rule {name} is already in the store from {src}:{ln}; rule names identify "
                                     f"rules: rename one, or retract {src} first")
    for st, (mine, line) in statements.items():   # a statement stored with other names (n-ary, binary)
        rows = theirs.get(st)
        if rows and line not in bad and {n for n, _, _ in rows} != mine:
            _, src, ln = rows[0]
            bad[line] = (f"rule {st} is already in the store from {src}:{ln}; rule names identify rules: rename "
                         f"one, or retract {src} first")
    if not bad:
        return
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().split("\n")
    except OSError:
        lines = []
    for line, reason in sorted(bad.items()):
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        col = len(text) - len(text.lstrip()) + 1
        batch.rejects.append(_reject(batch.source, line, col, reason, text))
    batch.rules = [(r, ln) for r, ln in batch.rules if ln not in bad]
    batch.unit_rules = [(r, ln, u) for r, ln, u in batch.unit_rules if ln not in bad]


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
    batch.rows = [r for r in batch.all_rows() if r[5] not in owners]
    batch.columns = []
    batch.unit_rules = [r for r in batch.unit_rules if r[2] not in owners]


def _write(store: Store, writer: FactWriter, origin: int, batch: Batch, totals: dict[str, int]) -> None:
    src = batch.source
    if batch.labels:
        store.add_label_rows(origin, batch.labels.items())
    if batch.units:
        store.add_units(batch.units, src)
        totals["units"] += len(batch.units)
    if batch.rows or batch.columns:
        totals["facts"] += writer.add(origin, batch.rows, batch.columns, batch.ids)
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
