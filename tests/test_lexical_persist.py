"""Save/load round trips and refusals of the npz index format."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lexical import FORMAT_VERSION, BM25Index, BM25Params, IndexFormatError, Tokenizer

from strategies_lexical import WORDS, field_docs

WEIGHTS = {"topic": 1.5, "claim": 1.0, "role": 0.5, "condition": 0.6}
QUERIES = [*WORDS, "alpha bravo", "echo echo golf"]


def saved(idx: BM25Index) -> io.BytesIO:
    buf = io.BytesIO()
    idx.save(buf)
    buf.seek(0)
    return buf


def rewrite(buf: io.BytesIO, change) -> io.BytesIO:
    """Copy an archive, letting ``change(name, array)`` replace members."""
    with np.load(buf, allow_pickle=False) as data:
        arrays = {name: change(name, data[name]) for name in data.files}
    out = io.BytesIO()
    np.savez(out, **arrays)
    out.seek(0)
    return out


def edit_record(buf: io.BytesIO, edit) -> io.BytesIO:
    def change(name, arr):
        if name != "record":
            return arr
        record = json.loads(arr.tobytes())
        edit(record)
        return np.frombuffer(json.dumps(record).encode(), dtype=np.uint8)

    return rewrite(buf, change)


@given(st.lists(field_docs, min_size=1, max_size=8), st.lists(st.integers(0, 7), max_size=3))
def test_round_trip_keeps_every_score(fields: list[dict], removed: list[int]) -> None:
    idx = BM25Index(field_weights=WEIGHTS, tokenizer=Tokenizer(stem=False))
    idx.rebuild((f"d{i}", f) for i, f in enumerate(fields))
    idx.add("extra", {"topic": "alpha", "role": "fact"})
    for i in removed:
        if f"d{i}" in idx:
            idx.remove(f"d{i}")
    before = [idx.search(q, k=20, boost_role="fact") for q in QUERIES]
    stats = idx.stats()
    loaded = BM25Index.load(saved(idx))
    assert loaded.stats() == stats and sorted(loaded) == sorted(idx)
    assert [loaded.search(q, k=20, boost_role="fact") for q in QUERIES] == before
    assert loaded.params == idx.params and loaded.tokenizer == idx.tokenizer


def test_path_round_trip_and_no_pickle(tmp_path: Path) -> None:
    idx = BM25Index()
    idx.rebuild([("é/1", "Ünïcode ids survive"), ("b", "plain words")])
    path = tmp_path / "lexical.npz"
    idx.save(path)
    with np.load(path, allow_pickle=False) as data:
        assert all(data[name].dtype != object for name in data.files)
        record = json.loads(data["record"].tobytes())
    assert record["format_version"] == FORMAT_VERSION
    assert record["params"] == {"k1": 1.2, "b": 0.75, "role_boost": 1.3, "field_weights": dict(sorted(BM25Params().weights.items()))}
    assert record["tokenizer"] == Tokenizer().params()
    loaded = BM25Index.load(path)
    assert [h.doc_id for h in loaded.search("ÜNÏCODE")] == ["é/1"]  # accents survive, case folds
    # a loaded index keeps working incrementally
    loaded.add("c", "more plain words")
    assert [h.doc_id for h in loaded.search("plain")][0] in {"b", "c"} and len(loaded) == 3


def test_any_path_like_loads(tmp_path: Path) -> None:
    import pathlib

    idx = BM25Index()
    idx.rebuild([("a", "red fox")])
    path = tmp_path / "i.npz"
    idx.save(path)

    class PathLike:
        def __fspath__(self) -> str:
            return str(path)

    for source in (str(path), path, pathlib.PurePosixPath(path), PathLike(), str(path).encode()):
        assert BM25Index.load(source).search("fox") == idx.search("fox")
    with pytest.raises(IndexFormatError, match=f"from {tmp_path / 'missing.npz'}"):
        BM25Index.load(pathlib.PurePosixPath(tmp_path / "missing.npz"))


def test_empty_index_round_trip() -> None:
    loaded = BM25Index.load(saved(BM25Index()))
    assert len(loaded) == 0 and loaded.search("anything") == []


REFUSALS = [
    ("format version", lambda b: edit_record(b, lambda r: r.update(format_version=FORMAT_VERSION + 1)), "format version"),
    ("format name", lambda b: edit_record(b, lambda r: r.update(format="other")), "not a saved lexical index"),
    ("bad k1", lambda b: edit_record(b, lambda r: r["params"].update(k1=float("nan"))), "invalid parameters"),
    ("tokenizer version", lambda b: edit_record(b, lambda r: r["tokenizer"].update(tokenizer_version=99)), "invalid parameters"),
    ("doc count", lambda b: edit_record(b, lambda r: r.update(docs=99)), "inconsistent"),
    ("slots out of range", lambda b: rewrite(b, lambda n, a: a + 50 if n == "slots" else a), "inconsistent"),
    ("missing member", lambda b: rewrite(b, lambda n, a: np.zeros(0) if n == "tf" else a), "inconsistent"),
    ("not a zip", lambda b: io.BytesIO(b"garbage bytes"), "is not a numpy .npz archive"),
    ("empty file", lambda b: io.BytesIO(b""), "is not a numpy .npz archive"),
    ("truncated zip", lambda b: io.BytesIO(b.getvalue()[:40]), "cannot read a saved lexical index"),
]


@pytest.mark.parametrize(("name", "corrupt", "message"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals_say_rebuild(name: str, corrupt, message: str) -> None:
    idx = BM25Index()
    idx.rebuild([("a", "red fox"), ("b", "blue fox")])
    with pytest.raises(IndexFormatError) as info:
        BM25Index.load(corrupt(saved(idx)))
    assert message in str(info.value) and "rebuild" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_mismatched_tokenizer_or_params_refused() -> None:
    idx = BM25Index()
    idx.rebuild([("a", "red fox")])
    buf = saved(idx)
    with pytest.raises(IndexFormatError, match="tokenizer"):
        BM25Index.load(buf, tokenizer=Tokenizer(stem=False))
    buf.seek(0)
    with pytest.raises(IndexFormatError, match="expected"):
        BM25Index.load(buf, expect=BM25Params(k1=2.0))
    buf.seek(0)
    assert len(BM25Index.load(buf, tokenizer=Tokenizer(), expect=BM25Params())) == 1


def test_pickled_member_refused(tmp_path: Path) -> None:
    path = tmp_path / "evil.npz"
    np.savez(path, record=np.array([{"x": 1}], dtype=object))
    with pytest.raises(IndexFormatError):
        BM25Index.load(path)
    assert zipfile.is_zipfile(path)
