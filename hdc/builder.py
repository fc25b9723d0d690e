"""Bulk building of an :class:`hdc.HDCIndex` (the body of :meth:`HDCIndex.add_many`)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from .tokenrows import TokenCache
from .errors import FieldError

__all__ = ["add_pairs", "fork_index"]

_MATRIX_FIELDS = ("topic", "claim", "acts")


def add_pairs(index: Any, units: Iterable[tuple[str, Mapping[str, str | Sequence[str]]]], batch_size: int) -> int:
    """Encode and store ``(unit_id, fields)`` pairs in ``index`` (an :class:`hdc.HDCIndex`, typed
    loosely: the index imports this module) batch by batch; on any error put ``index`` back
    as it was (new ids dropped, replaced rows restored) and raise. Returns the number of pairs read."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    start, read, it = len(index._ids), 0, iter(units)
    n_roles = len(index._roles)  # role names first met in this call are forgotten on error
    saved: dict[int, tuple[list[npt.NDArray[np.uint64]], list[bool], int]] = {}  # replaced rows
    caches: dict[str, TokenCache] = {}  # rows of frequent tokens, for this call only
    try:
        while batch := [pair for _, pair in zip(range(batch_size), it)]:
            read += len(batch)
            last: dict[str, Mapping[str, str | Sequence[str]]] = {}
            for pair in batch:
                uid, fields = pair if isinstance(pair, tuple) and len(pair) == 2 else (None, None)
                if not isinstance(uid, str) or not isinstance(fields, Mapping):
                    raise FieldError(f"add_many takes (unit id string, fields mapping) pairs, got {pair!r:.80}")
                last[uid] = fields  # a repeated id keeps its first slot (as add does) and its last fields
            roles, got = index._encoder.encode_batch(list(last.values()), caches)
            slots = np.empty(len(last), dtype=np.intp)
            for i, uid in enumerate(last):
                slot = index._slot.get(uid)
                if slot is None:
                    index._filter_cache = None
                    slot = len(index._ids)
                    index._grow(slot + 1)
                    index._ids.append(uid)
                    index._slot[uid] = slot
                elif slot < start and slot not in saved:
                    saved[slot] = ([index._mat[f][slot].copy() for f in _MATRIX_FIELDS],
                                   [bool(index._has[f][slot]) for f in _MATRIX_FIELDS], int(index._role[slot]))
                slots[i] = slot
                index._role[slot] = index._role_code(roles[i])
            for f in _MATRIX_FIELDS:
                index._mat[f][slots], index._has[f][slots] = got[f]
    except BaseException:
        for slot, (mats, has, role) in saved.items():
            for f, m, h in zip(_MATRIX_FIELDS, mats, has):
                index._mat[f][slot], index._has[f][slot] = m, h
            index._role[slot] = role
        for uid in index._ids[start:]:
            del index._slot[uid]
        for f in _MATRIX_FIELDS:
            index._mat[f][start : len(index._ids)], index._has[f][start : len(index._ids)] = 0, False
        index._role[start : len(index._ids)] = -1
        del index._ids[start:]
        for name in index._roles[n_roles:]:
            del index._role_code_of[name]
        del index._roles[n_roles:]
        index._filter_cache = None
        raise
    return read


def fork_index(index: Any) -> Any:
    """An independent copy of an :class:`~hdc.index.HDCIndex` to change while the original keeps
    serving searches: the vectors are copied, not encoded again.

    >>> from hdc import HDCIndex, HDCParams
    >>> idx = HDCIndex(HDCParams(dim=1024)); idx.add("a", {"topic": "laptop returns"})
    >>> new = idx.fork(); new.remove("a"); len(idx), len(new)
    (1, 0)
    """
    twin = type(index).__new__(type(index))
    twin.__dict__.update(index.__dict__)
    twin._ids, twin._slot = list(index._ids), dict(index._slot)
    twin._roles, twin._role_code_of = list(index._roles), dict(index._role_code_of)
    twin._mat = {f: m.copy() for f, m in index._mat.items()}
    twin._has = {f: h.copy() for f, h in index._has.items()}
    twin._role = index._role.copy()
    twin._filter_cache = None
    return twin
