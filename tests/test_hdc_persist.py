"""hdc persistence: save/load round trip, refusal of other settings, corrupt files, no pickle."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest

import hdc.persist as persist
from hdc import HDCError, HDCIndex, HDCParams, IndexFormatError

P = HDCParams(dim=512, seed=42)
UNITS = {
    "α-unit": {"role": "policy", "topic": "Laptop returns", "claim": "Damaged refurbished laptops qualify for replacement"},
    "b": {"topic": "Shipping", "claim": "Orders ship within two days", "acts": ["track"]},
    "c": {"role": "fact", "claim": "Phones have a warranty"},
}
QUERIES = ["laptop returns", "ship orders", "warranty", "track parcel"]


def upper_tokenizer(text: str) -> list[str]:
    return text.upper().split()


@pytest.fixture
def index() -> HDCIndex:
    idx = HDCIndex(P)
    for uid, fields in UNITS.items():
        idx.add(uid, fields)
    idx.remove("b")
    idx.add("b", UNITS["b"])  # a removed-then-added unit must survive the trip as well
    return idx


def assert_same(a: HDCIndex, b: HDCIndex) -> None:
    assert a.params == b.params and sorted(a) == sorted(b)
    for q in QUERIES:
        for role in (None, "policy"):
            assert a.search(q, k=10, role=role) == b.search(q, k=10, role=role)


def test_round_trip_through_a_path(index, tmp_path):
    path = tmp_path / "hdc.npz"
    index.save(path)
    loaded = HDCIndex.load(path)
    assert_same(index, loaded)
    loaded.add("d", {"topic": "new after load"})  # still a working index
    assert loaded.search("new after load", k=1)[0][0] == "d"


def test_round_trip_through_a_binary_file_and_a_str_path(index, tmp_path):
    buf = io.BytesIO()
    index.save(buf)
    buf.seek(0)
    assert_same(index, HDCIndex.load(buf))
    index.save(str(tmp_path / "no-suffix"))
    assert (tmp_path / "no-suffix").exists()  # the name is kept as given, no ".npz" appended
    assert_same(index, HDCIndex.load(str(tmp_path / "no-suffix")))


def test_empty_index_round_trip(tmp_path):
    HDCIndex(P).save(tmp_path / "e")
    loaded = HDCIndex.load(tmp_path / "e")
    assert len(loaded) == 0 and loaded.search("x") == []


def test_saved_file_holds_no_pickle_and_a_json_record(index, tmp_path):
    index.save(tmp_path / "f")
    with np.load(tmp_path / "f", allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    record = json.loads(arrays["record"].tobytes())
    assert record["format_version"] == persist.FORMAT_VERSION
    assert record["params"] == P.to_dict() and record["count"] == 3
    assert arrays["topic"].dtype == np.dtype("<u8") and arrays["topic"].shape == (3, P.words)
    assert all(a.dtype != object for a in arrays.values())


def test_other_params_are_refused(index, tmp_path):
    index.save(tmp_path / "f")
    with pytest.raises(IndexFormatError, match=r"seed: saved 42, expected .*rebuild the index"):
        HDCIndex.load(tmp_path / "f", params=HDCParams(dim=512))
    with pytest.raises(IndexFormatError, match=r"dim: saved 512, expected 4096"):
        HDCIndex.load(tmp_path / "f", params=HDCParams(seed=42))
    assert HDCIndex.load(tmp_path / "f", params=P).params == P


def test_another_tokenizer_is_refused(index, tmp_path):
    index.save(tmp_path / "f")
    with pytest.raises(IndexFormatError, match="tokenizer .*rebuild the index"):
        HDCIndex.load(tmp_path / "f", tokenizer=upper_tokenizer)
    other = HDCIndex(P, upper_tokenizer)
    other.save(tmp_path / "g")
    assert HDCIndex.load(tmp_path / "g", tokenizer=upper_tokenizer).tokenizer is upper_tokenizer
    with pytest.raises(IndexFormatError):
        HDCIndex.load(tmp_path / "g")


def test_lexical_tokenizer_settings_are_told_apart(tmp_path):
    import lexical

    idx = HDCIndex(P, lexical.Tokenizer())
    idx.add("a", {"topic": "running shoes"})
    idx.save(tmp_path / "f")
    assert HDCIndex.load(tmp_path / "f", tokenizer=lexical.Tokenizer()).search("run shoe")[0][0] == "a"
    with pytest.raises(IndexFormatError):
        HDCIndex.load(tmp_path / "f", tokenizer=lexical.Tokenizer(stem=False))


def rewrite(path, change_record=None, drop=None, replace=None):
    with np.load(path, allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    if change_record:
        record = json.loads(arrays["record"].tobytes())
        change_record(record)
        arrays["record"] = np.frombuffer(json.dumps(record).encode(), dtype=np.uint8)
    for name in drop or ():
        del arrays[name]
    arrays.update(replace or {})
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


CORRUPTIONS = [
    ({"change_record": lambda r: r.update(format_version=99)}, "format_version 99, this library reads 1; rebuild"),
    ({"change_record": lambda r: r.update(encoder_version=0)}, "encoder_version 0"),
    ({"change_record": lambda r: r.update(format="something-else")}, "wrong format name"),
    ({"change_record": lambda r: r["params"].update(dim=100)}, "saved HDC params are invalid"),
    ({"change_record": lambda r: r["params"].update(dim=1024)}, "field 'topic' has the wrong shape"),
    ({"change_record": lambda r: r.update(count=5)}, "id table is corrupt"),
    ({"change_record": lambda r: r.update(roles=["policy"])}, "role codes are corrupt"),
    ({"drop": ["claim"]}, "missing claim"),
    ({"replace": {"topic": np.zeros((3, 8), dtype=np.float64)}}, "member 'topic' has dtype float64"),
    ({"replace": {"record": np.frombuffer(b"{not json", dtype=np.uint8)}}, "not valid JSON"),
]


@pytest.mark.parametrize(("change", "message"), CORRUPTIONS)
def test_corrupt_or_mismatched_files_are_refused(index, tmp_path, change, message):
    path = tmp_path / "f"
    index.save(path)
    rewrite(path, **change)
    with pytest.raises(IndexFormatError, match=message):
        HDCIndex.load(path)


@pytest.mark.parametrize("content", [b"", b"not a zip at all", b"PK\x03\x04broken"])
def test_garbage_is_refused_as_a_format_error(tmp_path, content):
    (tmp_path / "g").write_bytes(content)
    with pytest.raises(IndexFormatError, match="rebuild the index") as info:
        HDCIndex.load(tmp_path / "g")
    assert isinstance(info.value, HDCError) and isinstance(info.value, ValueError)


def test_a_pickled_member_is_refused(index, tmp_path):
    path = tmp_path / "f"
    index.save(path)
    rewrite(path, replace={"ids_utf8": np.array([{"a": 1}], dtype=object)})  # np.savez pickles this
    with zipfile.ZipFile(path) as zf:
        assert "ids_utf8.npy" in zf.namelist()
    with pytest.raises(IndexFormatError, match="not a readable HDC index file"):
        HDCIndex.load(path)


def test_save_to_a_path_replaces_the_old_file_whole(index, tmp_path):
    path = tmp_path / "f"
    HDCIndex(P).save(path)
    index.save(path)
    assert len(HDCIndex.load(path)) == 3
    assert [p.name for p in tmp_path.iterdir()] == ["f"]  # no temporary file left behind
