"""Saving and loading a :class:`~lexical.index.BM25Index` as a numpy ``.npz`` archive.

No pickle: every member is a plain numeric array, read with ``allow_pickle=False``.

========  ======================  ===============================================
member    dtype, shape            content
========  ======================  ===============================================
record    uint8 (bytes)           UTF-8 JSON: format name and version, scoring
                                  parameters, tokenizer params, fields, role keys,
                                  counts
indptr    int64 (terms + 1,)      CSR row starts of each term's postings
slots     int32 (postings,)       document number of each posting
tf        uint16/32 (P, fields)   term frequency of each posting per field
dl        uint32 (docs, fields)   field lengths of each document
role      int32 (docs,)           role code (index into record["role_keys"]) or -1
ids       uint8 + ids_off int64   doc ids, UTF-8, concatenated, with offsets
terms     uint8 + terms_off       vocabulary (term id order), likewise
========  ======================  ===============================================

Loading refuses (``IndexFormatError``) another format version, a tokenizer with
other settings, other scoring parameters when some are expected, or a corrupt
file; the message says to rebuild the index.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from .errors import IndexFormatError, LexicalError
from .segment import Segment
from .strings import StrArray
from .tokenizer import Tokenizer
from .values import BM25Params

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "save_index", "load_index"]

FORMAT_NAME = "thinkingdb-lexical-bm25f"
FORMAT_VERSION = 2
_REBUILD = "rebuild the index from its documents (BM25Index.rebuild) and save it again"


def _pack(strings: list[str]) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    encoded = [s.encode("utf-8") for s in strings]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), offsets


def _unpack(blob: npt.NDArray[np.uint8], offsets: npt.NDArray[np.int64]) -> list[str]:
    data = blob.tobytes()
    bounds = offsets.tolist()
    return [data[a:b].decode("utf-8") for a, b in zip(bounds[:-1], bounds[1:])]


def save_index(index: Any, target: str | Path | IO[bytes]) -> None:
    """Compact ``index`` and write it to ``target`` (a path or a binary file)."""
    if not index._is_compact():
        index._compact()
    n = index._n_live
    ids, ids_off = _pack(index._ids.tolist())  # compact: no removed slot is left
    terms, terms_off = _pack(index._terms.tolist())
    role_keys = sorted(index._role_codes, key=index._role_codes.__getitem__)
    record = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "params": index.params.record(),
        "tokenizer": index.tokenizer.params(),
        "fields": list(index._fields),
        "role_keys": role_keys,
        "docs": n,
        "terms": len(index._terms),
        "postings": index._main.n_postings,
    }
    arrays = {
        "record": np.frombuffer(json.dumps(record, sort_keys=True).encode("utf-8"), dtype=np.uint8),
        "indptr": index._main.indptr,
        "slots": index._main.slots,
        "tf": index._main.tf,
        "dl": index._dl[:n],
        "role": index._role[:n],
        "ids": ids,
        "ids_off": ids_off,
        "terms": terms,
        "terms_off": terms_off,
    }
    if isinstance(target, (str, Path)):
        with open(target, "wb") as fh:
            np.savez(fh, **arrays)
    else:
        np.savez(target, **arrays)


def _head(source: str | bytes | IO[bytes]) -> bytes:
    """The first bytes of ``source`` (a path or a binary file object, left where it was)."""
    if isinstance(source, (str, bytes)):
        with open(source, "rb") as fh:
            return fh.read(4)
    start = source.tell()
    head = source.read(4)
    source.seek(start)
    return head


def _read(source: str | os.PathLike[str] | IO[bytes]) -> dict[str, Any]:
    if isinstance(source, (str, bytes, os.PathLike)):
        source = os.fspath(source)
    where = os.fsdecode(source) if isinstance(source, (str, bytes)) else "the file object"
    try:
        head = _head(source)
        if head[:2] == b"PK":
            with np.load(source, allow_pickle=False) as data:
                return {name: data[name] for name in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise IndexFormatError(f"cannot read a saved lexical index from {where} ({exc}); {_REBUILD}") from exc
    # np.load would take it for a pickle and say so, which misleads
    raise IndexFormatError(f"not a saved lexical index: {where} is not a numpy .npz archive; {_REBUILD}")


def load_index(
    cls: type,
    source: str | Path | IO[bytes],
    tokenizer: Tokenizer | None,
    expect: BM25Params | None,
) -> Any:
    """Read an index written by :func:`save_index` into a new ``cls`` (the :class:`~lexical.index.BM25Index`
    class, passed in: that module imports this one); see the module docstring for what is refused."""
    data = _read(source)
    try:
        record = json.loads(bytes(data["record"]).decode("utf-8"))
    except (KeyError, ValueError) as exc:
        raise IndexFormatError(f"saved lexical index has no readable params record; {_REBUILD}") from exc
    if not isinstance(record, dict) or record.get("format") != FORMAT_NAME:
        raise IndexFormatError(f"not a saved lexical index (format {record.get('format')!r}); {_REBUILD}")
    if record.get("format_version") != FORMAT_VERSION:
        raise IndexFormatError(
            f"saved lexical index has format version {record.get('format_version')!r}, "
            f"this library reads version {FORMAT_VERSION}; {_REBUILD}"
        )
    try:
        params = BM25Params(**record["params"])
        saved_tok = Tokenizer.from_params(record["tokenizer"])
    except (KeyError, TypeError, LexicalError) as exc:
        raise IndexFormatError(f"saved lexical index has invalid parameters ({exc}); {_REBUILD}") from exc
    if tokenizer is not None and tokenizer.params() != saved_tok.params():
        raise IndexFormatError(
            f"saved lexical index was built with tokenizer {saved_tok.params()!r}, "
            f"not {tokenizer.params()!r}; {_REBUILD}"
        )
    if expect is not None and expect != params:
        raise IndexFormatError(
            f"saved lexical index has parameters {params.record()!r}, expected {expect.record()!r}; {_REBUILD}"
        )
    index = cls(params=params, tokenizer=tokenizer if tokenizer is not None else saved_tok)
    try:
        _fill(index, data, record)
    except (KeyError, ValueError, IndexError, TypeError, UnicodeDecodeError) as exc:
        raise IndexFormatError(f"saved lexical index is inconsistent ({exc}); {_REBUILD}") from exc
    return index


def _fill(index: Any, data: dict[str, Any], record: dict[str, Any]) -> None:
    nf = len(index._fields)
    if record["fields"] != list(index._fields):
        raise ValueError("field list does not match the field weights")
    ids = _unpack(data["ids"], data["ids_off"])
    terms = _unpack(data["terms"], data["terms_off"])
    indptr, slots, tf = data["indptr"], data["slots"], data["tf"]
    dl, role = data["dl"], data["role"]
    n, v = len(ids), len(terms)
    checks = [
        n == record["docs"] and v == record["terms"],
        indptr.shape == (v + 1,) and indptr.dtype == np.int64,
        int(indptr[0]) == 0 and int(indptr[-1]) == len(slots) and bool(np.all(np.diff(indptr) >= 0)),
        slots.dtype == np.int32 and (len(slots) == 0 or (int(slots.min()) >= 0 and int(slots.max()) < n)),
        tf.shape == (len(slots), nf) and tf.dtype in (np.uint16, np.uint32),
        dl.shape == (n, nf) and role.shape == (n,),
        len(set(ids)) == n and len(set(terms)) == v,
        len(role) == 0 or int(role.max()) < len(record["role_keys"]),
    ]
    if not all(checks):
        raise ValueError(f"array shapes or ranges do not match the record (check {checks.index(False)})")
    index._grow(n)
    index._ids = StrArray(ids)
    index._slot_of = {doc_id: i for i, doc_id in enumerate(ids)}
    index._terms = StrArray(terms)
    index._vocab = {t: i for i, t in enumerate(terms)}
    index._role_codes = {key: i for i, key in enumerate(record["role_keys"])}
    index._alive[:n] = True
    index._dl[:n] = dl
    index._role[:n] = role
    index._n_live = n
    dl64 = dl.astype(np.int64)
    index._total_len = dl64.sum(axis=0).tolist()
    index._nonempty = (dl64 > 0).sum(axis=0).tolist()
    index._main = Segment(indptr, slots, tf)
    index._main_end = n
    # every term's df and impacts are computed when a search first reads the term (PostingStore._refresh,
    # the same floats as a bulk build's _refresh_all): a loaded index costs a search what its terms read
    index._df = np.zeros(v, dtype=np.int64)
    index._stamp = np.full(v, -1, dtype=np.int64)
