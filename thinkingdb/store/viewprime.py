"""The files of a store state made ahead of its first question: the access table and one caller's view.

The first question on a store state that no earlier state's files reach — after a write the change
log does not record (a bulk ingest: more than :data:`~thinkingdb.store.changelog.MAX_LOGGED` triples
and units), on a fresh store, or when every view file is too far from its caller's mask — computes the
access table and the caller's view whole (docs/storage.md: ~4-6 s on the store of
``benchmarks/serve.py``). :func:`prime` makes the same two files at once, as that question would,
for a writer that chooses to pay for them (the choice and its measured cost: docs/storage.md,
"The first question on a state no file reaches").

>>> import tempfile, os
>>> from thinkingdb.store.sqlite import Store, Unit
>>> from thinkingdb.model import Fact
>>> with Store(os.path.join(tempfile.mkdtemp(), "kb.sqlite")) as st:
...     with st.transaction():
...         st.add_units([(Unit("pub"), 1), (Unit("sec", acl=("x",)), 2)], source="u.jsonl")
...         _ = st.add_facts([(Fact("a", "r", "b", 0.5), "u.jsonl", 3, "sec")])
...     prime(st)
'computed'
"""

from __future__ import annotations

__all__ = ["prime"]


def prime(store, caller=None, day=None) -> str:
    """Write the access table and the view file of ``caller`` (default: anonymous) on ``day``
    (default: today) for the store's current state, unless current files hold them. Returns what was
    done: ``"none"`` (no units, or the files cannot be made: no graph file), ``"everything"`` (the caller
    sees every fact: no view file), ``"current"`` (a current file holds the view) or ``"computed"``."""
    import numpy as np
    from .access import Caller, parse_date
    from .graphdelta import compose, entry_orders, open_current
    from .graphfile import store_stamp
    from .stateread import StateReader, read_access, read_changed_access
    from .viewfile import hidden_changes, load_access, open_view, save_view
    reader = StateReader(store, store_stamp(store))
    stamp = reader.stamp
    if not reader.read(lambda conn: conn.execute("SELECT 1 FROM units LIMIT 1").fetchone()):
        return "none"
    base = open_current(store.path, stamp)
    if base is None:
        return "none"
    table = load_access(store.path, stamp, lambda: reader.read(read_access),
                        lambda old: reader.read(lambda conn: read_changed_access(conn, old, stamp)))
    view = table.view(caller or Caller(), parse_date(day))
    if view.everything:
        return "everything"
    if open_view(store.path, view.fingerprint, stamp, base) is not None:
        return "current"
    hidden = [table.id_at(i) for i in np.flatnonzero(~np.asarray(view.mask)).tolist()]
    changes = reader.read(lambda conn: hidden_changes(conn, hidden))
    if not changes:
        save_view(store.path, view.fingerprint, stamp, base, None, None, None, view.mask)
    else:
        header, arrays = compose(base, base.overlay, changes)
        save_view(store.path, view.fingerprint, stamp, base, header, arrays, entry_orders(base.n_symbols, arrays),
                  view.mask)
    return "computed"
