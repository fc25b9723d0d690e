"""The persistent fact graph: a memory-mapped file beside the SQLite store (``kb.sqlite.graph``).

It holds what every question needs first and what used to be rebuilt from SQLite in every process:
the symbols and relations, interned as ints **in sorted key order** (so an id is also its canonical
rank), and the asserted facts indexed by subject and by object per relation, CSR style, with their
confidences. :func:`open_graph` maps the file and checks it in constant time; arrays are read only
where a question touches them, so a cold question costs what it reads, not what the store holds.

The file is a cache of the store's ``facts`` table, never a second source of truth. Its header names
the store state it was built from — the store's *generation*, its *write token* (a random value each
committed write sets) and the largest fact id — and :func:`open_graph` refuses a file whose stamp
is not the store's current one, whose format version is not :data:`FORMAT_VERSION`, or whose
structure does not check out (magic, header checksum, sizes, trailer). A refused file is rebuilt by
:func:`~thinkingdb.store.graphdelta.build_graph` (written to a temporary file and renamed over the
old one, under a lock), so a stale, foreign, truncated or torn file is never trusted. Writes keep the
file current through a delta beside it (:mod:`thinkingdb.store.graphdelta`). See docs/storage.md.

>>> import tempfile, os
>>> from thinkingdb.store import Store
>>> from thinkingdb.model import Fact
>>> path = os.path.join(tempfile.mkdtemp(), "kb.sqlite")
>>> st = Store(path)
>>> with st.transaction():
...     _ = st.add_facts([(Fact("b", "r", "c", 0.5), "x.tdb", 1, None), (Fact("a", "r", "b"), "x.tdb", 2, None)])
>>> stamp, symbols, relations, s, r, o, c = read_facts(st)
>>> write_graph(graph_path(path), stamp, symbols, relations, s, r, o, c)
>>> arrays = open_graph(graph_path(path), store_stamp(st))
>>> arrays.symbols(), arrays.relations, arrays.n_facts
(['a', 'b', 'c'], ('r',), 2)
>>> st.close()
"""

from __future__ import annotations

import fcntl
import mmap
import os
import zlib

from ..errors import StoreError
from ..values import Value
from .columns import MappedArrays, itemsize

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:
    from typing import Iterator
    import numpy as np

__all__ = ["FORMAT_VERSION", "GraphArrays", "Stamp", "graph_path", "access_path", "VIEW_FILES", "store_stamp", "open_graph", "read_facts",
           "write_graph", "fact_arrays", "write_container", "map_container", "remove_temporaries"]

FORMAT_VERSION = 1
MAGIC = b"TDBGRAPH"
END = b"TDBGEND\x00"
_PREFIX = "<8sIIQ"     # magic, format version, header crc32, header length (24 bytes)
_TRAILER = "<8sQ"      # end magic, total file length (16 bytes)
_PREFIX_SIZE, _TRAILER_SIZE = 24, 16   # (read with int.from_bytes: a cold open does not load struct)
ALIGN = 64
SUFFIX = ".graph"
_DIRECTIONS = ("out", "in")


class Stamp(Value):
    """The store state a graph file was built from: generation, write token, largest fact id."""

    _fields = _compare = ("generation", "token", "max_fact")

    def __init__(self, generation: int, token: str, max_fact: int) -> None:
        object.__setattr__(self, "generation", generation)
        object.__setattr__(self, "token", token)
        object.__setattr__(self, "max_fact", max_fact)


def earlier_stamp(fields, stamp: Stamp) -> Stamp | None:
    """The stamp a file beside the store names (its header's ``[generation, token, max_fact]``) when it
    is well formed and of a state before ``stamp`` (a file an earlier state wrote, to patch), else None.

    >>> earlier_stamp([3, "t", 9], Stamp(4, "u", 9)), earlier_stamp([4, "t", 9], Stamp(4, "t", 9))
    (Stamp(generation=3, token='t', max_fact=9), None)
    """
    if not isinstance(fields, list) or len(fields) != 3:
        return None
    try:
        old = Stamp(*fields)
    except TypeError:
        return None
    return old if old.generation < stamp.generation else None


