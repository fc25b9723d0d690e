"""The write log: which sources (origins) each committed write touched, kept in ``meta``.

A long-lived reader (the server's snapshot, docs/serve.md) that sees the store move from generation
*a* to *b* asks :func:`touched` which origins the writes in between added, replaced or removed rows
of; everything that changed — units, provenance, labels — is a row of one of those origins, read from
the old and the new state by origin (``units_origin``, ``provenance_origin`` and the symbols' primary
key are indexes), so the reader updates its caches by what changed instead of reading the store
again. :meth:`Store.transaction <thinkingdb.store.sqlite.Store.transaction>` notes the origins of a
write (:func:`note`) and stores them with the generation the commit makes (:func:`record`).

The log is ``meta('write_log')``: JSON ``[[generation, [origin, ...]], ...]``, the last
:data:`KEEP` writes. A write that touched more than :data:`MAX_ORIGINS` origins is recorded as
``null`` ("everything"). A gap — a generation older than the log, or a write by code that does not
keep it — makes :func:`touched` return None: the reader then reads the store whole, as before.

>>> import tempfile, os
>>> from thinkingdb.store.sqlite import Store
>>> with Store(os.path.join(tempfile.mkdtemp(), "kb.sqlite")) as st:
...     with st.transaction():
...         a = st.source_id("a.tdb")
...     with st.transaction():
...         b = st.source_id("b.tdb")
...     gen = st.current_generation()
...     sorted(touched(st.conn, gen - 1, gen)) == [b], sorted(touched(st.conn, gen - 2, gen)) == [a, b]
(True, True)
"""

from __future__ import annotations

import json

__all__ = ["KEEP", "MAX_ORIGINS", "note", "record", "touched"]

KEEP = 256            # writes remembered
MAX_ORIGINS = 4096    # origins one write may list before it is recorded as touching everything


def note(store, origin: int) -> None:
    """Remember that the running write transaction of ``store`` touched ``origin``."""
    got = getattr(store, "_touched", None)
    if got is not None:
        got.add(int(origin))


def record(conn, origins: set[int] | None) -> None:
    """Store the write's origins under the generation its commit makes (call inside the transaction,
    before the generation is bumped)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    gen = int(row[0]) + 1 if row else 1
    row = conn.execute("SELECT value FROM meta WHERE key = 'write_log'").fetchone()
    try:
        log = json.loads(row[0]) if row else []
    except ValueError:
        log = []
    entry = None if origins is None or len(origins) > MAX_ORIGINS else sorted(origins)
    log = [e for e in log if isinstance(e, list) and len(e) == 2 and e[0] < gen][-(KEEP - 1):] + [[gen, entry]]
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('write_log', ?)", (json.dumps(log, separators=(",", ":")),))


def touched(conn, old: int, new: int) -> set[int] | None:
    """The origins the writes after generation ``old`` up to ``new`` touched, read on ``conn`` (which
    must see generation ``new``); None when the log does not cover every one of those writes."""
    if new < old:
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = 'write_log'").fetchone()
    try:
        log = json.loads(row[0]) if row else []
        entries = {int(g): e for g, e in log}
    except (ValueError, TypeError):
        return None
    out: set[int] = set()
    for g in range(old + 1, new + 1):
        e = entries.get(g, None)
        if e is None:          # not logged, or logged as touching everything
            return None
        out.update(int(o) for o in e)
    return out
