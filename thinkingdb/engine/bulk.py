"""Whole answer sets of a one-pattern question, as arrays (issue 20).

``? n5 depends_on ?x.`` under a transitive declaration, or ``? n5 depends_on+ ?x.``, can have
hundreds of thousands of answers: every symbol ``n5`` reaches, each scoring 1 when every step scores
1. :func:`bulk_answers` computes such an answer set as one breadth-first search over the graph's
arrays (:mod:`thinkingdb.engine.bfs`), sorts it by score then key in numpy, and hands back a
:class:`BulkAnswers` sequence that makes each :class:`~thinkingdb.engine.answers.Answer` only when
it is read — its proof only when that is read. Answers, scores, proofs, their order and
``truncated`` are exactly those of the general evaluator (:func:`thinkingdb.engine.query.evaluate`,
tested against it).

It applies to one pattern with one constant end and a variable at the other, ``aggregate="best"``,
and a path that is one relation ``R`` (maybe inverted, maybe ``+`` / ``*``) when

* ``R`` is closed by the single-source transitive path (:mod:`thinkingdb.engine.reach`) and every
  step of it scores 1: the answers of ``R``, ``R+`` and ``R*`` are its reach set; or
* no rule derives ``R`` and there is no node bound: ``R+`` and ``R*`` are a breadth-first search
  over the asserted facts when they all score 1, else a best-walk search over their confidences
  (:func:`thinkingdb.engine.bfs.widest`: highest product, then fewest steps, then the smallest
  predecessor — the general evaluator's walk, found by label correcting in numpy).

Anything else returns None and the general evaluator runs. So does a search over the asserted facts
whose walk from the constant reaches at most :data:`SMALL_REACH` symbols: the general evaluator's own
pure-Python walk answers it without loading numpy (a cold ``? GO:0006915 is_a+ ?x.`` on GO, 5
answers, spent about 140 of its 150 ms importing numpy). The probe walks at most that many symbols
and is then dropped, so a large reach set costs it a fraction of a millisecond.
"""

from __future__ import annotations

import time
from _collections_abc import Mapping, Sequence   # = collections.abc (without the collections package)

from ..model import Limits, PathRel, Query, Var
from .answers import Answer, _proofs_builder
from .paths import PathWalk, _simple, invert
from .results import GraphView

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:   # numpy, and the searches that use it, load only for a shape answered here
    from typing import Callable
    import numpy as np

__all__ = ["BulkAnswers", "TableAnswers", "bulk_answers", "SMALL_REACH"]

SMALL_REACH = 256   # symbols: a walk over asserted facts that reaches no more is left to the general evaluator


class _LabelSource:
    """Display labels of a bulk answer set, fetched for all its keys at once on first use."""

    def __init__(self, fetch: Callable[[list[str]], dict[str, str]], keys: Callable[[], list[str]]) -> None:
        self._fetch, self._keys = fetch, keys
        self._got: dict[str, str] | None = None

    def get(self, key: str) -> str:
        if self._got is None:
            self._got = self._fetch(sorted(set(self._keys())))
        return self._got.get(key, key)


class _Labels(Mapping):
    """One answer's ``variable -> label`` mapping, read from a shared :class:`_LabelSource` when a label
    is first read."""

    __slots__ = ("_bindings", "_src")

    def __init__(self, bindings: dict[str, str], src: _LabelSource) -> None:
        self._bindings, self._src = bindings, src

    def __getitem__(self, name: str) -> str:
        return self._src.get(self._bindings[name])

    def __iter__(self):
        return iter(self._bindings)

    def __len__(self) -> int:
        return len(self._bindings)

    def __repr__(self) -> str:
        return repr(dict(self))


