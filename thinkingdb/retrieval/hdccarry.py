"""The HDC index carried from an earlier store state through the change log, instead of encoded again
from every unit (issue 20: after a write of one unit the next search that escalated to HDC rebuilt it,
~33 s and ~1 GB for the whole process on the 100,000 units of ``benchmarks/serve.py``, where the
process that loads a saved one takes ~1.5 s).

The saved HDC index (``lane_indexes`` row ``hdc``, see :mod:`thinkingdb.retrieval.lanes`) records the
store stamp it was built at. When the wanted record differs from the saved one only in that stamp (and
so in the generation and unit count), and the change log (:func:`thinkingdb.store.changelog.chain`)
covers every write between the two states, the index is the saved one with the *changed units*
removed and those that exist now added again with their current fields — the same searches as a
rebuild, because a unit's HDC vectors and its score depend on that unit alone:

- its vectors are a function of its own fields (:func:`~thinkingdb.retrieval.lanes._unit_fields`: its
  row's role, topic, claim, condition, procedure, acts, note — nothing of other units, facts or
  labels), the tokenizer (``lexical.Tokenizer``: "the result of a word depends only on the word") and
  :class:`hdc.HDCParams`: every component vector is a keyed hash of the symbol alone
  (``hdc/vectors.py``: "only on (symbol, dim, seed, namespace): no global state, no registration
  order"), and a majority's tie-break is drawn from the wrapping sum of that unit's own components
  (``hdc/tally.py``, ``hdc/bulk.py``); the ``lru_cache`` memos and the bulk build's token cache hold
  pure functions of a token. The rebuild encodes with ``add_many`` and the patch too; ``add_many``
  gives the vectors of one-by-one adds bit for bit (``tests/test_hdc_bulk.py``), and both record the
  tokenizer's settings and the params, checked here and by ``HDCIndex.load``;
- what a patch leaves differently from a rebuild is not read by a search: the slot order (``remove``
  moves the last row into the gap) and the role table (codes in the order roles were first met;
  a removed unit's role stays). ``HDCIndex.search`` scores every row on its own (a Hamming distance
  per row, then elementwise ``field_scores`` and weighted sums: no sum across rows, no corpus
  statistic), scores a role from its name, maps ``allowed`` ids to slots on each call, and ranks by
  score then id, keeping every tie at the cut (``np.partition`` then ``>= kth``);
- a unit whose row no write changed has the same fields, so its vectors are the saved ones (the log
  records every unit row a write inserted, replaced, updated or deleted).

Nothing is trusted on faith: the saved index's units, less the changed ones, must be exactly the
store's units less the changed ones, and a gap in the log, a foreign parameter or tokenizer, or a
corrupt blob means no carry (None): the caller rebuilds as before. A write that changed no unit
(facts only) leaves the index as it is. Saving is not free here (the 100,000-unit index is a 158 MB
blob: 2.1 s to save, where loading it and patching one unit take ~1.0-1.4 s), so unlike the BM25
index a carried one is saved again under the new stamp only when it leans on more than
:data:`REKEY_AFTER` logged writes or more than :data:`SAVE_AFTER` changed units; until then each new
process patches those units again (1.6 ms for one unit, ~0.23 ms a unit in a batch: <= 0.1 s) —
the change log keeps 64 writes, so the saved stamp does not fall out of it while it is used this way.
"""

from __future__ import annotations

import sqlite3

from .lexcarry import carried_from, carry_start, load_saved

__all__ = ["REKEY_AFTER", "SAVE_AFTER", "MAX_PATCHED", "carry"]

REKEY_AFTER = 16       # writes between the saved stamp and now past which a carried index is saved again
SAVE_AFTER = 256       # changed units past which a carried index is saved again (each process re-encodes them)
MAX_PATCHED = 4096     # changed units past which a rebuild is as cheap as the patch

_STATE_KEYS = ("generation", "stamp", "units")


def carry(lanes, record: dict, fields):
    """``(index, save)``: the HDC index of all units at the lanes' state, carried from the saved one of
    an earlier state, and whether to save it under ``record``; None when it cannot be (rebuild).

    ``record`` is the wanted params record (with ``stamp``); ``fields(unit)`` the fields a unit is
    encoded with.
    """
    start = carry_start(lanes, record, _STATE_KEYS)
    if start is None:
        return None
    reader, stamp, want = start
    from ..store.changelog import chain
    try:
        row = reader.read(lambda conn: conn.execute(
            "SELECT params FROM lane_indexes WHERE name = 'hdc'").fetchone())
    except sqlite3.OperationalError:   # no table yet
        return None
    got = None if row is None else carried_from(row[0], want, stamp, _STATE_KEYS)
    if got is None:
        return None
    params, old = got
    changes = reader.read(lambda conn: chain(conn, old, stamp))
    if changes is None or len(changes.units) > MAX_PATCHED:
        return None
    index = _load(lanes, params)
    if index is None:
        return None
    changed = set(changes.units)
    have = set(index)
    units = set(lanes.access.ids)
    if have - changed != units - changed:
        return None
    _patch(lanes, index, changed, have, units, fields)
    save = len(changed) > SAVE_AFTER or stamp.generation - old.generation > REKEY_AFTER
    return index, save


def _load(lanes, params: dict):
    from hdc import HDCIndex, HDCParams
    return load_saved(lanes, "hdc", params, lambda blob: HDCIndex.load(
        blob, tokenizer=lanes.tokenizer, params=HDCParams.from_dict(params["params"])))


def _patch(lanes, index, changed: set[str], have: set[str], units: set[str], fields) -> None:
    """Remove the changed units from ``index`` and add those that exist now, with their current fields."""
    for uid in sorted(changed & have):
        index.remove(uid)
    by_id = lanes.by_id
    index.add_many([(uid, fields(by_id[uid])) for uid in sorted(changed & units)])
