"""A caller's view file derived from the view file of an earlier store state and the change log.

After a small write the first question of a caller who may not see some units used to recompute the
view's differences whole (one SQL statement over every hidden unit's provenance, then composing
~318,000 entries: ~2.9 s on the store of ``benchmarks/serve.py``). :func:`derive` instead takes a view
file of an earlier state that is provably the same caller's view, and recomputes only the triples the
writes since could have changed (:mod:`thinkingdb.store.changelog`):

1. a view file beside the store whose base graph file is the current one (stamp and data checksum),
   written at an earlier store state ``S0``;
2. the change log covers every write from ``S0`` to now (:func:`~thinkingdb.store.changelog.chain`);
3. the caller's mask at ``S0`` — the current mask with the changed units put back as they were at
   ``S0`` (the log holds their earlier access columns), each judged by the same vectorized rule — has
   the file's fingerprint: the file is this caller's view at ``S0``;
4. every triple the writes touched, or that a changed unit asserts now, gets its confidence in the
   view now, read from the store (the rule of :func:`~thinkingdb.store.viewfile.hidden_changes`);
   any other triple has the same provenance, facts row and visible units as at ``S0``, so the same
   confidence, which the old file holds;
5. those confidences are composed over the old file's delta (:func:`~thinkingdb.store.graphdelta.compose`).

Anything else — no such file, a gap in the log, a file of another caller or of another base, a file
failing its checks (:func:`~thinkingdb.store.viewfile.open_view`) — returns None: the caller recomputes.
"""

from __future__ import annotations

import json

from .graphfile import VIEW_FILES, Stamp, graph_path, map_container

__all__ = ["derive", "view_confidences"]


def derive(store_path: str, stamp: Stamp, base, current, access, mask, caller, day, read):
    """``(header, arrays)`` of the differences, over ``base``, of the view ``mask`` (over
    ``access.ids``) of ``caller`` on ``day`` at store state ``stamp``, derived from the view file of an
    earlier state; None when none can be used. ``current``: the overlay of the store's write delta
    (None: the base is the store); ``read(fn)``: ``fn(conn)`` in a read transaction at ``stamp``."""
    from . import viewfile
    from .changelog import chain
    from .graphdelta import compose
    from .overlay import Overlay
    for old, fingerprint in _candidates(store_path, stamp, base):
        changes = read(lambda conn: chain(conn, old, stamp))
        if changes is None or _old_fingerprint(access, mask, changes.units, caller, day) != fingerprint:
            continue
        got = viewfile.open_view(store_path, fingerprint, old, base)
        if got is None:
            continue
        # a view that hid nothing at S0 was the full graph then, which differs from the full graph now
        # only in triples the log names
        prior = current if got is viewfile.SAME else Overlay(base, *got)
        ids = sorted(changes.units)

        def confidences(conn):
            triples = set(changes.triples)
            if ids:
                triples.update(conn.execute(
                    "SELECT DISTINCT f.subject, f.relation, f.object FROM provenance p JOIN facts f ON f.id = p.fact "
                    "WHERE p.unit_id IN (SELECT value FROM json_each(?))", (json.dumps(ids),)))
            return view_confidences(conn, sorted(triples), access, mask)
        return compose(base, prior, read(confidences))
    return None


def _candidates(store_path: str, stamp: Stamp, base) -> list[tuple[Stamp, str]]:
    """``(stamp, fingerprint)`` of each view file over ``base`` written at an earlier store state, the
    latest first (only its header is read here)."""
    from .viewfile import VIEW_FORMAT
    want_base = [base.stamp.generation, base.stamp.token, base.stamp.max_fact]
    out = []
    g = graph_path(store_path)
    for i in range(VIEW_FILES):
        got = map_container(f"{g}.view{i}", b"TDBVIEW\x00")
        if got is None:
            continue
        header = got[0]
        try:
            old = Stamp(*header["stamp"])
            if header.get("view_format") == VIEW_FORMAT and header.get("base") == want_base and \
                    header.get("base_crc") == base.header.get("data_crc") and old.generation < stamp.generation and \
                    int(header["fingerprint"], 16) % VIEW_FILES == i:
                out.append((old, header["fingerprint"]))
        except (KeyError, TypeError, ValueError):
            continue
    out.sort(key=lambda c: -c[0].generation)
    return out


def _old_fingerprint(access, mask, units: dict, caller, day) -> str | None:
    """The fingerprint of ``caller``'s mask on ``day`` at the earlier state: the current mask without
    the units ``units`` names, with those that existed then put back as they were (``units``: id ->
    earlier access columns, None: it did not exist)."""
    import numpy as np
    from .access import AccessTable, _fingerprint
    mask = np.asarray(mask, dtype=bool)
    drop = [i for u in units if (i := access.find(u)) >= 0]
    then = sorted((u, *cols) for u, cols in units.items() if cols is not None)
    keep = np.ones(len(mask), dtype=bool)
    keep[drop] = False
    dropped = np.sort(np.asarray(drop, dtype=np.int64))
    # each earlier unit's position among the kept ones: its place among the ids less the dropped before it
    at = [(p := access.position(row[0])) - int(np.searchsorted(dropped, p)) for row in then]
    seen = AccessTable.from_rows(then).view(caller, day).mask if then else np.zeros(0, dtype=bool)
    old = np.insert(mask[keep], np.asarray(at, dtype=np.int64), np.asarray(seen, dtype=bool))
    if not len(old):
        return None
    return _fingerprint(np.packbits(old).tobytes(), len(old))


def view_confidences(conn, triples: list[tuple], access, mask) -> list[tuple]:
    """``(s, r, o, confidence or None)`` of each of ``triples`` in the view ``mask``: absent when no
    fact holds it; its ``facts`` confidence when no hidden unit asserts it; else its best assertion
    outside units or by a visible unit (None: none) — the rule of
    :func:`~thinkingdb.store.viewfile.hidden_changes`, one triple at a time."""
    row = access.find
    facts: dict[tuple, list] = {}
    for s, r, o, fid, fc, uid, pc in conn.execute(
            "WITH t(s, r, o) AS (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), "
            "json_extract(value, '$[2]') FROM json_each(?)) "
            "SELECT t.s, t.r, t.o, f.id, f.confidence, p.unit_id, p.confidence FROM t "
            "LEFT JOIN facts f ON f.subject = t.s AND f.relation = t.r AND f.object = t.o "
            "LEFT JOIN provenance p ON p.fact = f.id", (json.dumps(triples),)):
        got = facts.setdefault((s, r, o), [fc, False, None])
        if fid is None or pc is None:
            continue
        if uid is None:
            visible = True
        else:
            i = row(uid)
            if i < 0:          # a unit the store does not hold: neither hides nor shows the fact
                continue
            visible = bool(mask[i])
            if not visible:
                got[1] = True
        if visible and (got[2] is None or pc > got[2]):
            got[2] = pc
    out = []
    for t in triples:
        fc, hidden, best = facts.get(tuple(t), (None, False, None))
        out.append((*t, (best if hidden else fc) if fc is not None else None))
    return out
