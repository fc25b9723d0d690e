"""The topic index of a store state, persisted beside the store: ``kb.sqlite.topics``.

The search pipeline credits the units whose topic names a symbol (``Lanes.topic_index``): symbol key →
the ids of the units about it. Making it takes the ``symbol_key`` of every unit's topic — ~2 s for the
101,400 units of the store of ``benchmarks/serve.py`` — in every process that searches. Here it is
written once per store state (the same container as the graph file: magic ``TDBTOPIC``, header CRC,
64-byte aligned arrays, trailer, a CRC of every array byte) and read back as a :class:`TopicMap`, which
finds one key by binary search over the sorted keys without decoding the others.

A file is used only at the store stamp it names, and only when its data CRC and its structure check
out; after a write it is patched through the change log (:func:`derive`: the units the log names are
read again by id), and in every other case computed again. Writing is best effort (a read-only
folder still searches, from the index in memory).

>>> import tempfile, os
>>> from thinkingdb.store.graphfile import Stamp
>>> path = os.path.join(tempfile.mkdtemp(), "kb.sqlite")
>>> save(path, Stamp(3, "t", 9), {"b_sym": ["u2"], "a_sym": ["u1", "u3"]})
True
>>> got = load(path, Stamp(3, "t", 9))
>>> got.get("a_sym"), got.get("c_sym"), "b_sym" in got, len(got), load(path, Stamp(4, "t", 9)) is None
(['u1', 'u3'], None, True, 2, True)
"""

from __future__ import annotations

from .graphfile import Stamp, earlier_stamp, map_container, write_container

__all__ = ["TOPIC_MAGIC", "topic_path", "TopicMap", "save", "load", "derive"]

TOPIC_MAGIC = b"TDBTOPIC"
_NAMES = ("key_off", "key_blob", "ptr", "uid_off", "uid_blob")


def topic_path(store_path: str) -> str:
    """The topic index file of a store.

    >>> topic_path("kb.sqlite")
    'kb.sqlite.topics'
    """
    return f"{store_path}.topics"


def _pack(strings: list[str]):
    import numpy as np
    enc = [s.encode("utf-8") for s in strings]
    off = np.zeros(len(enc) + 1, dtype=np.int64)
    if enc:
        np.cumsum([len(b) for b in enc], out=off[1:])
    return off, np.frombuffer(b"".join(enc), dtype=np.uint8)


class TopicMap:
    """Symbol key → the ids of the units whose topic names it, read from the arrays of a topic file:
    ``get`` searches one key; iterating decodes every key."""

    def __init__(self, key_off, key_blob, ptr, uid_off, uid_blob) -> None:
        self._ko, self._kb = key_off, key_blob
        self._ptr, self._uo, self._ub = ptr, uid_off, uid_blob
        self._n = len(key_off) - 1
        self._all: dict[str, list[str]] | None = None

    def _key(self, i: int) -> bytes:
        return self._kb[int(self._ko[i]):int(self._ko[i + 1])].tobytes()

    def _find(self, key: str) -> int:
        import bisect
        want = key.encode("utf-8", "surrogatepass")
        lo = bisect.bisect_left(range(self._n), want, key=self._key)
        return lo if lo < self._n and self._key(lo) == want else -1

    def _ids(self, i: int) -> list[str]:
        a, b = int(self._ptr[i]), int(self._ptr[i + 1])
        o, text = self._uo[a:b + 1].tolist(), self._ub[int(self._uo[a]):int(self._uo[b])].tobytes()
        base = o[0]
        return [text[o[j] - base:o[j + 1] - base].decode("utf-8") for j in range(b - a)]

    def get(self, key, default=None):
        if self._all is not None:
            return self._all.get(key, default)
        if not isinstance(key, str):
            return default
        i = self._find(key)
        return default if i < 0 else self._ids(i)

    def __getitem__(self, key):
        got = self.get(key)
        if got is None:
            raise KeyError(key)
        return got

    def __contains__(self, key) -> bool:
        return self.get(key) is not None

    def to_dict(self) -> dict[str, list[str]]:
        """Every key and its unit ids (decoded once)."""
        if self._all is None:
            o, text = self._ko.tolist(), self._kb.tobytes()
            self._all = {text[o[i]:o[i + 1]].decode("utf-8"): self._ids(i) for i in range(self._n)}
        return self._all

    def keys(self):
        return self.to_dict().keys()

    def items(self):
        return self.to_dict().items()

    def values(self):
        return self.to_dict().values()

    def __iter__(self):
        return iter(self.to_dict())

    def __len__(self) -> int:
        return self._n

    def __eq__(self, other) -> bool:
        return isinstance(other, (dict, TopicMap)) and self.to_dict() == dict(other.items())

    __hash__ = None   # type: ignore[assignment]