VIEW_FILES = 8             # persisted caller views per store (store/viewfile.py: fingerprint mod VIEW_FILES)


def access_path(store_path: str) -> str:
    """The file of a store's access table (the access columns of every unit, by store state).

    >>> access_path("kb.sqlite")
    'kb.sqlite.access'
    """
    return f"{store_path}.access"


def graph_path(store_path: str) -> str:
    """The graph file of a store: the store's path plus ``.graph``.

    >>> graph_path("kb.sqlite")
    'kb.sqlite.graph'
    """
    return str(store_path) + SUFFIX


def store_stamp(store) -> Stamp:
    """The current stamp of ``store`` (three indexed reads; another process's writes are seen)."""
    conn = store.conn
    meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('generation', 'token')").fetchall())
    max_fact = conn.execute("SELECT max(id) FROM facts").fetchone()[0]
    return Stamp(int(meta.get("generation", 0)), meta.get("token", ""), int(max_fact or 0))


class GraphArrays:
    """An open graph file: the header fields and the arrays, memory-mapped and read-only.

    ``arrays`` maps names to numpy arrays (a :class:`~thinkingdb.store.columns.MappedArrays`: its
    ``view(name)`` is the same array as a memoryview, read without numpy): ``sym_off`` (int64, one more than the symbols) and
    ``sym_blob`` (uint8, UTF-8 keys back to back, sorted); per direction ``d`` in ``out``/``in``:
    ``d_rel`` (int64, relations + 1) delimiting each relation's run of ``d_keys`` (int32, the bound
    end, ascending), ``d_ptr`` (int64, keys + 1) delimiting each key's run of ``d_vals`` (int32, the
    other end, ascending) and ``d_conf`` (float64, the confidences, aligned with ``d_vals``; absent
    when every confidence is 1). ``rel_sizes`` (int64): facts per relation.
    """

    def __init__(self, path: str, header: dict, arrays: dict[str, np.ndarray], buf) -> None:
        self.path = path
        self.header = header
        self.arrays = arrays
        self._buf = buf   # the mmap (kept open while arrays view it)
        self.stamp = Stamp(header["generation"], header["token"], header["max_fact"])
        self.relations: tuple[str, ...] = tuple(header["relations"])
        self.n_facts: int = header["facts"]
        self.n_symbols: int = header["symbols"]
        self.overlay = None   # the delta read over this file (thinkingdb.store.graphdelta), if any

    def symbol_bytes(self, sid: int) -> bytes:
        off = self.arrays.view("sym_off")
        return self.arrays.view("sym_blob")[off[sid]:off[sid + 1]].tobytes()

    def symbols(self) -> list[str]:
        """Every symbol key, in id (= sorted) order."""
        off = self.arrays.view("sym_off").tolist()
        blob = self.arrays.view("sym_blob").tobytes()
        return [blob[off[i]:off[i + 1]].decode("utf-8") for i in range(self.n_symbols)]

    def verify(self) -> None:
        """Read every byte: the data checksum and every structural invariant (raises StoreError)."""
        import numpy as np
        crc = 0
        for name in sorted(self.arrays):
            crc = zlib.crc32(self.arrays[name].view(np.uint8), crc)
        if crc != self.header["data_crc"]:
            raise StoreError(f"{self.path}: graph file corrupt (data checksum mismatch)")
        _check_structure(self, deep=True)


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def write_graph(path: str, stamp: Stamp, symbols: list[str], relations: list[str], s: np.ndarray,
                r: np.ndarray, o: np.ndarray, conf: np.ndarray, arrays: dict[str, np.ndarray] | None = None) -> None:
    """Write a graph file atomically (temporary file, fsync, rename). ``symbols`` and ``relations``
    sorted; ``s``/``r``/``o`` ids into them, one row per distinct triple; ``conf`` its confidence;
    ``arrays``: :func:`fact_arrays` of the same, when already computed."""
    if arrays is None:
        arrays = fact_arrays(symbols, relations, s, r, o, conf)
    header = {"format": FORMAT_VERSION, "generation": stamp.generation, "token": stamp.token,
              "max_fact": stamp.max_fact, "facts": len(s), "symbols": len(symbols), "relations": list(relations)}
    write_container(path, MAGIC, header, arrays)


