"""The symbol matcher's tables of a store state, persisted beside the store: ``kb.sqlite.matcher``.

The closure lane of ``kb-thinkingdb`` finds the symbols a query names with a
:class:`~thinkingdb.retrieval.expansion.SymbolMatcher`: every labelled symbol's words (its key's, and
its label's split at camelCase), stemmed, looked up as word sequences. Making it stems every key and
label of the store — ~2.5 s for the 128,878 labels of the store of ``benchmarks/serve.py`` — in every
process that searches. Here the stemmed forms of **every** label row are written once per store state
(the container of the graph file: magic ``TDBMATCH``, header CRC, 64-byte aligned arrays, trailer, a
CRC of every array byte) and read back as a :class:`MatcherTable`, which finds one word sequence (or
one key's written forms) by binary search without decoding the others.

The file depends on the labels alone, not on any caller: which of its keys a caller may match is
decided when a key is found (the caller's graph must know the symbol: ``retrieval/symboltable.py``).
A file is used only at the store stamp it names, with the tokenizer record it was made with, and only
when its data CRC and its structure check out. After a write it is patched (:func:`derive`): the
writes' origins (:mod:`~thinkingdb.store.writelog`, their lineage checked by the change log,
:func:`~thinkingdb.store.changelog.chain`) name every label row that can have changed — a key's label
is the row of its smallest origin, so it changes only when a row of a touched origin is added or the
row it came from is removed — and only those keys are stemmed again. A gap in either log, or any other
doubt, recomputes the file whole. Writing is best effort (a read-only folder still searches).

Arrays (``K`` keys sorted by UTF-8 bytes, ``F`` forms, ``E`` distinct stem sequences): ``key_off``
and ``key_blob`` (the keys), ``key_origin`` (the origin of each key's label), ``form_ptr`` (``K + 1``:
each key's run of forms), ``form_off``/``form_blob`` and ``stem_off``/``stem_blob`` (a form's words
as written and their stems, joined by NUL: no word holds one), ``ent_off``/``ent_blob`` (the stem
sequences, sorted), ``ent_ptr`` (``E + 1``) delimiting each one's run of ``ent_key`` (key numbers,
ascending).

>>> import tempfile, os
>>> from thinkingdb.store.graphfile import Stamp
>>> path = os.path.join(tempfile.mkdtemp(), "kb.sqlite")
>>> rec = {"open_ssl": (2, [(("open", "ssl"), ("open", "ssl")), (("openssl",), ("openssl",))])}
>>> save(path, Stamp(3, "t", 9), {"v": 1}, rec)
True
>>> t = load(path, Stamp(3, "t", 9), {"v": 1})
>>> t.keys_of(("open", "ssl")), t.forms("open_ssl"), t.keys_of(("ssl",)), load(path, Stamp(3, "t", 9), {"v": 2})
(['open_ssl'], [('open', 'ssl'), ('openssl',)], None, None)
"""

from __future__ import annotations

from .graphfile import Stamp, earlier_stamp, map_container, write_container

__all__ = ["MATCHER_MAGIC", "matcher_path", "MatcherTable", "encode", "table", "save", "load", "derive",
           "read_labels", "read_changed_labels"]

MATCHER_MAGIC = b"TDBMATCH"
_SEP = "\x00"
_NAMES = ("key_off", "key_blob", "key_origin", "form_ptr", "form_off", "form_blob", "stem_off", "stem_blob",
          "ent_off", "ent_blob", "ent_ptr", "ent_key")


def matcher_path(store_path: str) -> str:
    """The matcher file of a store.

    >>> matcher_path("kb.sqlite")
    'kb.sqlite.matcher'
    """
    return f"{store_path}.matcher"


def encode(records: dict) -> dict[bytes, tuple[int, list[tuple[bytes, bytes]]]]:
    """``key -> (origin, [(words, stems), ...])`` (tuples of str) as the bytes the file holds."""
    return {k.encode("utf-8"): (o, [(_SEP.join(w).encode("utf-8"), _SEP.join(s).encode("utf-8")) for w, s in forms])
            for k, (o, forms) in records.items()}


