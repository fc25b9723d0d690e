"""A view's BM25 index carried from an earlier store state through the change log, instead of built
again from every unit (issue 20: the first search after a write of one fact rebuilt it, ~4.8 s on the
store of ``benchmarks/serve.py``, and read every unit to do so).

A persisted BM25 index (``lane_indexes``, see :mod:`thinkingdb.retrieval.lanes`) records the store
stamp it was built at. When the wanted record differs from a saved one only in that stamp (and so in
the generation), and the change log (:func:`thinkingdb.store.changelog.chain`) covers every write
between the two states, the index is the saved one with the *changed units* patched:

- a unit whose row no write changed has the same text and the same access columns, so it is in the
  index, with the same postings, exactly when it was (the log records every unit row a write
  inserted, replaced, updated or deleted);
- each changed unit is removed from the index and added again with its current fields when the
  caller sees it now. BM25's statistics are exact integers and its impacts a pure function of them
  (:mod:`lexical.store`), and ties are ordered by doc id, so the searches equal a rebuild's.

Nothing is trusted on faith: the saved index's documents, less the changed units, must be exactly
the view's visible units less the changed units (else the candidate is another caller's), and a gap
in the log, a foreign parameter or a corrupt blob means no carry (None): the caller rebuilds as
before. A write that changed no unit (facts only, or a retract of facts) leaves the index as it is;
it is saved again under the new stamp only when patched or when the log it leans on grows past
:data:`REKEY_AFTER` writes (saving rewrites tens of megabytes; reading a few log rows costs little).
"""

from __future__ import annotations

import io
import json
import sqlite3

__all__ = ["REKEY_AFTER", "MAX_PATCHED", "carry"]

REKEY_AFTER = 16       # writes between the saved stamp and now past which a carried index is saved again
MAX_PATCHED = 4096     # changed units past which a rebuild is as cheap as the patch


def _without(record: dict, keys: tuple[str, ...]) -> dict:
    return {k: v for k, v in record.items() if k not in keys}


_STATE_KEYS = ("generation", "stamp", "view", "units")


def carry_start(lanes, record: dict, state_keys: tuple[str, ...]) -> tuple | None:
    """``(reader, stamp, want)`` of a carry to the lanes' state (this module's and hdccarry's): the
    state's reader and stamp, and the wanted record less its state keys, as JSON reads it back; None
    when the state or the record has no stamp (nothing can be carried)."""
    reader = getattr(lanes.state, "reader", None)
    stamp = getattr(reader, "stamp", None)
    if stamp is None or "stamp" not in record:
        return None
    return reader, stamp, json.loads(json.dumps(_without(record, state_keys), sort_keys=True))


def carried_from(params: str, want: dict, stamp, state_keys: tuple[str, ...]) -> tuple | None:
    """``(record, stamp)`` of a saved index's params text when it may be carried to ``stamp``: the same
    record but for its state keys (``want``: :func:`carry_start`'s), saved at an earlier generation; None
    otherwise (another parameter, a later or equal state, a record without a readable stamp)."""
    from ..store.graphfile import Stamp
    try:
        p = json.loads(params)
        old = Stamp(*p["stamp"])
    except (ValueError, TypeError, KeyError):
        return None
    if _without(p, state_keys) != want or old.generation >= stamp.generation:
        return None
    return p, old


def carry(lanes, view, name: str, record: dict, fields):
    """``(index, save)``: the BM25 index of ``view`` at the lanes' state carried from a saved one of
    an earlier state, and whether to save it under ``record``; None when none can be (rebuild).

    ``record`` is the wanted params record (with ``stamp``); ``name`` the slot it is saved in;
    ``fields(unit)`` the fields a unit is indexed with.
    """
    start = carry_start(lanes, record, _STATE_KEYS)
    if start is None:
        return None
    reader, stamp, want = start
    from ..store.changelog import chain
    try:
        rows = reader.read(lambda conn: conn.execute(
            "SELECT name, params FROM lane_indexes WHERE name = 'bm25' OR name LIKE 'bm25/view/%'").fetchall())
    except sqlite3.OperationalError:   # no table yet
        return None
    candidates = []
    for slot, params in rows:
        got = carried_from(params, want, stamp, _STATE_KEYS)
        if got is None:
            continue
        p, old = got
        # the caller's own slot first: a write that changed no unit keeps the view's fingerprint
        candidates.append((slot != name, p.get("view") != record["view"], slot, p, old))
    if not candidates:
        return None
    visible = None
    for _, _, slot, p, old in sorted(candidates, key=lambda c: c[:3]):
        changes = reader.read(lambda conn: chain(conn, old, stamp))
        if changes is None or len(changes.units) > MAX_PATCHED:
            continue
        changed = set(changes.units)
        if not changed and p.get("view") != record["view"]:
            continue     # same units, same visible set: another fingerprint is another caller's
        if visible is None:
            visible = set(view.visible_ids(lanes.access.ids))
        if not changed and p.get("units") != len(visible):
            continue
        index = _load(lanes, slot, p)
        if index is None:
            continue
        have = set(index)
        if have - changed != visible - changed:
            continue
        _patch(lanes, index, changed, have, visible, fields)
        return index, bool(changed) or stamp.generation - old.generation > REKEY_AFTER
    return None


def _load(lanes, slot: str, params: dict):
    from lexical import BM25Index
    return load_saved(lanes, slot, params, lambda blob: BM25Index.load(blob, tokenizer=lanes.tokenizer))


def load_saved(lanes, slot: str, params: dict, load):
    """``load(blob)`` of the index saved in ``slot`` if it still has ``params`` (read again with its blob,
    as a binary file object); None when it does not, or when the blob is corrupt or gone."""
    from ..store.stateread import StaleRead
    try:
        saved = lanes.state.reader.read(lambda conn: conn.execute(
            "SELECT params, data FROM lane_indexes WHERE name = ?", (slot,)).fetchone())
        if saved is None or json.loads(saved[0]) != params:
            return None
        return load(io.BytesIO(saved[1]))
    except StaleRead:
        raise
    except Exception:  # noqa: BLE001 - a corrupt or vanished index is rebuilt, never trusted
        return None


def _patch(lanes, index, changed: set[str], have: set[str], visible: set[str], fields) -> None:
    """Remove the changed units from ``index`` and add those visible now, with their current fields."""
    for uid in sorted(changed & have):
        index.remove(uid)
    by_id = lanes.by_id
    for uid in sorted(changed & visible):
        index.add(uid, fields(by_id[uid]))
