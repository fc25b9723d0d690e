"""thinkingdb.store.columns: the arrays of a mapped container read as memoryviews (no numpy) agree
with the numpy arrays of the same bytes; a container with another dtype or a bad layout is refused."""

from __future__ import annotations

import json
import struct
import zlib

import numpy as np
import pytest

from thinkingdb.store import graphfile as gf
from thinkingdb.store.columns import MappedArrays, itemsize

ARRAYS = {"i8": np.array([0, -3, 2**40], dtype=np.int64), "i4": np.array([7, -1], dtype=np.int32),
          "f8": np.array([0.25, 1.0, -0.0]), "u1": np.frombuffer("Ünï".encode(), dtype=np.uint8),
          "be": np.array([1, 256, -2], dtype=">i8"), "empty": np.zeros(0, dtype=np.int64)}


@pytest.fixture
def container(tmp_path):
    path = str(tmp_path / "c.bin")
    gf.write_container(path, b"TESTMAGC", {"format": gf.FORMAT_VERSION}, dict(ARRAYS))
    return path


def test_views_read_the_same_values_as_numpy(container):
    header, arrays, _ = gf.map_container(container, b"TESTMAGC")
    assert isinstance(arrays, MappedArrays) and sorted(arrays) == sorted(ARRAYS)
    for name, want in ARRAYS.items():
        view = arrays.view(name)
        assert view.tolist() == want.tolist() == arrays[name].tolist(), name
        assert len(view) == len(want)
        # a little-endian array is a memoryview of the file; the big-endian one is read by numpy
        assert isinstance(view, memoryview) == (name != "be"), name
    v = arrays.view("i8")
    assert v[-1] == 2**40 and v[1:].tolist() == [-3, 2**40] and type(v[0]) is int
    assert arrays.view("u1").tobytes().decode() == "Ünï"


@pytest.mark.parametrize("change", [{}, {"dtype": "<U4"}, {"dtype": "object"}, {"count": 1.5}, {"count": -1},
                                    {"offset": -64}, {"count": 10**9}])
def test_a_bad_layout_is_refused(container, change):
    """The header edited by hand (checksum recomputed); ``{}``: the same header, read as before."""
    data = bytearray(open(container, "rb").read())
    layout_of_prefix = struct.Struct(gf._PREFIX)
    prefix = layout_of_prefix.unpack_from(data, 0)
    hlen = prefix[3]
    header = json.loads(data[gf._PREFIX_SIZE:gf._PREFIX_SIZE + hlen])
    layout = header["arrays"]["i8"]
    layout[0] = change.get("dtype", layout[0])
    layout[1] = change.get("count", layout[1])
    layout[2] = change.get("offset", layout[2])
    h = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode()
    assert len(h) <= hlen + 64   # the header grows by a few bytes at most; the data starts aligned
    start = gf._align(gf._PREFIX_SIZE + hlen)
    if gf._align(gf._PREFIX_SIZE + len(h)) != start:
        pytest.skip("the edited header would move the data")
    data[:gf._PREFIX_SIZE + len(h)] = layout_of_prefix.pack(b"TESTMAGC", gf.FORMAT_VERSION, zlib.crc32(h), len(h)) + h
    if len(h) < hlen:
        data[gf._PREFIX_SIZE + len(h):gf._PREFIX_SIZE + hlen] = b" " * (hlen - len(h))
    with open(container, "wb") as fh:
        fh.write(bytes(data))
    got = gf.map_container(container, b"TESTMAGC")
    assert (got is None) == bool(change)
    if got is not None:
        assert got[1].view("i8").tolist() == ARRAYS["i8"].tolist()


def test_itemsize_by_hand():
    assert [itemsize(d) for d in ("<i8", "<i4", "|u1", "<f8", ">i8", "|b1")] == [8, 4, 1, 8, 8, 1]
    assert [itemsize(d) for d in ("<U4", "O", "<i3", "<c16", 8, None)] == [None] * 6
