"""Writes update the graph file incrementally: a *delta* file beside it (``kb.sqlite.graph.delta``).

A committed write does not rebuild the graph file. While the transaction runs, temporary triggers
on this connection note which facts it inserted, changed or deleted (:func:`arm`); before the commit
those facts are read back in their final state (:func:`collect`), and after the commit, still under
the store's writer lock, :func:`advance` folds them into the delta: the facts that differ from the
base graph file, cumulated since the base was written, stamped with the base's stamp and with the
store state they bring it to. The delta is rewritten whole (temporary file, fsync, rename), so it is
either the old one or the new one; when it grows past :func:`merge_limit` entries it is merged into a
new base file instead (numpy, without reading the store). A reader maps the base and, when its stamp
is not the store's, the delta whose stamps lead from the base to the store's current stamp
(:func:`open_current`); anything else — no delta, a delta of another base or of an older store state,
a torn or foreign file — is stale, and the graph file is rebuilt from the store, never trusted.

A transaction that changes more than :data:`MAX_DELTA` facts, a write the delta does not follow
(another process wrote with the graph file turned off, or died between its commit and its delta), and
a first write rebuild the file whole, as before.
"""

from __future__ import annotations

import os

from grammar import _import_module   # (one project: the lazy imports of both packages)

from .graphfile import (GraphArrays, Stamp, _locked, ensure_token, graph_path, map_container, open_graph, read_facts,
                        store_stamp, write_container, write_graph)

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:   # numpy and the overlay load when a delta is read or written, not to open a current file
    import numpy as np

    from .overlay import Overlay

__all__ = ["MAX_DELTA", "DELTA_MAGIC", "delta_path", "arm", "disarm", "collect", "advance", "open_current",
           "merge_limit", "load_or_build", "build_graph", "restricted", "compose", "entry_orders"]

_MOVED = {"_base_confs": "deltacompose", "compose": "deltacompose", "compose_ids": "deltacompose",
          "entry_orders": "deltacompose", "restricted": "deltacompose", "remove_abandoned": "storefiles",
          "store_files": "storefiles"}