class _ArrayAnswers(Sequence):
    """Answers held as arrays: an int index makes one :class:`~thinkingdb.engine.answers.Answer`
    (``_answer``), a slice the same kind of holder over the sliced arrays (``_slice``)."""

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self._slice(i)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._answer(i)

    def __iter__(self):
        for i in range(len(self)):
            yield self._answer(i)

    def __eq__(self, other):
        """Equal to a list, tuple or array holder of the same answers in the same order (as a list is)."""
        if isinstance(other, (list, tuple, _ArrayAnswers)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None   # mutable-sequence semantics, as a list


class LabelledAnswers(_ArrayAnswers):
    """A list of answers carrying display labels fetched (for all their keys at once) when the first
    answer is read: a question whose labels no one reads never reads them (store/statefile.py: it then
    opens no SQLite connection)."""

    def __init__(self, answers: list, labels: _LabelSource) -> None:
        self._list, self._labels = answers, labels
        self._made: list | None = None   # the labelled answers, made once (each keeps its proof once built)

    @classmethod
    def of(cls, answers: list, fetch: Callable[[list[str]], dict[str, str]]) -> "LabelledAnswers":
        return cls(answers, _LabelSource(fetch, lambda: [k for a in answers for k in a.bindings.values()]))

    def __len__(self) -> int:
        return len(self._list)

    def _answer(self, i: int) -> Answer:
        if self._made is None:
            self._made = [a.replace(labels=_Labels(a.bindings, self._labels)) for a in self._list]
        return self._made[i]

    def _slice(self, i: slice) -> "LabelledAnswers":
        return LabelledAnswers(self._list[i], self._labels)


class BulkAnswers(_ArrayAnswers):
    """Answers of one variable held as arrays: ``ends`` (symbol ids) and ``scores``, in answer order.
    Indexing or iterating makes :class:`~thinkingdb.engine.answers.Answer` values on the fly."""

    def __init__(self, ids, var: str, ends: np.ndarray, scores: np.ndarray,
                 proofs: Callable[[int], Callable[[], list]], labels: _LabelSource | None = None) -> None:
        self.ids, self.var, self.ends, self.scores = ids, var, ends, scores
        self._proofs, self._labels = proofs, labels
        self._keys: list[str] | None = None

    def __len__(self) -> int:
        return len(self.ends)

    def keys(self) -> list[str]:
        """The bound symbol keys in answer order, decoded at once."""
        if self._keys is None:
            self._keys = decode_keys(self.ids, self.ends)
        return self._keys

    def _answer(self, i: int) -> Answer:
        key = self.keys()[i]
        end, score = int(self.ends[i]), float(self.scores[i])
        build = self._proofs(end)
        labels = {} if self._labels is None else _Labels({self.var: key}, self._labels)
        return Answer({self.var: key}, score, lambda: build()[0], labels)

    def _slice(self, i: slice) -> "BulkAnswers":
        keys = self.keys()[i]
        out = BulkAnswers(self.ids, self.var, self.ends[i], self.scores[i], self._proofs, self._labels)
        out._keys = keys
        return out

    def with_labels(self, fetch: Callable[[list[str]], dict[str, str]]) -> "BulkAnswers":
        """The same answers carrying display labels, fetched (all at once) when one is first read."""
        out = BulkAnswers(self.ids, self.var, self.ends, self.scores, self._proofs, _LabelSource(fetch, self.keys))
        out._keys = self._keys
        return out


class TableAnswers(_ArrayAnswers):
    """Answers of a conjunction held as id columns and scores, in answer order; each
    :class:`~thinkingdb.engine.answers.Answer` (and its proof) made when read."""

    var = None     # (several variables: the CLI's one-column TSV shortcut does not apply)

    def __init__(self, ids, names, cols, scores, make, labels=None, rows=None) -> None:
        self.ids, self.names, self.cols, self.scores = ids, names, cols, scores
        self._make, self._labels = make, labels
        self.rows = rows    # optional: an int per answer, passed to ``make`` as its third argument
        self._keys: list | None = None

    def __len__(self) -> int:
        return len(self.scores)

    def columns(self) -> list[list[str]]:
        """The keys of each variable's column, decoded at once: each distinct symbol once, its string
        shared by its rows (a column of 500,000 rows over 1,000 symbols holds 1,000 strings)."""
        if self._keys is None:
            import numpy as np
            self._keys = []
            for c in self.cols:
                uniq, inv = np.unique(c, return_inverse=True)
                dec = decode_keys(self.ids, uniq)
                self._keys.append([dec[i] for i in inv.tolist()])
        return self._keys

    def keys(self) -> list[str]:
        """Every bound key (with repeats), for fetching labels."""
        return [k for col in self.columns() for k in col]

    def _answer(self, i: int) -> Answer:
        bindings = {n: col[i] for n, col in zip(self.names, self.columns())}
        row = [int(c[i]) for c in self.cols]
        labels = {} if self._labels is None else {n: self._labels.get(k) for n, k in bindings.items()}
        if self.rows is None:
            score, build = self._make(row, float(self.scores[i]))
        else:
            score, build = self._make(row, float(self.scores[i]), int(self.rows[i]))
        return Answer(bindings, score, build, labels)

    def _slice(self, i: slice) -> "TableAnswers":
        out = TableAnswers(self.ids, self.names, [c[i] for c in self.cols], self.scores[i], self._make,
                           self._labels, None if self.rows is None else self.rows[i])
        if self._keys is not None:
            out._keys = [k[i] for k in self._keys]
        return out

    def with_labels(self, fetch) -> "TableAnswers":
        out = TableAnswers(self.ids, self.names, self.cols, self.scores, self._make, _LabelSource(fetch, self.keys),
                           self.rows)
        out._keys = self._keys
        return out


def decode_keys(ids, ends: np.ndarray) -> list[str]:
    """The keys of the symbol ids ``ends``, decoded at once (from a mapped graph's symbol blob in
    one slice when it can)."""
    syms = ids.g._syms
    off, blob = getattr(syms, "_off", None), getattr(syms, "_blob", None)
    if off is None or getattr(syms, "_all", None) is not None or not len(ends):
        key = ids.sym_key
        return [key(e) for e in ends.tolist()]
    import numpy as np
    off = np.asarray(off)   # a mapped graph's symbol offsets (a memoryview of the file: no copy)
    lo, hi = off[ends].tolist(), off[ends + 1].tolist()
    a, b = min(lo), max(hi)
    text = blob[a:b].tobytes()
    whole = text.decode("utf-8")
    if len(whole) == len(text):   # ASCII: byte offsets are character offsets
        return [whole[x - a:y - a] for x, y in zip(lo, hi)]
    return [text[x - a:y - a].decode("utf-8") for x, y in zip(lo, hi)]


def bulk_answers(view, query: Query, limits: Limits, deadline: float | None,
                 aggregate: str) -> tuple[BulkAnswers, str | None] | None:
    """The answers of ``query`` over ``view`` as a :class:`BulkAnswers` and the bound that cut them
    (see the module docstring), or None when this shape is not one it answers exactly.

    >>> from thinkingdb.engine.graph import FactGraph
    >>> from thinkingdb.engine.results import GraphView
    >>> from thinkingdb.model import Fact, PathRepeat, QueryPattern
    >>> g = FactGraph([Fact(f"n{i}", "r", f"n{i + 1}") for i in range(300)] + [Fact("n300", "r", "n0")])
    >>> q = Query((QueryPattern("n0", PathRepeat(PathRel("r"), 1, None), Var("x")),))
    >>> answers, truncated = bulk_answers(GraphView(g), q, Limits(), None, "best")
    >>> len(answers), [(a.bindings["x"], a.score) for a in answers[:3]], truncated
    (301, [('n0', 1.0), ('n1', 1.0), ('n10', 1.0)], None)
    >>> [str(p.conclusion) for p in answers[2].proof.premises][:3]   # n0 r n1 ... n9 r n10: the shortest walk
    ['n0 r n1', 'n1 r n2', 'n2 r n3']
    """
    if aggregate != "best" or len(query.patterns) != 1:
        return None
    pat = query.patterns[0]
    simple = _simple(pat.path)
    s_var, o_var = isinstance(pat.subject, Var), isinstance(pat.object, Var)
    if simple is None or s_var == o_var:
        return None
    rel, fwd, lo, hi = simple
    if not (lo == hi == 1 or (lo in (0, 1) and hi is None)):
        return None
    ids = view.ids
    const = ids.find_sym(pat.object if s_var else pat.subject)
    r = ids.find_rel(rel)
    if const is None or r is None or const >= len(view.g._syms):
        return None
    forward = fwd == o_var        # walk from the constant end: subject → object unless inverted
    var = (pat.subject if s_var else pat.object).name
    closed = getattr(view, "_rels", {}).get(r) if hasattr(view, "closed_ones") else None
    if closed is not None and hi is None and hasattr(view, "closed_answers"):   # engine/smallsource.py
        return view.closed_answers(pat, var, const, forward, lo, limits, deadline)
    if closed is not None and hasattr(closed, "reach_array") and closed.all_ones:
        ends = closed.reach_array(const) if forward else closed.reverse_array(const)
        walked = False
    elif type(view) is GraphView and hi is None and limits.max_nodes is None and \
            (limits.max_rows is None or limits.max_rows > SMALL_REACH + 1) and \
            _reaches_few(view, r, forward, const):
        return None    # the general evaluator's walk (its rows within max_rows), without numpy
    elif type(view) is GraphView and hi is None and limits.max_nodes is None and _ones(view.g, r):
        from .bfs import Search
        search = Search(view.g, [r], const, forward=forward, deadline=deadline)
        ends = search.run()
        walked = True
        if search.timed_out:
            return _finish(view, ids, var, pat, ends, lo, const, forward, r, walked, "time")
    elif type(view) is GraphView and hi is None and limits.max_nodes is None:   # confidences below 1
        from .bfs import widest
        ends, scores, timed_out = widest(view.g, [r], const, forward=forward, lo=lo, deadline=deadline)
        n = len(ends)
        truncated = "time" if timed_out else view.truncated or _tick(n, limits, deadline)
        return _finish(view, ids, var, pat, ends, lo, const, forward, r, True, truncated, scores)
    else:
        return None
    truncated = view.truncated
    n = len(ends) + (1 if lo == 0 and not _has(ends, const) else 0)
    if hi is None:     # the closed walk ticks once over its answers
        truncated = truncated or _tick(n, limits, deadline)
    elif len(ends) - int(_has(ends, const)):   # one layer: ticks when it found a symbol other than the start
        truncated = truncated or _tick(1 + len(ends) - int(_has(ends, const)), limits, deadline)
    return _finish(view, ids, var, pat, ends, lo, const, forward, r, walked, truncated)


def _reaches_few(view, r: int, forward: bool, const: int) -> bool:
    """Does ``const`` reach at most :data:`SMALL_REACH` other symbols over relation ``r`` (walked
    ``forward`` or backward)? A breadth-first count over the view's rows that stops past the limit."""
    if SMALL_REACH <= 0:
        return False
    step = view.out if forward else view.inn
    seen, frontier = {const}, [const]
    while frontier:
        nxt = []
        for u in frontier:
            for v in step(r, u):
                if v not in seen:
                    if len(seen) > SMALL_REACH:
                        return False
                    seen.add(v)
                    nxt.append(v)
        frontier = nxt
    return True


def _ones(g, r: int) -> bool:
    """:func:`thinkingdb.engine.bfs._all_one`, imported when a walk may use it (bfs loads numpy)."""
    from .bfs import _all_one
    return _all_one(g, r)


def _finish(view, ids, var, pat, ends, lo, const, forward, r, walked, truncated, scores=None):
    """The answer set: ``ends`` (ascending ids; ``scores`` beside them, None: all 1) sorted by score,
    highest first, then canonically."""
    import numpy as np
    from .bfs import rank_array
    if lo == 0 and not _has(ends, const):
        i = int(np.searchsorted(ends, const))
        ends = np.insert(ends, i, const)
        scores = None if scores is None else np.insert(scores, i, 1.0)
    rank = rank_array(view.g)
    keys = ends if rank is None else rank[ends]
    if scores is None:
        scores = np.ones(len(ends))
        if rank is not None:
            ends = ends[np.argsort(keys, kind="stable")]
    else:
        order = np.lexsort((keys, -scores))
        ends, scores = ends[order], scores[order]
    path = pat.path
    walks: dict = {}
    all_one = bool(np.all(scores == 1.0))

    def proofs(end: int):
        a, b = (const, end) if not isinstance(pat.subject, Var) else (end, const)
        score = 1.0
        if not all_one:      # the answer's score, looked up when its proof is read
            if "score" not in walks:
                walks["score"] = dict(zip(ends.tolist(), scores.tolist()))
            score = walks["score"][end]
        if lo == 0 and end == const:
            steps = list
        elif walked:   # the best-first walk, run once when a proof is read
            steps = _walk_steps(view, pat, const, end, walks)
        else:
            key = (const, r, end) if forward else (end, r, const)
            steps = (lambda key=key: [key])
        return _proofs_builder(view, path, a, b, score, steps, 1)
    return BulkAnswers(ids, var, ends, scores, proofs), truncated


def _walk_steps(view, pat, const: int, end: int, walks: dict):
    def steps():
        if "w" not in walks:
            p = pat.path if not isinstance(pat.subject, Var) else invert(pat.path)
            walks["w"] = PathWalk(view, p).run(const)
        keys = walks["w"][end][1]()
        return keys if not isinstance(pat.subject, Var) else keys[::-1]
    return steps


def _has(arr: np.ndarray, x: int) -> bool:
    import numpy as np
    i = int(np.searchsorted(arr, x))
    return i < len(arr) and int(arr[i]) == x


def _tick(seen: int, limits: Limits, deadline: float | None) -> str | None:
    if limits.max_nodes is not None and seen > limits.max_nodes:
        return "nodes"
    if deadline is not None and time.perf_counter() > deadline:
        return "time"
    return None

