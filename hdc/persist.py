"""The saved form of an HDC index: one uncompressed numpy ``.npz`` archive, no pickle.

Members (all little-endian):

==============  ================  ===========================================================
name            dtype, shape      content
==============  ================  ===========================================================
``record``      uint8 (bytes,)    UTF-8 JSON: format name and version, encoder version,
                                  params (dim, seed, n-gram settings, weights), tokenizer name,
                                  role table, unit count
``ids_utf8``    uint8 (bytes,)    the unit ids, UTF-8, concatenated
``ids_offsets`` int64 (n + 1,)    id ``i`` is ``ids_utf8[offsets[i]:offsets[i + 1]]``
``topic`` ...   uint64 (n, w)     packed field vectors (``w = dim / 64``) of topic, claim, acts
``has_topic``   bool (n,)         whether the unit has that field
``role_code``   int32 (n,)        index into the role table, -1 for no role
==============  ================  ===========================================================

Reading checks the format name, :data:`FORMAT_VERSION` and :data:`ENCODER_VERSION`; anything
unexpected raises :class:`hdc.IndexFormatError` with a message that says to rebuild the index.
"""

from __future__ import annotations

import json
import os
import zipfile
from typing import IO, Any, Sequence, Union

import numpy as np
import numpy.typing as npt

from .errors import IndexFormatError

__all__ = ["FORMAT_VERSION", "ENCODER_VERSION", "FORMAT_NAME", "PathOrFile", "write_index_file", "read_index_file"]

FORMAT_NAME = "thinkingdb-hdc-index"
#: Layout of the archive; bumped when members change.
FORMAT_VERSION = 1
#: Meaning of the vectors (hash expansion, n-gram scheme, tie-break); bumped when encoders change.
ENCODER_VERSION = 1

PathOrFile = Union[str, "os.PathLike[str]", IO[bytes]]


def _little(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    return np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<") if a.dtype.itemsize > 1 else a.dtype)


def write_index_file(
    file: PathOrFile, record: dict[str, Any], ids: Sequence[str], arrays: dict[str, npt.NDArray[Any]]
) -> None:
    """Write ``record`` (JSON), ``ids`` and ``arrays`` to a path (atomically) or a binary file."""
    full = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "encoder_version": ENCODER_VERSION,
        "byte_order": "little",
        "count": len(ids),
        **record,
    }
    encoded = [u.encode("utf-8") for u in ids]
    offsets = np.zeros(len(ids) + 1, dtype="<i8")
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    members = {
        "record": np.frombuffer(json.dumps(full, sort_keys=True).encode("utf-8"), dtype=np.uint8),
        "ids_utf8": np.frombuffer(b"".join(encoded), dtype=np.uint8),
        "ids_offsets": offsets,
        **{name: _little(a) for name, a in arrays.items()},
    }
    if hasattr(file, "write"):
        np.savez(file, **members)  # type: ignore[arg-type]
        return
    path = os.fspath(file)  # type: ignore[arg-type]
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, **members)
        os.replace(tmp, path)  # a crash mid-write leaves the old file intact
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def read_index_file(
    file: PathOrFile, fields: Sequence[str]
) -> tuple[dict[str, Any], list[str], dict[str, npt.NDArray[Any]]]:
    """Read and check an archive written by :func:`write_index_file`; return (record, ids, arrays)."""
    wanted = ["record", "ids_utf8", "ids_offsets", "role_code", *fields, *(f"has_{f}" for f in fields)]
    try:
        with np.load(file, allow_pickle=False) as npz:  # type: ignore[arg-type]
            missing = [m for m in wanted if m not in npz.files]
            if missing:
                raise IndexFormatError(f"not an HDC index file (missing {', '.join(missing)}); rebuild the index")
            arrays = {m: npz[m] for m in wanted}
    except IndexFormatError:
        raise
    except (zipfile.BadZipFile, ValueError, EOFError, KeyError) as exc:
        raise IndexFormatError(f"not a readable HDC index file ({exc}); rebuild the index") from exc
    try:
        record = json.loads(arrays.pop("record").tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise IndexFormatError(f"HDC index record is not valid JSON ({exc}); rebuild the index") from exc
    if not isinstance(record, dict) or record.get("format") != FORMAT_NAME:
        raise IndexFormatError("not an HDC index file (wrong format name); rebuild the index")
    for key, current in (("format_version", FORMAT_VERSION), ("encoder_version", ENCODER_VERSION)):
        if record.get(key) != current:
            raise IndexFormatError(
                f"HDC index has {key} {record.get(key)!r}, this library reads {current}; rebuild the index"
            )
    blob, offsets = arrays.pop("ids_utf8"), arrays.pop("ids_offsets")
    n = record.get("count")
    if (
        not isinstance(n, int)
        or blob.dtype != np.uint8
        or offsets.shape != (n + 1,)
        or offsets[0] != 0
        or offsets[-1] != blob.size
        or (np.diff(offsets) < 0).any()
    ):
        raise IndexFormatError("HDC index id table is corrupt; rebuild the index")
    raw = blob.tobytes()
    try:
        ids = [raw[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n)]
    except UnicodeDecodeError as exc:
        raise IndexFormatError("HDC index ids are not UTF-8; rebuild the index") from exc
    if len(set(ids)) != n:
        raise IndexFormatError("HDC index holds duplicate ids; rebuild the index")
    expected = {"role_code": np.int32, **{f: np.uint64 for f in fields}, **{f"has_{f}": np.bool_ for f in fields}}
    for name, dtype in expected.items():
        if arrays[name].dtype.newbyteorder("<") != np.dtype(dtype).newbyteorder("<"):
            raise IndexFormatError(f"HDC index member {name!r} has dtype {arrays[name].dtype}; rebuild the index")
        arrays[name] = arrays[name].astype(dtype)  # native byte order
    return record, ids, arrays