def fact_arrays(symbols: list[str], relations: list[str], s: np.ndarray, r: np.ndarray, o: np.ndarray,
                conf: np.ndarray) -> dict[str, np.ndarray]:
    """The arrays of the graph file of these facts (see :func:`write_graph`); they do not depend on
    the store's stamp, so a bulk load computes them while SQLite writes."""
    import numpy as np
    n_sym = len(symbols)
    enc = [k.encode("utf-8") for k in symbols]
    sym_off = np.zeros(n_sym + 1, dtype=np.int64)
    if n_sym:
        np.cumsum(np.fromiter((len(b) for b in enc), dtype=np.int64, count=n_sym), out=sym_off[1:])
    return graph_arrays(sym_off, np.frombuffer(b"".join(enc), dtype=np.uint8), len(relations), s, r, o, conf)


def graph_arrays(sym_off: np.ndarray, sym_blob: np.ndarray, n_rel: int, s: np.ndarray, r: np.ndarray,
                 o: np.ndarray, conf: np.ndarray) -> dict[str, np.ndarray]:
    """The arrays of a graph file (:class:`GraphArrays` names them) from the sorted symbols' UTF-8
    offsets and bytes and one row per distinct triple; :meth:`FactGraph.mapped` reads them as they are,
    from a file or from memory."""
    import numpy as np
    n = len(s)
    arrays: dict[str, np.ndarray] = {"sym_off": sym_off, "sym_blob": sym_blob}
    all_ones = bool(np.all(conf == 1.0))
    for d, (a, b) in zip(_DIRECTIONS, ((s, o), (o, s))):
        order = np.lexsort((b, a, r))
        ra, aa, bb = r[order], a[order], b[order]
        new_key = np.ones(n, dtype=bool)
        if n:
            new_key[1:] = (ra[1:] != ra[:-1]) | (aa[1:] != aa[:-1])
        starts = np.flatnonzero(new_key)
        arrays[f"{d}_keys"] = aa[starts].astype(np.int32)
        arrays[f"{d}_ptr"] = np.append(starts, n).astype(np.int64)
        arrays[f"{d}_rel"] = np.searchsorted(ra[starts], np.arange(n_rel + 1)).astype(np.int64)
        arrays[f"{d}_vals"] = bb.astype(np.int32)
        if not all_ones:
            arrays[f"{d}_conf"] = conf[order].astype(np.float64)
    arrays["rel_sizes"] = np.bincount(r, minlength=n_rel).astype(np.int64) if n else np.zeros(n_rel, np.int64)
    return arrays