def _pack(items: list[str]):
    """``(offsets, bytes)`` of strings packed back to back in UTF-8 (one encode when all are ASCII)."""
    import numpy as np
    joined = "".join(items)
    if joined.isascii():
        blob, lens = joined.encode("ascii"), map(len, items)
    else:
        enc = [x.encode("utf-8") for x in items]
        blob, lens = b"".join(enc), map(len, enc)
    off = np.zeros(len(items) + 1, dtype=np.int64)
    if items:
        np.cumsum(np.fromiter(lens, dtype=np.int64, count=len(items)), out=off[1:])
    return off, np.frombuffer(blob, dtype=np.uint8)


def _arrays(records: dict[str, tuple[int, list]]) -> dict:
    """The file's arrays of ``key -> (origin, [(words, stems), ...])`` (tuples of str)."""
    import numpy as np
    keys = sorted(records)      # code point order: the order of the UTF-8 bytes
    origins, counts, words, stems = [], [], [], []
    ents: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        origin, forms = records[k]
        origins.append(origin)
        counts.append(len(forms))
        for ws, ss in forms:
            words.append(_SEP.join(ws))
            st = _SEP.join(ss)
            stems.append(st)
            got = ents.get(st)
            if got is None:
                ents[st] = [i]
            elif got[-1] != i:      # a key whose two forms stem alike is listed once
                got.append(i)
    ent_keys = sorted(ents)
    out = dict(zip(("key_off", "key_blob"), _pack(keys)))
    out["key_origin"] = np.array(origins, dtype=np.int64)
    out["form_ptr"] = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum(np.array(counts, dtype=np.int64), out=out["form_ptr"][1:])
    out.update(zip(("form_off", "form_blob"), _pack(words)))
    out.update(zip(("stem_off", "stem_blob"), _pack(stems)))
    out.update(zip(("ent_off", "ent_blob"), _pack(ent_keys)))
    out["ent_ptr"] = np.zeros(len(ent_keys) + 1, dtype=np.int64)
    lists = [ents[e] for e in ent_keys]
    np.cumsum(np.fromiter(map(len, lists), dtype=np.int64, count=len(lists)), out=out["ent_ptr"][1:])
    out["ent_key"] = np.fromiter((i for got in lists for i in got), dtype=np.int64)
    return out


