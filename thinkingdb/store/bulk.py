"""The fact write path of one ingest: a bulk load into a store without facts, else the staged merge.

A store that holds no facts when an ingest's transaction starts (a new store, or one emptied) takes
the bulk path: the readers' rows are interned into integer columns as they come (about 40 bytes a
row, no Python object per fact is kept), and when the last file is read the facts are deduplicated
in memory (numpy), inserted once in key order (so the ``UNIQUE (subject, relation, object)`` index is
filled from left to right) and their provenance rows appended in file order; the provenance indexes
are dropped for the load and built again after it. The content written — facts with their maximum
confidence, one provenance row per read row in file order, as :meth:`Store.add_fact_rows` writes
them — is the same either way (tests/test_bulk_ingest.py compares the dumps).

A store with facts takes :meth:`Store.add_fact_rows` per batch, as before.
"""

from __future__ import annotations

from itertools import repeat
from typing import Sequence

from ..errors import StoreError
from .graphfile import fact_arrays
from .records import Interner
from .sqlite import PROVENANCE_INDEXES, FactRow, Store

BULK_MIN = 20_000
"""Provenance rows from which the bulk path drops the provenance indexes and builds them after the load."""
_SLICE = 1 << 16   # facts per executemany of the bulk load
_KEY_LIMIT = 1 << 62   # the triples are sorted as one integer key when (symbols^2 * relations) is below this