def __getattr__(name: str):
    """The names that moved to ``deltacompose.py`` and ``storefiles.py``, still importable from here,
    loaded on first use: a question that opens a current graph file needs neither (~25 KB of .pyc)."""
    if name in _MOVED:
        return getattr(_import_module(f".{_MOVED[name]}", __package__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


MAX_DELTA = 65536          # entries a delta may hold before it is merged into the base
DELTA_MAGIC = b"TDBDELTA"
_TRIGGERS = {
    "tdb_fact_ins": "AFTER INSERT ON main.facts BEGIN INSERT INTO tdb_changed VALUES (new.id); END",
    "tdb_fact_upd": "AFTER UPDATE ON main.facts BEGIN INSERT INTO tdb_changed VALUES (new.id); END",
    "tdb_fact_del": ("AFTER DELETE ON main.facts BEGIN INSERT INTO tdb_gone VALUES "
                     "(old.subject, old.relation, old.object); END"),
}

Change = tuple  # (subject, relation, object, confidence or None when the triple is gone)


def delta_path(store_path: str) -> str:
    """The delta file of a store's graph file.

    >>> delta_path("kb.sqlite")
    'kb.sqlite.graph.delta'
    """
    return graph_path(store_path) + ".delta"


def merge_limit(base_facts: int) -> int:
    """Entries a delta over a base of ``base_facts`` facts may hold: an eighth of the base, at least
    4,096 and at most :data:`MAX_DELTA` (so opening a delta stays cheap whatever the store's size).

    >>> merge_limit(10), merge_limit(100_000), merge_limit(10_000_000)
    (4096, 12500, 65536)
    """
    return min(MAX_DELTA, max(4096, base_facts // 8))


# -- capturing a transaction's changes ---------------------------------------------------------------
def arm(conn) -> None:
    """Note the facts this connection writes from now on (temporary tables and triggers)."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS tdb_changed (id INTEGER)")
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS tdb_gone (s TEXT, r TEXT, o TEXT)")
    conn.execute("DELETE FROM temp.tdb_changed")
    conn.execute("DELETE FROM temp.tdb_gone")
    for name, body in _TRIGGERS.items():
        conn.execute(f"CREATE TEMP TRIGGER IF NOT EXISTS {name} {body}")
    from .changelog import arm as arm_log      # and what the views depend on (store/changelog.py)
    arm_log(conn)


def disarm(conn) -> None:
    """Stop noting writes (a transaction too large for a delta: the file is rebuilt whole)."""
    for name in _TRIGGERS:
        conn.execute(f"DROP TRIGGER IF EXISTS temp.{name}")
    from .changelog import disarm as disarm_log
    disarm_log(conn)


def collect(conn, limit: int = MAX_DELTA) -> list[Change] | None:
    """The facts the armed transaction changed, in their state now (call before the commit); None
    when they are more than ``limit`` or the triggers were disarmed."""
    armed = conn.execute("SELECT count(*) FROM sqlite_temp_master WHERE type = 'trigger' AND name LIKE 'tdb_fact_%'")
    if armed.fetchone()[0] != len(_TRIGGERS):
        return None
    n = conn.execute("SELECT (SELECT count(*) FROM temp.tdb_changed) + (SELECT count(*) FROM temp.tdb_gone)").fetchone()[0]
    if n > limit:
        return None
    out: list[Change] = list(conn.execute(
        "SELECT f.subject, f.relation, f.object, f.confidence FROM (SELECT DISTINCT id FROM temp.tdb_changed) c JOIN facts f ON f.id = c.id"))
    out += [(s, r, o, None) for s, r, o in conn.execute(
        "SELECT DISTINCT s, r, o FROM temp.tdb_gone g WHERE NOT EXISTS "
        "(SELECT 1 FROM facts f WHERE f.subject = g.s AND f.relation = g.r AND f.object = g.o)")]
    return out


# -- reading ---------------------------------------------------------------------------------------
def open_delta(path: str, base: GraphArrays, expect: Stamp) -> Overlay | None:
    """The delta at ``path`` read over ``base`` when it leads from the base's stamp to ``expect``;
    None otherwise (missing, stale, of another base, torn or corrupt)."""
    import numpy as np
    from .overlay import Overlay
    got = map_container(path, DELTA_MAGIC)
    if got is None:
        return None
    header, arrays, _ = got
    try:
        if Stamp(*header["base"]) != base.stamp or Stamp(*header["stamp"]) != expect:
            return None
        return Overlay(base, header, {k: np.array(v) for k, v in arrays.items()})
    except (KeyError, TypeError, ValueError, IndexError):
        return None


def open_current(store_path: str, stamp: Stamp) -> GraphArrays | None:
    """The graph file with its delta (``.overlay``) when together they are the store at ``stamp``."""
    base = open_graph(graph_path(store_path))
    if base is None:
        return None
    if base.stamp == stamp:
        return base
    ov = open_delta(delta_path(store_path), base, stamp)
    if ov is None:
        return None
    base.overlay = ov
    return base


def load_or_build(store) -> GraphArrays | None:
    """The store's graph file with its delta if together they are current, else the file rebuilt;
    None when it cannot be written."""
    got = open_current(store.path, store_stamp(store))
    return got if got is not None else build_graph(store)


def build_graph(store, path: str | None = None) -> GraphArrays | None:
    """Rebuild the graph file of ``store`` from its facts and open it (unless, once the lock is held,
    the file and its delta turn out current); None when it cannot be written (a read-only store or
    folder): the caller then builds the graph in memory."""
    path = path or graph_path(store.path)
    ensure_token(store)
    stamp = store_stamp(store)
    try:
        with _locked(path):
            current = open_current(store.path, stamp) if path == graph_path(store.path) else open_graph(path, stamp)
            if current is not None:
                return current
            from .storefiles import remove_abandoned
            remove_abandoned(store.path, path)
            stamp, symbols, relations, s, r, o, c = read_facts(store)
            write_graph(path, stamp, symbols, relations, s, r, o, c)
            try:
                os.remove(delta_path(store.path))
            except FileNotFoundError:
                pass
    except OSError:
        return None
    return open_graph(path, stamp)


# -- writing ---------------------------------------------------------------------------------------
def advance(store_path: str, parent: Stamp, stamp: Stamp, changes: list[Change]) -> bool:
    """Bring the graph file from the store state ``parent`` to ``stamp`` by ``changes`` (call after
    the commit, under the store's writer lock). False when the file on disk is not at ``parent``
    (the caller rebuilds it whole)."""
    from .overlay import Overlay
    gpath, dpath = graph_path(store_path), delta_path(store_path)
    try:
        with _locked(gpath):
            base = open_graph(gpath)
            if base is None:
                return False
            if base.stamp == stamp:
                return True
            if base.stamp == parent:
                old = None
            else:
                old = open_delta(dpath, base, parent)
                if old is None:
                    return False
            from .deltacompose import compose
            header, arrays = compose(base, old, changes)
            header.update(base=list(_fields(base.stamp)), stamp=list(_fields(stamp)))
            if len(arrays["e_s"]) > merge_limit(base.n_facts):
                merge(gpath, stamp, Overlay(base, header, arrays))
                _remove(dpath)
                new_base = open_graph(gpath, stamp)
                if new_base is not None:       # the view files over the old base, carried over (store/viewderive.py)
                    from .viewcarry import carry
                    carry(store_path, base, header, arrays, new_base)
            else:
                write_container(dpath, DELTA_MAGIC, {"format": 1, **header}, arrays)
            return True
    except OSError:
        return False


def _fields(s: Stamp) -> tuple:
    return (s.generation, s.token, s.max_fact)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def merge(gpath: str, stamp: Stamp, ov: Overlay) -> None:
    """Write base + delta as one new base graph file at ``stamp``."""
    import numpy as np
    parts = {"s": [], "r": [], "o": [], "c": []}
    for rid, e in enumerate(ov.rel_ext):
        lead, vals, conf = ov.edges("out", e)
        parts["s"].append(lead)
        parts["o"].append(vals)
        parts["c"].append(conf)
        parts["r"].append(np.full(len(lead), rid, dtype=np.int64))
    cat = {k: np.concatenate(v) if v else np.zeros(0) for k, v in parts.items()}
    write_graph(gpath, stamp, ov.all_keys(), list(ov.relations), cat["s"].astype(np.int64),
                cat["r"].astype(np.int64), cat["o"].astype(np.int64), cat["c"].astype(np.float64))
