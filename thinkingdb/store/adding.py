"""What a write adds to a :class:`~thinkingdb.store.sqlite.Store` or removes from it, inside
:meth:`~thinkingdb.store.sqlite.Store.transaction`: sources, labels, facts with their provenance, rules,
declarations, aliases, units, and the retraction of everything one source contributed. A question never
loads it.

The functions here are ``Store`` methods (``store.add_facts(...)``), imported on first use.
"""

from __future__ import annotations

import os

from .rulejson import rule_to_json
from .transact import _note_rows

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable, Sequence

    from ..model import Declaration, Fact
    from .unit import Unit

FactRow = tuple  # (subject, relation, object, confidence, line, unit_id | None, detail JSON | None)


def source_id(store, source: str, kind: str = "") -> int:
    """The origin id of ``source``, registering it (call inside a transaction)."""
    from .writelog import note
    row = store.conn.execute("SELECT id FROM sources WHERE source = ?", (source,)).fetchone()
    if row is not None:
        note(store, row[0])
        return row[0]
    kind = kind or os.path.splitext(source)[1].lstrip(".") or "api"
    origin = store.conn.execute("INSERT INTO sources (source, kind, ingested_at) VALUES (?, ?, datetime('now'))",
                               (source, kind)).lastrowid
    note(store, origin)
    return origin


def record_source(store, source: str, kind: str, records: int) -> None:
    """Set the record count (and kind) of a source, registering it if needed."""
    origin = store.source_id(source, kind)
    store.conn.execute("UPDATE sources SET kind = ?, records = ? WHERE id = ?", (kind, records, origin))


def add_labels(store, labels: dict[str, str], source: str = "<api>") -> None:
    """Display labels of symbol keys (the first label a source gives is kept)."""
    store.add_label_rows(store.source_id(source), labels.items())


def add_label_rows(store, origin: int, items: Iterable[tuple[str, str]]) -> None:
    from .writelog import note
    note(store, origin)
    store.conn.executemany(f"INSERT OR IGNORE INTO symbols VALUES ({int(origin)}, ?, ?)", items)


def add_facts(store, rows: Iterable[tuple[Fact, str, int, str | None]]) -> int:
    """Insert facts with provenance; a duplicate triple keeps the highest confidence."""
    by_source: dict[str, list[FactRow]] = {}
    for f, src, line, unit in rows:
        by_source.setdefault(src, []).append((f.subject, f.relation, f.object, f.confidence, line, unit, None))
    return sum(store.add_fact_rows(store.source_id(src), batch) for src, batch in by_source.items())