def write_container(path: str, magic: bytes, header: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write ``header`` (JSON; the array layout and a data CRC are added) and ``arrays`` to ``path``
    atomically: a temporary file, fsync, rename. The layout is the graph file's (docs/storage.md)."""
    import numpy as np
    layout, offset = {}, 0
    crc = 0
    for name in sorted(arrays):
        arr = np.ascontiguousarray(arrays[name])
        arrays[name] = arr
        layout[name] = [arr.dtype.str, int(arr.size), offset]
        crc = zlib.crc32(arr.view(np.uint8), crc)
        offset = _align(offset + arr.nbytes)
    header = {**header, "arrays": layout, "data_crc": crc}
    import json
    hbytes = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    import struct
    data_start = _align(_PREFIX_SIZE + len(hbytes))
    total = data_start + offset + _TRAILER_SIZE
    tmp = f"{path}.tmp.{os.getpid()}.{os.urandom(4).hex()}"
    try:
        with open(tmp, "wb") as fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX)   # held while writing: see remove_temporaries
            except OSError:
                pass                                      # a file system without flock: the pid alone protects it
            fh.write(struct.pack(_PREFIX, magic, FORMAT_VERSION, zlib.crc32(hbytes), len(hbytes)) + hbytes)
            for name in sorted(arrays):
                fh.seek(data_start + layout[name][2])
                fh.write(arrays[name].tobytes())
            fh.seek(data_start + offset)
            fh.write(struct.pack(_TRAILER, END, total))
            fh.flush()
            os.fsync(fh.fileno())
            os.replace(tmp, path)   # still locked: a cleaner never takes the finished file before it is renamed
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def map_container(path: str, magic: bytes) -> tuple[dict, dict[str, np.ndarray], mmap.mmap] | None:
    """``(header, arrays, mmap)`` of a file :func:`write_container` wrote with ``magic``; None when it
    is missing, of another format version or fails the constant-time checks (magic, header checksum,
    trailer, array bounds). Never raises for a bad file."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        if size < _PREFIX_SIZE + _TRAILER_SIZE:
            return None
        buf = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    try:
        got, version, hcrc, hlen = buf[:8], _uint(buf, 8, 12), _uint(buf, 12, 16), _uint(buf, 16, 24)
        if got != magic or version != FORMAT_VERSION or _PREFIX_SIZE + hlen > size:
            return None
        hbytes = buf[_PREFIX_SIZE:_PREFIX_SIZE + hlen]
        if zlib.crc32(hbytes) != hcrc:
            return None
        header = _json_object(hbytes.decode("utf-8"))
        end, total = buf[size - _TRAILER_SIZE:size - 8], _uint(buf, size - 8, size)
        if end != END or total != size or header.get("format") != FORMAT_VERSION:
            return None
        data_start = _align(_PREFIX_SIZE + hlen)
        layout = header["arrays"]
        for name, (dtype, count, offset) in layout.items():
            width = itemsize(dtype)
            if width is None or type(count) is not int or type(offset) is not int or count < 0 or offset < 0 \
                    or data_start + offset + count * width > size - _TRAILER_SIZE:
                return None
        return header, MappedArrays(buf, data_start, layout), buf
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


class _Strict:
    """The decoding options of ``json.loads`` as its C scanner reads them (``json.decoder.JSONDecoder``)."""
    strict, object_hook, object_pairs_hook, parse_float, parse_int, memo = True, None, None, float, int, {}

    @staticmethod
    def parse_constant(name: str):
        return {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}[name]


def _json_object(text: str) -> dict:
    """``json.loads(text)`` of a header, by the C scanner ``json`` itself uses, so that mapping a graph
    file does not import ``json`` (its modules compile six patterns: ~1.5 ms of a cold question).
    Raises ValueError for anything but one JSON object (white space around it allowed).

    >>> _json_object(' {"a": [1, 2.5, "x\\u00e9"], "b": null} ')
    {'a': [1, 2.5, 'xé'], 'b': None}
    """
    try:
        from _json import make_scanner
    except ImportError:   # pragma: no cover - an interpreter without json's C accelerator
        import json
        value = json.loads(text)
    else:
        start = len(text) - len(text.lstrip(" \t\n\r"))
        try:
            value, end = make_scanner(_Strict)(text, start)
        except StopIteration:
            raise ValueError("not JSON") from None
        if text[end:].strip(" \t\n\r"):
            raise ValueError("extra data after the header")
    if type(value) is not dict:
        raise ValueError("the header is not a JSON object")
    return value


def _uint(buf, start: int, end: int) -> int:
    """The little-endian unsigned integer of ``buf[start:end]`` (as ``struct``'s ``<I`` / ``<Q``)."""
    return int.from_bytes(buf[start:end], "little")


def open_graph(path: str, expect: Stamp | None = None) -> GraphArrays | None:
    """Map a graph file; None when it is missing, stale (its stamp is not ``expect``), of another
    format version, or fails the constant-time structural checks. Never raises for a bad file."""
    got = map_container(path, MAGIC)
    if got is None:
        return None
    header, arrays, buf = got
    try:
        stamp = Stamp(header["generation"], header["token"], header["max_fact"])
        if expect is not None and stamp != expect:
            return None
        g = GraphArrays(path, header, arrays, buf)
        _check_structure(g, deep=False)
        return g
    except (StoreError, ValueError, KeyError, TypeError):
        return None


def _check_structure(g: GraphArrays, deep: bool) -> None:
    """Sizes and end points (constant time); ``deep``: every pointer ascending and every id in range."""
    a, n, n_sym, n_rel = g.arrays, g.n_facts, g.n_symbols, len(g.relations)
    bad = lambda what: StoreError(f"{g.path}: graph file corrupt ({what})")  # noqa: E731
    need = {"sym_off": n_sym + 1, "rel_sizes": n_rel}
    for d in _DIRECTIONS:
        need.update({f"{d}_rel": n_rel + 1, f"{d}_vals": n})
        if f"{d}_conf" in a:
            need[f"{d}_conf"] = n
    col = getattr(a, "view", a.__getitem__)   # the constant-time checks read a few elements: no numpy
    for name, size in need.items():
        if name not in a or len(col(name)) != size:
            raise bad(f"{name} size")
    if col("sym_off")[0] != 0 or col("sym_off")[-1] != len(col("sym_blob")):
        raise bad("symbol offsets")
    for d in _DIRECTIONS:
        keys, ptr, rel = col(f"{d}_keys"), col(f"{d}_ptr"), col(f"{d}_rel")
        if len(ptr) != len(keys) + 1 or ptr[0] != 0 or ptr[-1] != n or rel[0] != 0 or rel[-1] != len(keys):
            raise bad(f"{d} index ends")
        if deep:
            import numpy as np
            keys, ptr, rel = a[f"{d}_keys"], a[f"{d}_ptr"], a[f"{d}_rel"]
            if np.any(np.diff(ptr) <= 0) or np.any(np.diff(rel) < 0) or np.any(np.diff(a["sym_off"]) < 0):
                raise bad(f"{d} pointers")
            for ids in (keys, a[f"{d}_vals"]):
                if ids.size and (ids.min() < 0 or ids.max() >= n_sym):
                    raise bad(f"{d} ids")


def read_facts(store) -> tuple[Stamp, list[str], list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One consistent snapshot of the ``facts`` table, interned (ids in sorted key order)."""
    import numpy as np
    conn = store.conn
    sym: dict[str, int] = {}
    rel: dict[str, int] = {}
    parts: dict[str, list] = {"s": [], "r": [], "o": [], "c": []}
    with store.reading():   # (one snapshot; in the caller's transaction if it has one open)
        stamp = store_stamp(store)
        cur = conn.execute("SELECT subject, relation, object, confidence FROM facts")
        while True:
            rows = cur.fetchmany(65536)
            if not rows:
                break
            S, R, O, C = zip(*rows)
            m = len(rows)
            for table, column in ((sym, S), (sym, O), (rel, R)):
                for k in set(column).difference(table):
                    table[k] = len(table)
            parts["s"].append(np.fromiter(map(sym.__getitem__, S), np.int64, m))
            parts["o"].append(np.fromiter(map(sym.__getitem__, O), np.int64, m))
            parts["r"].append(np.fromiter(map(rel.__getitem__, R), np.int64, m))
            parts["c"].append(np.array(C, dtype=np.float64))
    cat = {k: (np.concatenate(v) if v else np.zeros(0, np.float64 if k == "c" else np.int64)) for k, v in parts.items()}
    symbols, s, o = _sorted_ids(list(sym), cat["s"], cat["o"])
    relations, r, _ = _sorted_ids(list(rel), cat["r"], cat["r"])
    return stamp, symbols, relations, s, r, o, cat["c"]


def _sorted_ids(keys: list[str], *columns: np.ndarray) -> tuple:
    import numpy as np
    order = sorted(range(len(keys)), key=keys.__getitem__)
    perm = np.empty(len(keys), dtype=np.int64)
    perm[np.array(order, dtype=np.int64)] = np.arange(len(keys), dtype=np.int64)
    return ([keys[i] for i in order], *(perm[c] if len(c) else c for c in columns))


def ensure_token(store) -> None:
    """Give a store written before write tokens existed one (no generation change)."""
    if store.readonly:
        return
    conn = store.conn
    if conn.execute("SELECT 1 FROM meta WHERE key = 'token'").fetchone() is None and not conn.in_transaction:
        store.check_before_write()
        conn.execute("INSERT OR IGNORE INTO meta VALUES ('token', ?)", (os.urandom(16).hex(),))


def remove_temporaries(targets) -> list[str]:
    """Remove the temporary files that writers of the files ``targets`` left when they died: the
    names :func:`write_container` gives them, ``TARGET.tmp.PID.XXXXXXXX`` (8 hex digits), whose
    process ``PID`` is gone and which no process holds locked (a writer locks its temporary file while
    it writes it, which protects a live writer whose pid this process cannot see). Other files are
    left alone. Returns the paths removed.

    >>> import tempfile, subprocess, sys
    >>> d = tempfile.mkdtemp(); g = os.path.join(d, "kb.sqlite.graph")
    >>> dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
    ...                       capture_output=True, text=True).stdout.strip()
    >>> for name in (f"kb.sqlite.graph.tmp.{dead}.0badc0de", f"kb.sqlite.graph.tmp.{os.getpid()}.0badc0de",
    ...              f"kb.sqlite.graph.tmp.{dead}.x", f"kb.sqlite.graphs.tmp.{dead}.0badc0de"):
    ...     open(os.path.join(d, name), "w").close()
    >>> [os.path.basename(f) for f in remove_temporaries([g])] == [f"kb.sqlite.graph.tmp.{dead}.0badc0de"]
    True
    >>> len(os.listdir(d))
    3
    """
    import re
    by_folder: dict[str, list[str]] = {}
    for t in targets:
        folder, name = os.path.split(os.path.abspath(t))
        by_folder.setdefault(folder, []).append(re.escape(name))
    gone = []
    for folder, names in by_folder.items():
        pattern = re.compile(r"(?:%s)\.tmp\.(\d+)\.[0-9a-f]{8}" % "|".join(sorted(set(names))))
        try:
            listing = os.listdir(folder)
        except OSError:
            continue
        for name in listing:
            m = pattern.fullmatch(name)
            if m is None or not _pid_gone(int(m.group(1))):
                continue
            path = os.path.join(folder, name)
            try:
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue                  # a writer holds it: alive where its pid is not visible
            except OSError:
                pass                      # no flock on this file system: the pid is the evidence
            try:
                os.remove(path)
                gone.append(path)
            except OSError:
                pass
            finally:
                os.close(fd)
    return gone


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:                       # it exists, another user's
        return False
    return False


class _locked:
    """An exclusive lock beside the graph file while it is checked and replaced."""

    def __init__(self, path: str) -> None:
        self.path = path + ".lock"

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def iter_rows(g: GraphArrays, direction: str, rid: int) -> Iterator[tuple[int, np.ndarray, np.ndarray | None]]:
    """``(key, other ends, confidences or None)`` of one relation in one direction."""
    a = g.arrays
    keys, ptr, rel = a[f"{direction}_keys"], a[f"{direction}_ptr"], a[f"{direction}_rel"]
    vals, conf = a[f"{direction}_vals"], a.get(f"{direction}_conf")
    for i in range(int(rel[rid]), int(rel[rid + 1])):
        lo, hi = int(ptr[i]), int(ptr[i + 1])
        yield int(keys[i]), vals[lo:hi], None if conf is None else conf[lo:hi]
