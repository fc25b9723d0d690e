"""The arrays of a memory-mapped container file (:func:`thinkingdb.store.graphfile.map_container`).

A cold question reads a few elements of a few arrays: a binary search in the symbol offsets, one
row of one relation. :class:`MappedArrays` serves those reads as ``memoryview`` casts of the mapped
bytes (:meth:`MappedArrays.view`), so such a question never imports numpy (its start-up costs more
than the answer); ``arrays[name]`` is the same bytes as a numpy array, made on first use, for the
code that works on whole arrays. Both read the file in place; neither copies it.

>>> import mmap
>>> buf = bytearray(24)
>>> buf[0:8], buf[8:16] = (7).to_bytes(8, "little"), (9).to_bytes(8, "little")
>>> a = MappedArrays(buf, 0, {"x": ["<i8", 2, 0]})
>>> list(a.view("x")), a["x"].tolist(), list(a)
([7, 9], [7, 9], ['x'])
"""

from __future__ import annotations

import sys
from _collections_abc import Mapping   # = collections.abc (without the collections package)

__all__ = ["MappedArrays", "itemsize"]

# the dtypes a container may hold (numpy's ``dtype.str``) and their memoryview formats
_FORMATS = {"<i8": "q", "<u8": "Q", "<i4": "i", "<u4": "I", "<i2": "h", "<u2": "H", "|i1": "b", "|u1": "B",
            "|b1": "?", "<f8": "d", "<f4": "f"}


def itemsize(dtype: str) -> int | None:
    """The bytes per element of a dtype string a container may hold; None for any other string.

    >>> itemsize("<i4"), itemsize(">f8"), itemsize("<U3")
    (4, 8, None)
    """
    # ``[<>|][iufb][1248]`` (checked by hand: a question compiles no regex)
    ok = isinstance(dtype, str) and len(dtype) == 3 and dtype[0] in "<>|" and dtype[1] in "iufb" and dtype[2] in "1248"
    return int(dtype[2]) if ok else None


class MappedArrays(Mapping):
    """``name -> numpy array`` over ``buf`` (each made on first use) and :meth:`view`, the same bytes
    as a memoryview. ``layout``: ``name -> [dtype, count, offset]``, offsets from ``start``, already
    checked to lie inside the buffer (:func:`~thinkingdb.store.graphfile.map_container`)."""

    def __init__(self, buf, start: int, layout: dict[str, list]) -> None:
        self._buf, self._start, self._layout = buf, start, layout
        self._arrays: dict = {}
        self._views: dict = {}

    def __getitem__(self, name: str):
        arr = self._arrays.get(name)
        if arr is None:
            dtype, count, offset = self._layout[name]   # (a KeyError before numpy is loaded)
            import numpy as np   # noqa: PLC0415 (a question that only looks up never loads numpy)
            arr = self._arrays[name] = np.frombuffer(self._buf, dtype=np.dtype(dtype), count=count,
                                                     offset=self._start + offset)
        return arr

    def view(self, name: str):
        """The array as a flat ``memoryview`` (indexing gives Python numbers; slices, ``tolist`` and
        ``tobytes`` work as on the numpy array); the numpy array itself on a big-endian machine or
        for a big-endian dtype, where a cast would read the bytes wrongly."""
        got = self._views.get(name)
        if got is None:
            dtype, count, offset = self._layout[name]
            fmt = _FORMATS.get(dtype) if sys.byteorder == "little" else None
            if fmt is None:
                got = self[name]
            else:
                lo = self._start + offset
                got = memoryview(self._buf)[lo:lo + count * itemsize(dtype)].cast(fmt)
            self._views[name] = got
        return got

    def __iter__(self):
        return iter(self._layout)

    def __len__(self) -> int:
        return len(self._layout)

    def __contains__(self, name) -> bool:
        return name in self._layout
