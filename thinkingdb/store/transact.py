"""The writing side of a :class:`~thinkingdb.store.sqlite.Store`, loaded by the first write: transactions
under the writer protocol (:mod:`thinkingdb.store.locking`), the graph file kept current after a write, a
new store published at its path, saved lane indexes and the symbol mode. A question never loads it.

The functions here are ``Store`` methods (``store.transaction()``): :class:`~thinkingdb.store.sqlite.Store`
names them and imports this module the first time one is used.
"""

from __future__ import annotations

import os
from contextlib import contextmanager, nullcontext

from ..errors import StoreError
from ..normalize import SYMBOL_MODES
from .locking import file_id, new_store_path
from .sqlite import (APPLICATION_ID, CACHE_KIB, CHECK_WRITE_BYTES, SCHEMA_VERSION, StoreCreatedElsewhere,
                     _remove_store_files, sqlite3)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterator

_NO_GUARD = nullcontext()

_SCHEMA = """
CREATE TABLE sources (id INTEGER PRIMARY KEY, source TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,
    ingested_at TEXT NOT NULL, records INTEGER NOT NULL DEFAULT 0);
CREATE TABLE symbols (origin INTEGER NOT NULL, key TEXT NOT NULL, label TEXT NOT NULL,
    PRIMARY KEY (origin, key)) WITHOUT ROWID;
CREATE TABLE facts (id INTEGER PRIMARY KEY,
    subject TEXT NOT NULL, relation TEXT NOT NULL, object TEXT NOT NULL,
    confidence REAL NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    UNIQUE (subject, relation, object));
CREATE TABLE provenance (fact INTEGER NOT NULL, origin INTEGER NOT NULL, line INTEGER NOT NULL DEFAULT 0,
    unit_id TEXT, confidence REAL NOT NULL, detail TEXT);
{provenance_indexes}
CREATE TABLE units (
    id TEXT PRIMARY KEY, origin INTEGER NOT NULL, role TEXT, topic TEXT, claim TEXT, condition TEXT,
    procedure TEXT, utility_acts TEXT, utility_note TEXT, source TEXT, chunk TEXT, acl TEXT, region TEXT,
    effective_from TEXT, effective_to TEXT, extra TEXT, line INTEGER NOT NULL DEFAULT 0);
CREATE INDEX units_origin ON units (origin);
CREATE TABLE rules (name TEXT NOT NULL, origin INTEGER NOT NULL, body TEXT NOT NULL, line INTEGER NOT NULL,
    PRIMARY KEY (name, origin));
CREATE TABLE declarations (relation TEXT NOT NULL, kind TEXT NOT NULL, other TEXT NOT NULL DEFAULT '',
    origin INTEGER NOT NULL, line INTEGER NOT NULL, PRIMARY KEY (relation, kind, other, origin));
CREATE TABLE aliases (phrase TEXT NOT NULL, relation TEXT NOT NULL, origin INTEGER NOT NULL,
    line INTEGER NOT NULL, PRIMARY KEY (phrase, origin));
CREATE TABLE lane_indexes (name TEXT PRIMARY KEY, params TEXT NOT NULL, data BLOB NOT NULL,
    built_at TEXT NOT NULL, generation INTEGER NOT NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE change_log (generation INTEGER PRIMARY KEY, parent TEXT NOT NULL, stamp TEXT NOT NULL,
    triples TEXT NOT NULL, units TEXT NOT NULL);
"""

PROVENANCE_INDEXES = (("provenance_fact", "CREATE INDEX provenance_fact ON provenance (fact)"),
                      ("provenance_origin", "CREATE INDEX provenance_origin ON provenance (origin)"),
                      ("provenance_unit", "CREATE INDEX provenance_unit ON provenance (unit_id) WHERE unit_id IS NOT NULL"))
"""The provenance indexes (name, statement): a bulk load into a store without facts builds them after it."""
_SCHEMA = _SCHEMA.format(provenance_indexes="".join(sql + ";\n" for _, sql in PROVENANCE_INDEXES))


def _create_schema(store) -> bool:
    """Write the tables of a new store, its application id, schema version and first meta rows in one
    transaction; False (nothing written) when another process made them first."""
    conn = store._conn
    conn.execute("BEGIN IMMEDIATE")
    if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:   # another process was first
        conn.execute("ROLLBACK")
        return False
    for stmt in _SCHEMA.strip().split(";"):
        if stmt.strip():
            conn.execute(stmt)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    conn.execute("INSERT INTO meta VALUES ('generation', '0')")
    conn.execute("INSERT INTO meta VALUES ('symbols', 'iris')")
    conn.execute("COMMIT")
    return True