class MatcherTable:
    """The tables of a matcher file (or of arrays made in memory): :meth:`keys_of` a stem sequence,
    :meth:`forms` of a key, each found by binary search; :meth:`records` decodes everything."""

    def __init__(self, arrays) -> None:
        from .columns import MappedArrays
        if isinstance(arrays, MappedArrays):   # read in place: ints and bytes without numpy scalars
            self._a = {n: arrays.view(n) for n in _NAMES}
        else:
            self._a = {n: memoryview(arrays[n]) for n in _NAMES}
        self._src = arrays
        self._nk, self._ne = len(self._a["key_off"]) - 1, len(self._a["ent_off"]) - 1

    @property
    def arrays(self) -> dict:
        """The arrays by name, as numpy arrays (over the file's bytes, not copied)."""
        return {n: self._src[n] for n in _NAMES}

    def key_bytes(self, i: int) -> bytes:
        return self._str("key_off", "key_blob", i)

    def stem_bytes(self, f: int) -> bytes:
        return self._str("stem_off", "stem_blob", f)

    def entry_bytes(self, j: int) -> bytes:
        return self._str("ent_off", "ent_blob", j)

    def _str(self, off: str, blob: str, i: int) -> bytes:
        o = self._a[off]
        return self._a[blob][o[i]:o[i + 1]].tobytes()

    def _search(self, off: str, blob: str, n: int, want: bytes) -> int:
        import bisect
        lo = bisect.bisect_left(range(n), want, key=lambda i: self._str(off, blob, i))
        return lo if lo < n and self._str(off, blob, lo) == want else -1

    def keys_of(self, stems: tuple[str, ...]) -> list[str] | None:
        """The keys one of whose forms stems to ``stems`` (ascending), or None."""
        j = self._search("ent_off", "ent_blob", self._ne, _SEP.join(stems).encode("utf-8", "surrogatepass"))
        if j < 0:
            return None
        ptr, ek = self._a["ent_ptr"], self._a["ent_key"]
        return [self._str("key_off", "key_blob", ek[m]).decode("utf-8") for m in range(ptr[j], ptr[j + 1])]

    def forms(self, key: str) -> list[tuple[str, ...]] | None:
        """The word tuples ``key`` is matched on as written (its key's, its label's), or None."""
        i = self._search("key_off", "key_blob", self._nk, key.encode("utf-8", "surrogatepass"))
        if i < 0:
            return None
        fp = self._a["form_ptr"]
        return [tuple(self._str("form_off", "form_blob", f).decode("utf-8").split(_SEP))
                for f in range(fp[i], fp[i + 1])]

    def entries(self):
        """Every ``(stem tuple, keys)`` in order (decodes everything)."""
        o, b = self._a["ent_off"].tolist(), self._a["ent_blob"].tobytes()
        ko, kb = self._a["key_off"].tolist(), self._a["key_blob"].tobytes()
        ptr, ek = self._a["ent_ptr"].tolist(), self._a["ent_key"].tolist()
        for j in range(self._ne):
            yield (tuple(b[o[j]:o[j + 1]].decode("utf-8").split(_SEP)),
                   [kb[ko[m]:ko[m + 1]].decode("utf-8") for m in ek[ptr[j]:ptr[j + 1]]])

    def records(self) -> dict[bytes, tuple[int, list[tuple[bytes, bytes]]]]:
        """Every key's ``(origin, [(words, stems), ...])`` as the bytes :func:`encode` gives."""
        a = self._a
        ko, kb, org = a["key_off"].tolist(), a["key_blob"].tobytes(), a["key_origin"].tolist()
        fp, fo, fb = a["form_ptr"].tolist(), a["form_off"].tolist(), a["form_blob"].tobytes()
        so, sb = a["stem_off"].tolist(), a["stem_blob"].tobytes()
        return {kb[ko[i]:ko[i + 1]]: (org[i], [(fb[fo[f]:fo[f + 1]], sb[so[f]:so[f + 1]]) for f in range(fp[i], fp[i + 1])])
                for i in range(self._nk)}

    def keys_from(self, origins) -> list[str]:
        """The keys whose label came from one of ``origins``."""
        import numpy as np
        org = np.frombuffer(self._a["key_origin"], dtype=np.int64) if self._nk else np.zeros(0, np.int64)
        return [self._str("key_off", "key_blob", int(i)).decode("utf-8")
                for i in np.flatnonzero(np.isin(org, np.fromiter(origins, dtype=np.int64)))]

    def __len__(self) -> int:
        return self._nk


def save(store_path: str, stamp: Stamp, params: dict, tables) -> bool:
    """Write ``tables`` — records (``key -> (origin, [(words, stems), ...])``, tuples of str) or a
    :class:`MatcherTable` — for the store
    at ``stamp``, made under ``params`` (the tokenizer's record); False when it cannot be written."""
    arrays = tables.arrays if isinstance(tables, MatcherTable) else _arrays(tables)
    try:
        write_container(matcher_path(store_path), MATCHER_MAGIC,
                        {"format": 1, "matcher_format": 1, "stamp": [stamp.generation, stamp.token, stamp.max_fact],
                         "params": params, "keys": len(arrays["key_origin"]), "entries": len(arrays["ent_ptr"]) - 1},
                        arrays)
    except OSError:
        return False
    return True


def table(records: dict) -> MatcherTable:
    """A :class:`MatcherTable` over ``records`` (as :func:`save` takes them) made in memory."""
    return MatcherTable(_arrays(records))


