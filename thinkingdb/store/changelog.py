"""The change log: what each committed write changed that a caller's view depends on (issue 20).

A caller's view file (:mod:`thinkingdb.store.viewfile`) and the access table are caches of one store
state. A write of one fact made both stale, and the first process after it recomputed them whole
(~2.9 s on the store of ``benchmarks/serve.py``). With this log the first process after a small write
derives them from the files of an earlier state instead, touching only what changed.

A view gives each triple the best confidence among its *visible* provenance rows (docs/access.md).
Between two store states that can differ only for a triple whose ``facts`` row or provenance rows
changed, or that a unit asserts whose row in ``units`` changed (added, removed, or its access columns
— or anything else — rewritten): a unit whose row did not change is seen, or not, by a caller on a
date exactly as before. So each write records, in the same transaction as its commit, one row of
``change_log``:

* ``generation``, ``parent`` and ``stamp``: the store state the write started from and the one it made
  (:class:`~thinkingdb.store.graphfile.Stamp` as JSON);
* ``triples``: every triple whose ``facts`` or provenance rows the write inserted, updated or deleted;
* ``units``: every unit whose row the write inserted, replaced, updated or deleted, with its access
  columns *before* the write (``[id, acl, region, from, to]``) or ``[id]`` when it did not exist
  (so a reader can tell which view of the earlier state was the same caller's).

Temporary triggers on the writer's connection note them (:func:`arm`, next to the graph delta's);
:func:`collect` turns the notes into the row before the commit. A write that changes more than
:data:`MAX_LOGGED` triples and units, or whose notes were dropped (a bulk load), records nothing.
:func:`chain` reads the records leading from one stamp to another, and returns None unless every write
between them is recorded and each record's parent is the previous one's stamp: a gap (an unrecorded
write, a write by an older ThinkingDB or by ``graph_file=False`` code, a pruned record) makes the
reader recompute, never guess. The last :data:`KEEP` writes are kept.

>>> import tempfile, os
>>> from thinkingdb.store.sqlite import Store, Unit
>>> from thinkingdb.store.graphfile import store_stamp
>>> from thinkingdb.model import Fact
>>> with Store(os.path.join(tempfile.mkdtemp(), "kb.sqlite")) as st:
...     with st.transaction():
...         st.add_units([(Unit("u1", acl=("x",)), 1)], source="a.jsonl")
...     first = store_stamp(st)
...     with st.transaction():
...         _ = st.add_facts([(Fact("a", "r", "b", 0.5), "a.jsonl", 2, "u1")])
...         st.add_units([(Unit("u1"), 1), (Unit("u2"), 2)], source="a.jsonl")
...     got = chain(st.conn, first, store_stamp(st))
>>> sorted(got.triples), sorted(got.units.items())
([('a', 'r', 'b')], [('u1', (('x',), '', '', '')), ('u2', None)])
"""

from __future__ import annotations

import json

from .graphfile import Stamp

__all__ = ["KEEP", "MAX_LOGGED", "TABLE_SQL", "Changes", "arm", "disarm", "collect", "record", "chain"]

KEEP = 64             # writes remembered
MAX_LOGGED = 16384    # triples + units one write may record; a larger write records nothing (a gap)

TABLE_SQL = ("CREATE TABLE IF NOT EXISTS change_log (generation INTEGER PRIMARY KEY, parent TEXT NOT NULL, "
             "stamp TEXT NOT NULL, triples TEXT NOT NULL, units TEXT NOT NULL)")
_COLS = "acl, region, effective_from, effective_to"
_TRIGGERS = {
    "tdb_prov_ins": "AFTER INSERT ON main.provenance BEGIN INSERT INTO tdb_vfacts VALUES (new.fact); END",
    "tdb_prov_upd": ("AFTER UPDATE ON main.provenance BEGIN INSERT INTO tdb_vfacts VALUES (old.fact); "
                     "INSERT INTO tdb_vfacts VALUES (new.fact); END"),
    "tdb_prov_del": "AFTER DELETE ON main.provenance BEGIN INSERT INTO tdb_vfacts VALUES (old.fact); END",
    # BEFORE: the row as it was (an INSERT OR REPLACE deletes the old row without a delete trigger)
    "tdb_unit_ins": (f"BEFORE INSERT ON main.units BEGIN INSERT INTO tdb_vunits SELECT new.id, u.id IS NOT NULL, "
                     f"{', '.join('u.' + c for c in _COLS.split(', '))} FROM (SELECT 1) LEFT JOIN main.units u "
                     "ON u.id = new.id; END"),
    "tdb_unit_upd": (f"BEFORE UPDATE ON main.units BEGIN INSERT INTO tdb_vunits SELECT old.id, 1, "
                     f"{', '.join('old.' + c for c in _COLS.split(', '))}; "
                     f"INSERT INTO tdb_vunits SELECT new.id, u.id IS NOT NULL, "
                     f"{', '.join('u.' + c for c in _COLS.split(', '))} FROM (SELECT 1) LEFT JOIN main.units u "
                     "ON u.id = new.id; END"),
    "tdb_unit_del": (f"BEFORE DELETE ON main.units BEGIN INSERT INTO tdb_vunits SELECT old.id, 1, "
                     f"{', '.join('old.' + c for c in _COLS.split(', '))}; END"),
}