class FactWriter:
    """Writes the fact rows of one transaction to ``store`` (see the module docstring). While it takes
    the bulk path, :attr:`ids` numbers the keys; a reader may hand it rows as columns of those ids.

    >>> import tempfile, os
    >>> from thinkingdb.model import Triple
    >>> st = Store(os.path.join(tempfile.mkdtemp(), "kb.sqlite"), graph_file=False)
    >>> with st.transaction():
    ...     w = FactWriter(st)
    ...     o = st.source_id("a.tsv")
    ...     w.add(o, [("b", "r", "c", 0.5, 1, None, None), ("a", "r", "b", 1.0, 2, None, None),
    ...               ("b", "r", "c", 0.75, 3, None, None)])
    ...     w.flush()
    3
    >>> st.fact_rows(), [p["line"] for p in st.provenance(Triple("b", "r", "c"))]
    ([('a', 'r', 'b', 1.0), ('b', 'r', 'c', 0.75)], [1, 3])
    >>> st.close()
    """

    def __init__(self, store: Store):
        self.store = store
        self.bulk = store.conn.execute("SELECT 1 FROM facts LIMIT 1").fetchone() is None
        self.ids = Interner()
        self.chunks: list[tuple] = []   # (origin, s ids, r ids, o ids, confidences, lines, units, details)
        self.rows = 0

    def add(self, origin: int, rows: Sequence[FactRow], columns: Sequence[tuple] = (),
            ids: Interner | None = None) -> int:
        """Write (or keep for the bulk load) ``rows`` of one source, and the rows kept as ``columns``
        (:attr:`~thinkingdb.store.records.Batch.columns`, each standing before ``rows[at]``, of the
        numbers of ``ids``); returns how many."""
        if columns and (not self.bulk or ids is not self.ids):
            from .records import Batch
            rows, columns = Batch("", rows=list(rows), columns=list(columns), ids=ids).all_rows(), ()
        if not self.bulk:
            return self.store.add_fact_rows(origin, rows) if rows else 0
        if not rows and not columns:
            return 0
        from .writelog import note
        note(self.store, origin)
        n, pos = 0, 0
        for at, S, R, O, lines in columns:
            n += self._keep(origin, rows[pos:at])
            pos = at
            n += self._keep_columns(origin, S, R, O, lines)
        return n + self._keep(origin, rows[pos:] if pos else rows)

    def _keep(self, origin: int, rows: Sequence[FactRow]) -> int:
        if not rows:
            return 0
        import numpy as np
        S, R, O, C, L, U, D = zip(*rows)
        m = len(rows)
        ids = self.ids
        self.chunks.append((origin, ids.symbol_ids(S), ids.relation_ids(R), ids.symbol_ids(O),
                            np.array(C, dtype=np.float64), np.array(L, dtype=np.int64),
                            U if any(u is not None for u in U) else None,
                            D if any(d is not None for d in D) else None))
        self.rows += m
        return m

    def _keep_columns(self, origin: int, S, R, O, lines) -> int:
        """Rows of confidence 1, no unit and no detail, given as id columns (arrays of :attr:`ids` numbers)."""
        import numpy as np
        m = len(S)
        if not m:
            return 0
        self.chunks.append((origin, S, R, O, np.ones(m, dtype=np.float64), lines, None, None))
        self.rows += m
        return m

    def flush(self) -> None:
        """Write what the bulk path kept; afterwards rows are written as they come (the store has facts)."""
        if not self.bulk:
            return
        self.bulk = False
        if self.rows:
            self._load()
        self.ids, self.chunks = Interner(), []

    def _load(self) -> None:
        import numpy as np
        c = self.store.conn
        chunks = self.chunks
        s, r, o = (np.concatenate([ch[i] for ch in chunks]) for i in (1, 2, 3))
        conf, lines = np.concatenate([ch[4] for ch in chunks]), np.concatenate([ch[5] for ch in chunks])
        ids = self.ids
        used = np.zeros(len(ids.texts), dtype=bool)   # a reader may have numbered a key no row kept uses
        used[s], used[r], used[o] = True, True, True
        names, rels = _used(ids.symbols, ids.texts, used), _used(ids.relations, ids.texts, used)
        rank = np.zeros(len(ids.texts), dtype=np.int64)   # symbols and relations never share a number
        _rank(rank, ids.symbols, names)
        _rank(rank, ids.relations, rels)
        s, r, o = rank[s], rank[r], rank[o]
        del rank
        n = len(s)
        first = np.ones(n, dtype=bool)
        ns, nr = max(len(names), 1), max(len(rels), 1)
        if ns * ns * nr < _KEY_LIMIT:   # key order (the ids are ranks of the sorted texts) as one integer
            key = (s * nr + r) * ns + o
            order = np.argsort(key)     # rows of one triple in any order: they become one fact
            key = key[order]
            first[1:] = key[1:] != key[:-1]
            del key
        else:
            order = np.lexsort((o, r, s))
            ss, rs, os_ = s[order], r[order], o[order]
            first[1:] = (ss[1:] != ss[:-1]) | (rs[1:] != rs[:-1]) | (os_[1:] != os_[:-1])
            del ss, rs, os_
        starts = np.flatnonzero(first)
        best = np.maximum.reduceat(conf[order], starts)
        fact = np.empty(n, dtype=np.int64)       # the fact id of each row, in file order
        fact[order] = np.cumsum(first)
        if self.store.graph_file:   # every fact is new: the graph file is written whole, no delta noted
            from .graphdelta import disarm
            disarm(c)
        base = c.execute("SELECT coalesce(max(id), 0) FROM facts").fetchone()[0]
        if base:
            fact += base
        pick = order[starts]
        fs, fr, fo = s[pick], r[pick], o[pick]
        pending = None
        if not base and self.store.graph_file:   # all the store's facts: the graph file is made from them,
            pending = _in_thread(fact_arrays, names, rels, fs, fr, fo, best)   # its arrays while SQLite writes
        # SQLite numbers the rows itself (one more than the largest id, so base + 1, base + 2, ...; no
        # look-up of an id given): the facts are inserted in key order, their ids are those of `fact`
        for i in range(0, len(starts), _SLICE):   # slices: no million-element lists of Python objects
            j = min(i + _SLICE, len(starts))
            sub = map(names.__getitem__, fs[i:j].tolist())
            rel, obj = map(rels.__getitem__, fr[i:j].tolist()), map(names.__getitem__, fo[i:j].tolist())
            if (best[i:j] == 1.0).all():
                c.executemany("INSERT INTO facts (subject, relation, object, confidence) VALUES (?, ?, ?, 1.0)",
                              zip(sub, rel, obj))
            else:
                c.executemany("INSERT INTO facts (subject, relation, object, confidence) VALUES (?, ?, ?, ?)",
                              zip(sub, rel, obj, best[i:j].tolist()))
        last = c.execute("SELECT max(id) FROM facts").fetchone()[0]
        if last != base + len(starts):   # never seen: SQLite gives max(id) + 1 below 2**63 - 1
            raise StoreError(f"{self.store.path}: the bulk load's fact ids end at {last}, not {base + len(starts)}")
        if not base:
            self.store.keep_loaded_graph(names, rels, fs, fr, fo, best, pending)
        del s, r, o, order, first, starts, pick
        rebuild = n >= BULK_MIN and c.execute("SELECT 1 FROM provenance LIMIT 1").fetchone() is None
        if rebuild:
            for name, _ in PROVENANCE_INDEXES:
                c.execute(f"DROP INDEX {name}")
        k = 0
        for origin, cs, _, _, cc, _, units, details in chunks:
            m = len(cs)
            if units is None and details is None and (cc == 1.0).all():   # the common case: two columns bound
                c.executemany(f"INSERT INTO provenance VALUES (?, {int(origin)}, ?, NULL, 1.0, NULL)",
                              zip(fact[k:k + m].tolist(), lines[k:k + m].tolist()))
            else:
                c.executemany(f"INSERT INTO provenance VALUES (?, {int(origin)}, ?, ?, ?, ?)",
                              zip(fact[k:k + m].tolist(), lines[k:k + m].tolist(), units or repeat(None, m),
                                  cc.tolist(), details or repeat(None, m)))
            k += m
        if rebuild:
            for _, sql in PROVENANCE_INDEXES:
                c.execute(sql)


def _in_thread(fn, *args):
    """Run ``fn(*args)`` in a thread (numpy releases the GIL in its sorts); returns a function that
    waits and gives the result, or None if ``fn`` failed (the caller then computes it itself)."""
    import threading
    out: list = []

    def run() -> None:
        try:
            out.append(fn(*args))
        except Exception:   # noqa: BLE001 - the caller computes it again and sees the error there
            pass
    t = threading.Thread(target=run, name="thinkingdb-graph-arrays", daemon=True)
    t.start()

    def result():
        t.join()
        return out[0] if out else None
    return result


def _used(table: dict[str, int], texts: list[str], used) -> list[str]:
    """The sorted texts of ``table`` whose ids are marked in ``used``."""
    import numpy as np
    numbers = np.fromiter(table.values(), np.int64, len(table))
    return sorted(map(texts.__getitem__, numbers[used[numbers]].tolist()))


def _rank(rank, ids: dict[str, int], names: list[str]) -> None:
    """Set ``rank[number]`` of each interned text to its position in ``names`` (the sorted texts)."""
    import numpy as np
    rank[np.fromiter(map(ids.__getitem__, names), np.int64, len(names))] = np.arange(len(names), dtype=np.int64)