def check_before_write(store) -> None:
    """Refuse to write into a damaged store of up to :data:`CHECK_WRITE_BYTES` (checked once); give
    the connection its writing page cache (:data:`CACHE_KIB`; reading needs only :data:`READ_CACHE_KIB`:
    a full scan such as ``stats`` on a 1M-fact store peaked at 72 MB with the large cache, 23 MB without)."""
    conn = store.conn   # (not _conn: a store discarded after a failed first ingest is created again here)
    store._check("integrity_check", CHECK_WRITE_BYTES)
    if not store._write_cache:
        conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        store._write_cache = True


@contextmanager
def transaction(store) -> Iterator[None]:
    """All-or-nothing writes under the writer protocol (:mod:`thinkingdb.store.locking`): waits for
    another writer instead of failing; bumps the store generation so cached graphs reload.

    The first commit of a new store moves it to ``path``; if another process created a store there
    meanwhile, :class:`StoreCreatedElsewhere` is raised (nothing of this transaction is kept) and
    the store is reopened on the other process's file, so the caller may simply try again.
    """
    if store.readonly:
        raise StoreError(f"{store.path}: the store is open read-only (read-only media or permissions)")
    store.check_before_write()
    # a new store's handle holds its state lock until the store is published (or the write fails): no other
    # thread adopts a store another process published, nor reads the connection _publish replaces, meanwhile
    guard = store._state if store._pending else _NO_GUARD
    with guard, store._txn:   # (and no other thread of this handle reads or writes meanwhile: sqlite._Reading)
        yield from _write(store)


def _write(store) -> Iterator[None]:
    _writer_lock(store)
    current = False
    try:
        if not store._pending:   # before anything is written: a question never trusts it past this commit
            from .statefile import drop
            drop(store.path)
        try:
            store.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreError(f"{store.path}: cannot write: {exc}") from exc
        try:
            track = _track_start(store)
            store._touched = set()
            yield
            from .writelog import record
            record(store.conn, store._touched)   # which origins this write touched (store/writelog.py)
            store.conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
            # a new random token per write: a graph file built from another store state never matches
            store.conn.execute("INSERT OR REPLACE INTO meta VALUES ('token', ?)", (os.urandom(16).hex(),))  # secrets.token_hex(16)
            track = _track_end(store, track)
            if store._loaded is not None:   # the stamp of exactly this commit
                from .graphfile import store_stamp
                store._loaded = (store_stamp(store), *store._loaded)
            store.conn.execute("COMMIT")
            store._touched = None
        except BaseException:
            store._loaded = None
            store._touched = None
            store._stage = False   # the rollback drops temp.stage when this write created it
            if store.conn.in_transaction:
                store.conn.execute("ROLLBACK")
            raise
        if store._pending:
            _publish(store)
        elif track is not None:
            from .graphdelta import advance
            current = advance(store.path, *track)
    finally:
        store._lock.release()
    store.generation = store._generation()
    if store.graph_file and not current:
        store.refresh_graph()


def discard(store) -> bool:
    """Close and forget a store this object created and never committed (its private file is
    removed; nothing was ever at ``path``). Using the store afterwards creates it again. Returns
    whether there was such a store."""
    if not store._pending or store._closed:
        return False
    store._closed = True
    store._conn.close()
    store._lock.close()
    _remove_store_files(store._pending)
    store._discarded = True
    store._pending = new_store_path(store.path)
    if not os.path.exists(store.path):   # a graph file made for the store that never was
        for suffix in (".graph", ".graph.lock", ".state"):
            _remove_store_files(store.path + suffix)
    return True


def _track_start(store) -> tuple | None:
    """Note this transaction's fact changes for the graph file's delta (docs/storage.md)."""
    if not store.graph_file or store._pending:
        return None
    from .graphdelta import arm
    from .graphfile import store_stamp
    arm(store.conn)
    store._noted = 0
    return (store_stamp(store),)


def _track_end(store, track: tuple | None) -> tuple | None:
    """``(parent stamp, new stamp, changes)`` for :func:`~thinkingdb.store.graphdelta.advance`,
    or None when the changes are too many for a delta."""
    if track is None:
        return None
    from . import changelog
    from .graphdelta import collect
    from .graphfile import store_stamp
    changes = collect(store.conn)
    stamp = store_stamp(store)
    logged = changelog.collect(store.conn, changes)
    if logged is not None:    # what the caller views depend on, for their next reader (store/changelog.py)
        changelog.record(store.conn, track[0], stamp, logged)
    return None if changes is None else (track[0], stamp, changes)


def _note_rows(store, n: int) -> None:
    """A write of ``n`` more fact rows: past a delta's size, stop noting them (rebuilt whole)."""
    from .graphdelta import MAX_DELTA, disarm
    store._noted = getattr(store, "_noted", 0) + n
    if store._noted > MAX_DELTA:
        disarm(store.conn)