class Changes:
    """What the writes between two store states changed: the triples, and each changed unit's access
    columns at the earlier state (``(acl tags, region, from, to)``, None: it did not exist)."""

    __slots__ = ("triples", "units")

    def __init__(self, triples: set, units: dict) -> None:
        self.triples, self.units = triples, units


def arm(conn) -> None:
    """Note the provenance and unit rows this connection writes from now on (with
    :func:`~thinkingdb.store.graphdelta.arm`, which notes the facts)."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS tdb_vfacts (id INTEGER)")
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS tdb_vunits (id TEXT, present INTEGER, acl TEXT, region TEXT, "
                 "start TEXT, end TEXT)")
    conn.execute("DELETE FROM temp.tdb_vfacts")
    conn.execute("DELETE FROM temp.tdb_vunits")
    for name, body in _TRIGGERS.items():
        conn.execute(f"CREATE TEMP TRIGGER IF NOT EXISTS {name} {body}")


def disarm(conn) -> None:
    """Stop noting (a write too large to record: the next reader recomputes)."""
    for name in _TRIGGERS:
        conn.execute(f"DROP TRIGGER IF EXISTS temp.{name}")


def collect(conn, fact_changes: list | None, limit: int | None = None) -> tuple[list, list] | None:
    """``(triples, units)`` of the armed transaction (call before the commit, with the facts it
    changed: :func:`~thinkingdb.store.graphdelta.collect`); None when they are too many or a note
    was dropped."""
    if fact_changes is None:
        return None
    limit = MAX_LOGGED if limit is None else limit
    armed = conn.execute("SELECT count(*) FROM sqlite_temp_master WHERE type = 'trigger' AND name IN "
                         f"({', '.join('?' * len(_TRIGGERS))})", tuple(_TRIGGERS))
    if armed.fetchone()[0] != len(_TRIGGERS):
        return None
    n = conn.execute("SELECT (SELECT count(DISTINCT id) FROM temp.tdb_vfacts) + "
                     "(SELECT count(DISTINCT id) FROM temp.tdb_vunits)").fetchone()[0]
    if n + len(fact_changes) > limit:
        return None
    triples = {(s, r, o) for s, r, o, _ in fact_changes}
    triples.update(conn.execute("SELECT f.subject, f.relation, f.object FROM (SELECT DISTINCT id FROM temp.tdb_vfacts) "
                                "v JOIN main.facts f ON f.id = v.id"))
    # a provenance row of a fact deleted since is a triple of ``fact_changes`` (gone)
    units: dict[str, list] = {}
    for uid, present, acl, region, start, end in conn.execute(
            "SELECT id, present, acl, region, start, end FROM temp.tdb_vunits ORDER BY rowid"):
        if uid not in units:           # its state before the write: the first note
            units[uid] = [uid, acl, region, start, end] if present else [uid]
    return sorted(triples), [units[u] for u in sorted(units)]


def record(conn, parent: Stamp, stamp: Stamp, got: tuple[list, list]) -> None:
    """Store the write's record (inside its transaction, after the generation and token are set)."""
    conn.execute(TABLE_SQL)
    conn.execute("DELETE FROM change_log WHERE generation <= ?", (stamp.generation - KEEP,))
    triples, units = got
    conn.execute("INSERT OR REPLACE INTO change_log VALUES (?, ?, ?, ?, ?)",
                 (stamp.generation, _json(parent), _json(stamp), json.dumps(triples, separators=(",", ":")),
                  json.dumps(units, separators=(",", ":"))))


def _json(s: Stamp) -> str:
    return json.dumps([s.generation, s.token, s.max_fact])


def chain(conn, old: Stamp, new: Stamp, max_writes: int | None = None) -> Changes | None:
    """What the writes from store state ``old`` to ``new`` changed (nothing when they are the same
    state), read on ``conn`` (which must see ``new``); None unless every one of them is recorded, one
    after the other."""
    import sqlite3
    if old == new:
        return Changes(set(), {})
    if not (old.generation < new.generation <= old.generation + (KEEP if max_writes is None else max_writes)):
        return None
    try:
        rows = conn.execute("SELECT generation, parent, stamp, triples, units FROM change_log WHERE generation > ? "
                            "AND generation <= ? ORDER BY generation", (old.generation, new.generation)).fetchall()
    except sqlite3.OperationalError:      # no log yet (a store no write of this version touched)
        return None
    if len(rows) != new.generation - old.generation:
        return None
    triples: set = set()
    units: dict = {}
    at = old
    try:
        for gen, parent, stamp, t, u in rows:
            if Stamp(*json.loads(parent)) != at:
                return None
            at = Stamp(*json.loads(stamp))
            if at.generation != gen:
                return None
            triples.update(map(tuple, json.loads(t)))
            for row in json.loads(u):
                if row[0] not in units:    # its state at ``old``: the earliest record
                    units[row[0]] = None if len(row) == 1 else (
                        tuple(json.loads(row[1] or "[]")), row[2] or "", row[3] or "", row[4] or "")
    except (ValueError, TypeError, IndexError):
        return None
    if at != new:
        return None
    return Changes(triples, units)