def save(store_path: str, stamp: Stamp, topics: dict[str, list[str]]) -> bool:
    """Write the topic index of the store at ``stamp``; False when it cannot be written. Every key
    has at least one unit id (a key without is never made: :func:`derive` drops a key whose last unit
    went, and the index made whole only adds keys with a unit; a file holding one is refused on read).

    >>> save("kb.sqlite", Stamp(1, "t", 1), {"gone": []})
    Traceback (most recent call last):
    ...
    ValueError: topic key 'gone' has no unit ids
    """
    import numpy as np
    keys = sorted(topics)
    for k in keys:
        if not topics[k]:
            raise ValueError(f"topic key {k!r} has no unit ids")
    ids = [u for k in keys for u in topics[k]]
    ptr = np.zeros(len(keys) + 1, dtype=np.int64)
    if keys:
        np.cumsum([len(topics[k]) for k in keys], out=ptr[1:])
    key_off, key_blob = _pack(keys)
    uid_off, uid_blob = _pack(ids)
    try:
        write_container(topic_path(store_path), TOPIC_MAGIC,
                        {"format": 1, "topic_format": 1, "stamp": [stamp.generation, stamp.token, stamp.max_fact],
                         "keys": len(keys), "units": len(ids)},
                        {"key_off": key_off, "key_blob": key_blob, "ptr": ptr, "uid_off": uid_off, "uid_blob": uid_blob})
    except OSError:
        return False
    return True


def _read(store_path: str):
    """``(stamp as a list, TopicMap)`` of the file when it passes every check, else None."""
    import numpy as np
    from .viewfile import _data_ok
    got = map_container(topic_path(store_path), TOPIC_MAGIC)
    if got is None:
        return None
    header, arrays, _ = got
    try:
        if header.get("topic_format") != 1 or not _data_ok(header, arrays):
            return None
        ko, kb, ptr, uo, ub = (arrays[k] for k in _NAMES)
        k, n = int(header["keys"]), int(header["units"])
        if len(ko) != k + 1 or len(ptr) != k + 1 or len(uo) != n + 1 or int(ptr[0]) != 0 or int(ptr[-1]) != n or \
                int(ko[0]) != 0 or int(ko[-1]) != len(kb) or int(uo[0]) != 0 or int(uo[-1]) != len(ub) or \
                np.any(np.diff(ko) < 0) or np.any(np.diff(ptr) <= 0) or np.any(np.diff(uo) < 0):
            return None
        return header.get("stamp"), TopicMap(ko, kb, ptr, uo, ub)
    except (KeyError, TypeError, ValueError):
        return None


def load(store_path: str, stamp: Stamp) -> TopicMap | None:
    """The topic index of the store at ``stamp`` from its file; None when the file is not of that
    state (missing, stale, foreign, torn or corrupt)."""
    got = _read(store_path)
    if got is None or got[0] != [stamp.generation, stamp.token, stamp.max_fact]:
        return None
    return got[1]


def derive(store_path: str, stamp: Stamp, read_changes, topic_key) -> dict[str, list[str]] | None:
    """The topic index at ``stamp`` from the file of an earlier state: ``read_changes(that stamp)``
    gives ``(changed unit ids, (id, topic) of those that exist now)`` (None: a gap in the change log),
    and ``topic_key(topic)`` a topic's symbol key (None: it names none). None when there is no such
    file or the log does not cover the writes since."""
    got = _read(store_path)
    old = None if got is None else earlier_stamp(got[0], stamp)
    if old is None:
        return None
    changes = read_changes(old)
    if changes is None:
        return None
    changed, rows = changes
    drop = set(changed)
    topics = {k: [u for u in ids if u not in drop] for k, ids in got[1].to_dict().items()}
    for uid, topic in rows:
        key = topic_key(topic)
        if key is not None:
            topics.setdefault(key, []).append(uid)
    return {k: sorted(ids) for k, ids in topics.items() if ids}