def add_fact_rows(store, origin: int, rows: Sequence[FactRow]) -> int:
    """The fast path: validated canonical rows ``(s, r, o, confidence, line, unit_id, detail)``.

    Rows go to a temporary staging table with one ``executemany``; two set-based statements then
    merge them into ``facts`` (max confidence) and append their provenance, in file order.
    """
    from .writelog import note
    c = store.conn
    note(store, origin)
    store._loaded = None   # the facts are no longer those of a bulk load alone
    if not store._stage:
        c.execute("CREATE TEMP TABLE IF NOT EXISTS stage (s TEXT, r TEXT, o TEXT, c REAL, line INTEGER, "
                  "unit TEXT, detail TEXT)")
        store._stage = True
    c.execute("DELETE FROM temp.stage")
    if store.graph_file:
        _note_rows(store, len(rows))
    c.executemany("INSERT INTO temp.stage VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    # Sorted, so the unique index is walked in order rather than at random (large random inputs).
    c.execute("INSERT INTO facts (subject, relation, object, confidence) SELECT s, r, o, c FROM temp.stage "
              "WHERE true ORDER BY s, r, o ON CONFLICT (subject, relation, object) DO UPDATE SET "
              "confidence = max(confidence, excluded.confidence)")
    c.execute(f"INSERT INTO provenance SELECT f.id, {int(origin)}, st.line, st.unit, st.c, st.detail "
              "FROM temp.stage st JOIN facts f ON f.subject = st.s AND f.relation = st.r AND f.object = st.o "
              "ORDER BY st.rowid")
    return len(rows)


def add_rules(store, rules: Iterable[tuple]) -> None:
    """Rules as ``(rule, source, line)`` or ``(rule, source, line, unit id)`` for a restricted unit's rule."""
    store.conn.executemany("INSERT OR REPLACE INTO rules VALUES (?, ?, ?, ?)",
                          [(r.name, store.source_id(src), rule_to_json(r, unit[0] if unit else None), line)
                           for r, src, line, *unit in rules])


def add_declarations(store, decls: Iterable[tuple[Declaration, str, int]]) -> None:
    store.conn.executemany("INSERT OR REPLACE INTO declarations VALUES (?, ?, ?, ?, ?)",
                          [(d.relation, d.kind, d.other or "", store.source_id(src), line)
                           for d, src, line in decls])


def add_aliases(store, aliases: Iterable[tuple[str, str, str, int]]) -> None:
    from ..normalize import relation_key
    mode = store.symbol_mode
    store.conn.executemany("INSERT OR REPLACE INTO aliases VALUES (?, ?, ?, ?)",
                          [(relation_key(p, mode), r, store.source_id(src), line) for p, r, src, line in aliases])


def unit_owner(store, unit_ids: Sequence[str]) -> dict[str, str]:
    """Which source already holds each of ``unit_ids`` (absent ids are left out)."""
    out: dict[str, str] = {}
    ids = list(unit_ids)
    for i in range(0, len(ids), 500):
        part = ids[i:i + 500]
        sql = ("SELECT u.id, s.source FROM units u JOIN sources s ON s.id = u.origin WHERE u.id IN ("
               + ",".join("?" * len(part)) + ")")
        out.update(store.conn.execute(sql, part))
    return out


def add_units(store, units: Iterable[tuple[Unit, int]], source: str | None = None) -> None:
    """Insert units; ``source`` (the ingested file) defaults to each unit's own ``source`` field."""
    import json
    rows = []
    for u, line in units:
        origin = store.source_id(source if source is not None else (u.source or "<api>"))
        rows.append((u.id, origin, u.role, u.topic, u.claim, u.condition, u.procedure,
                     json.dumps(list(u.utility_acts)), u.utility_note, u.source, u.chunk,
                     json.dumps(list(u.acl)), u.region, u.effective_from, u.effective_to, u.extra, line))
    from .changelog import MAX_LOGGED, disarm
    if store.graph_file and len(rows) > MAX_LOGGED:   # too many for the change log: not noted one by one
        disarm(store.conn)
    store.conn.executemany("INSERT OR REPLACE INTO units VALUES (" + ",".join("?" * 17) + ")", rows)


def retract_source(store, source: str) -> dict[str, int]:
    """Remove everything a source contributed, as if it had never been ingested (call inside a
    transaction). Facts asserted elsewhere too stay, with the max of their remaining confidences."""
    c = store.conn
    row = c.execute("SELECT id FROM sources WHERE source = ?", (source,)).fetchone()
    if row is None:
        return {"facts": 0, "units": 0, "provenance": 0}
    origin = row[0]
    from .writelog import note
    note(store, origin)
    store._loaded = None
    c.execute("CREATE TEMP TABLE IF NOT EXISTS touched (fact INTEGER PRIMARY KEY)")
    c.execute("DELETE FROM temp.touched")
    c.execute("INSERT OR IGNORE INTO temp.touched SELECT fact FROM provenance WHERE origin = ?", (origin,))
    if store.graph_file:   # a retract larger than a delta rebuilds the graph file whole (no notes kept)
        _note_rows(store, c.execute("SELECT count(*) FROM temp.touched").fetchone()[0])
    removed = c.execute("DELETE FROM provenance WHERE origin = ?", (origin,)).rowcount
    facts = c.execute("DELETE FROM facts WHERE id IN (SELECT fact FROM temp.touched) AND NOT EXISTS "
                      "(SELECT 1 FROM provenance p WHERE p.fact = facts.id)").rowcount
    c.execute("UPDATE facts SET confidence = (SELECT max(p.confidence) FROM provenance p WHERE p.fact = facts.id) "
              "WHERE id IN (SELECT fact FROM temp.touched)")
    units = c.execute("DELETE FROM units WHERE origin = ?", (origin,)).rowcount
    for table in ("symbols", "rules", "declarations", "aliases"):
        c.execute(f"DELETE FROM {table} WHERE origin = ?", (origin,))
    c.execute("DELETE FROM sources WHERE id = ?", (origin,))
    c.execute("DELETE FROM temp.touched")
    return {"facts": facts, "units": units, "provenance": removed}