def refresh_graph(store) -> None:
    """Rebuild the graph file beside the store after a write, so the next open maps it at once
    (a failure here only leaves the file stale: the next reader rebuilds it)."""
    from .graphdelta import build_graph
    loaded, store._loaded = store._loaded, None
    try:
        if loaded is not None and len(loaded) == 8:   # a bulk load's arrays: no read back of the facts
            from .graphdelta import delta_path
            from .graphfile import _locked, graph_path, write_graph
            stamp, *facts, pending = loaded
            path = graph_path(store.path)
            with _locked(path):
                write_graph(path, stamp, *facts, arrays=pending() if pending is not None else None)
                if os.path.exists(delta_path(store.path)):   # a delta over the old file is void
                    os.remove(delta_path(store.path))
            return
        build_graph(store)
    except (OSError, sqlite3.Error):
        pass


def keep_loaded_graph(store, symbols: list[str], relations: list[str], s, r, o, conf, arrays=None) -> None:
    """The whole fact table of this transaction's store state, interned as the graph file takes it
    (:func:`~thinkingdb.store.graphfile.write_graph`): written after the commit instead of reading
    the facts back. Only for a transaction that wrote every fact of the store (a bulk load).
    ``arrays``: None, or a function giving the file's arrays (None if it could not) computed meanwhile."""
    if store.graph_file and store.conn.in_transaction:
        store._loaded = (symbols, relations, s, r, o, conf, arrays)


def _writer_lock(store) -> None:
    """Hold the writer lock on the file our connection has open, reopening ``path`` if that file
    was replaced (a pending store locks nothing: no other process knows its file)."""
    for _ in range(100):
        if store._pending:
            if os.path.exists(store.path):     # another process created the store meanwhile: use it
                store._adopt()
                continue
            return
        got = store._lock.acquire()
        if got is not None and got == file_id(store.path):
            return
        store._lock.release()
        store._reopen()
    raise StoreError(f"{store.path}: the store file keeps being replaced; cannot write")


def _publish(store) -> None:
    """Move a new store's private file to ``path`` once it holds a commit (never over another)."""
    tmp = store._pending
    _seal(store)
    store._conn.close()
    store._lock.close()
    try:
        os.link(tmp, store.path)
    except FileExistsError:
        _remove_store_files(tmp)
        store._pending = None
        store._adopt(reopen_only=True)
        raise StoreCreatedElsewhere(f"{store.path}: another process created this store at the same time; "
                                    "nothing was written, try again") from None
    _remove_store_files(tmp)
    store._pending = None
    from .statefile import drop
    drop(store.path)   # (a state file left from a store once at this path: never matches, but goes)
    store._reopen()


def _seal(store) -> None:
    """Make the private file of a new store a WAL store, everything on disk (fsync), before it is linked."""
    if store._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0] != "wal":
        raise StoreError(f"{store.path}: the new store could not be switched to WAL mode")
    fd = os.open(store._pending, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_index(store, name: str, params: dict, data: bytes) -> bool:
    """Save a lane index blob with its parameters (round-trips through :meth:`load_index`).

    Best effort: when another process is writing (or the store is read-only) nothing is saved and
    False is returned at once — a search never waits behind an ingest to save its index.
    """
    import json
    row = (name, json.dumps(params, sort_keys=True), data)
    insert = "INSERT OR REPLACE INTO lane_indexes VALUES (?, ?, ?, datetime('now'), ?)"
    # (the connection and the writer lock are the handle's, shared by its threads: checked and taken under
    # its transaction lock, as sqlite._Reading and transaction() take it)
    with store._txn:
        if store.conn.in_transaction:   # inside this thread's own transaction (which holds the lock)
            store.conn.execute(insert, (*row, store.current_generation()))
            return True
        if store.readonly or store._pending:
            return False
        store.check_before_write()
        if not store._lock.try_acquire():
            return False
        try:
            if store._lock.file_id() != file_id(store.path):
                return False
            c = store.conn
            c.execute("PRAGMA busy_timeout = 0")
            try:
                c.execute(insert, (*row, store.current_generation()))
            except sqlite3.OperationalError:
                return False
            finally:
                c.execute("PRAGMA busy_timeout = 5000")
            return True
        finally:
            store._lock.release()


def set_symbol_mode(store, mode: str) -> None:
    """Choose the symbol mode of a store that holds no facts yet; a store with facts keeps its own."""
    if mode not in SYMBOL_MODES:
        raise StoreError(f"unknown symbol mode {mode!r}; expected one of {', '.join(SYMBOL_MODES)}")
    if mode == store.symbol_mode:
        return
    if store.conn.execute("SELECT 1 FROM facts LIMIT 1").fetchone() or store.readonly:
        raise StoreError(f"{store.path}: the store keys symbols in mode {store.symbol_mode!r}; it cannot change "
                         f"to {mode!r} once it holds facts (ingest into a new store)")
    with store.transaction():
        store.conn.execute("INSERT OR REPLACE INTO meta VALUES ('symbols', ?)", (mode,))