def _read(store_path: str, params: dict, stamp: Stamp | None = None):
    """``(stamp as a list, MatcherTable)`` of the file when it passes every check (and names
    ``stamp``, when given: checked before the data), else None."""
    import numpy as np
    from .viewfile import _data_ok
    got = map_container(matcher_path(store_path), MATCHER_MAGIC)
    if got is None:
        return None
    header, arrays, _ = got
    try:
        if stamp is not None and header.get("stamp") != [stamp.generation, stamp.token, stamp.max_fact]:
            return None
        if header.get("matcher_format") != 1 or header.get("params") != params or not _data_ok(header, arrays):
            return None
        a = {k: arrays[k] for k in _NAMES}
        if any(a[k].dtype != np.int64 for k in _NAMES if not k.endswith("blob")) or \
                any(a[k].dtype != np.uint8 for k in _NAMES if k.endswith("blob")):
            return None
        nk, nf, ne = len(a["key_origin"]), len(a["form_off"]) - 1, len(a["ent_off"]) - 1
        if nk != header["keys"] or ne != header["entries"] or len(a["key_off"]) != nk + 1 or \
                len(a["form_ptr"]) != nk + 1 or len(a["stem_off"]) != nf + 1 or len(a["ent_ptr"]) != ne + 1:
            return None
        for off, blob in (("key_off", "key_blob"), ("form_off", "form_blob"), ("stem_off", "stem_blob"),
                          ("ent_off", "ent_blob")):
            o = a[off]
            if int(o[0]) != 0 or int(o[-1]) != len(a[blob]) or np.any(np.diff(o) < 0):
                return None
        fp, ep, ek = a["form_ptr"], a["ent_ptr"], a["ent_key"]
        if int(fp[0]) != 0 or int(fp[-1]) != nf or np.any(np.diff(fp) < 0) or int(ep[0]) != 0 or \
                int(ep[-1]) != len(ek) or np.any(np.diff(ep) <= 0) or (len(ek) and (int(ek.min()) < 0 or int(ek.max()) >= nk)):
            return None
        return header.get("stamp"), MatcherTable(arrays)
    except (KeyError, TypeError, ValueError):
        return None


def load(store_path: str, stamp: Stamp, params: dict) -> MatcherTable | None:
    """The tables of the store at ``stamp`` from its file; None when the file is not of that state
    and those params (missing, stale, foreign, torn or corrupt)."""
    got = _read(store_path, params, stamp)
    return None if got is None else got[1]


def read_labels(conn) -> dict[str, tuple[str, int]]:
    """Every key's ``(label, origin)``: the label :meth:`Store.labels <thinkingdb.store.sqlite.Store.labels>`
    gives, and the origin it comes from."""
    return {k: (lab, o) for k, lab, o in conn.execute("SELECT key, label, min(origin) FROM symbols GROUP BY key")}


def read_changed_labels(conn, old: Stamp, new: Stamp, table: MatcherTable) -> dict[str, tuple[str, int] | None] | None:
    """Every key whose label may differ between ``old`` (the state of ``table``) and ``new`` (the
    state ``conn`` sees), with its ``(label, origin)`` at ``new`` (None: no label now); None when the
    logs do not cover the writes in between."""
    from .changelog import chain
    from .writelog import touched
    if chain(conn, old, new) is None:          # the writes lead from exactly that state
        return None
    origins = touched(conn, old.generation, new.generation)
    if origins is None:
        return None
    keys = set(table.keys_from(origins)) if origins else set()
    args = sorted(origins)
    for i in range(0, len(args), 500):
        part = args[i:i + 500]
        keys.update(k for (k,) in conn.execute(f"SELECT key FROM symbols WHERE origin IN ({','.join('?' * len(part))})",
                                               part))
    out: dict[str, tuple[str, int] | None] = dict.fromkeys(keys)
    ks = sorted(keys)
    for i in range(0, len(ks), 500):
        part = ks[i:i + 500]
        # as Store.labels: the label of the smallest origin (through sources: primary-key lookups)
        out.update((k, (lab, o)) for k, lab, o in conn.execute(
            "SELECT s.key, s.label, min(s.origin) FROM sources o CROSS JOIN symbols s ON s.origin = o.id "
            f"WHERE s.key IN ({','.join('?' * len(part))}) GROUP BY s.key", part))
    return out


def derive(store_path: str, stamp: Stamp, params: dict, read_changes, forms_of) -> MatcherTable | None:
    """The tables at ``stamp`` (in memory) from the file of an earlier state: ``read_changes(that
    stamp, its table)`` gives :func:`read_changed_labels` (None: a gap), and ``forms_of(key, label)``
    a key's ``(words, stems)`` tuples; the changed keys are spliced into the old arrays
    (:func:`~thinkingdb.store.matcherpatch.patch`). None when there is no such file or the logs do
    not cover the writes since."""
    from .matcherpatch import patch
    got = _read(store_path, params)
    old = None if got is None else earlier_stamp(got[0], stamp)
    if old is None:
        return None
    changed = read_changes(old, got[1])
    if changed is None:
        return None
    records = {key.encode("utf-8"): None if now is None else encode({key: (now[1], forms_of(key, now[0]))})[
        key.encode("utf-8")] for key, now in changed.items()}
    return MatcherTable(patch(got[1], records))
