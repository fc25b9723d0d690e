"""The answers of a conjunction run as arrays (:mod:`thinkingdb.engine.conj`): its bound rows sorted as
the general evaluator sorts them, each answer and its proof made when read, by the general
evaluator's own walks."""

from __future__ import annotations

from ..model import PathRel
from .answers import _conjoin, _proofs_builder
from .bulk import TableAnswers
from .paths import PathWalk, invert

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:   # numpy loads when a conjunction runs as arrays
    import numpy as np

__all__ = ["SmallTableAnswers", "table_answers"]


def table_answers(view, table, aggregate: str) -> TableAnswers:
    """The answers of a :class:`~thinkingdb.engine.conj.Table`, sorted as the general evaluator sorts them: score, highest
    first, then the bound keys in the order the variables first appear. A table of lists (made in pure
    Python, :mod:`thinkingdb.engine.smallconj`) is sorted in lists, into a :class:`SmallTableAnswers`."""
    query, ids, g = table.query, view.ids, view.g
    names = tuple(v.name for v in query.variables())
    by_index = {st.i: st for st in table.steps}
    # the evaluator multiplies in its pattern order; noisy-or (one proof per pattern, k = 1) in index
    # order, then 1 - (1 - s)
    order = [st.i for st in table.steps] if aggregate != "noisy-or" else range(len(query.patterns))
    cols = [table.cols[nm] for nm in names]
    small = all(isinstance(c, list) for c in cols)
    if small:
        final = [1.0] * table.n
        for i in order:
            if i in table.scores:
                final = [f * s for f, s in zip(final, table.scores[i])]
        if aggregate == "noisy-or":
            final = [1.0 - (1.0 - f) for f in final]
        rank = None if g.is_mapped else g.ranks()[0]
        keys = cols if rank is None else [[rank[x] for x in c] for c in cols]
        sort = sorted(range(table.n), key=lambda j: (-final[j],) + tuple(k[j] for k in keys))
        cols, final = [[c[j] for j in sort] for c in cols], [final[j] for j in sort]
    else:
        import numpy as np
        from .bfs import rank_array
        final = np.ones(table.n)
        for i in order:
            if i in table.scores:
                final = final * table.scores[i]
        if aggregate == "noisy-or":
            final = 1.0 - (1.0 - final)
        rank = rank_array(g)
        keys = [c if rank is None else rank[c] for c in cols]
        if not _in_order(keys, final):   # (rows made in order, as from one sorted set after another, stay)
            sort = np.lexsort(tuple(keys[::-1]) + (-final,))
            cols, final = [c[sort] for c in cols], final[sort]
    col_of = {nm: j for j, nm in enumerate(names)}
    walks: dict = {}

    def value(end, row):
        return end[1] if end[0] == "const" else row[col_of[end[1]]]

    def pattern_proof(i: int, row: list):
        st = by_index[i]
        pat = query.patterns[i]
        a, b = value(st.start, row), value(st.other, row)
        s, o = (a, b) if st.from_subject else (b, a)
        if st.kind in ("walk", "best"):
            if st.s_known or not st.o_known:
                w = _walk(walks, view, (i, True), pat.path, s)
                score, steps = w[o]
            else:
                w = _walk(walks, view, (i, False), invert(pat.path), o)
                score, back = w[s]
                steps = (lambda back=back: back()[::-1])
        else:       # one step: a closed relation's fact (or, r*, none) or an asserted one
            key = (s, st.r, o) if st.direction == st.from_subject else (o, st.r, s)   # the path's direction
            score = view.fact_score(key) if st.kind == "hop" else 1.0
            self_only = st.lo == 0 and s == o and not isinstance(pat.path, PathRel)
            if isinstance(pat.path, PathRel) or not self_only:
                steps = (lambda key=key: [key])
            else:
                steps = list
        return _proofs_builder(view, pat.path, s, o, score, steps, 1)()[0]

    def make(row: list, score: float):
        def build():
            proofs = [pattern_proof(i, row) for i in range(len(query.patterns))]
            if aggregate != "noisy-or":
                return _conjoin(proofs, score)
            p = 1.0
            for x in proofs:
                p *= x.score
            return (_conjoin(proofs, p),)
        return score, build

    if small:
        return SmallTableAnswers(ids, names, cols, final, make)
    return TableAnswers(ids, names, cols, final, make)


class SmallTableAnswers(TableAnswers):
    """:class:`~thinkingdb.engine.bulk.TableAnswers` over lists (no numpy)."""

    def columns(self) -> list[list[str]]:
        if self._keys is None:
            key = self.ids.sym_key
            self._keys = []
            for c in self.cols:
                dec = {x: key(x) for x in set(c)}    # each distinct symbol's string once
                self._keys.append([dec[x] for x in c])
        return self._keys

    def _slice(self, i: slice) -> "SmallTableAnswers":
        out = SmallTableAnswers(self.ids, self.names, [c[i] for c in self.cols], self.scores[i], self._make,
                                self._labels, None if self.rows is None else self.rows[i])
        if self._keys is not None:
            out._keys = [k[i] for k in self._keys]
        return out

    def with_labels(self, fetch) -> "SmallTableAnswers":
        from .bulk import _LabelSource
        out = SmallTableAnswers(self.ids, self.names, self.cols, self.scores, self._make,
                                _LabelSource(fetch, self.keys), self.rows)
        out._keys = self._keys
        return out


def _in_order(keys: list, final: np.ndarray) -> bool:
    """Are the rows already sorted by score (highest first), then by ``keys`` (primary first)?"""
    import numpy as np
    if len(final) < 2:
        return True
    if np.any(final[1:] > final[:-1]):
        return False
    open_ = final[1:] == final[:-1]      # pairs not yet decided
    for k in keys:
        if np.any(open_ & (k[1:] < k[:-1])):
            return False
        open_ &= k[1:] == k[:-1]
    return True


def _walk(cache: dict, view, key, path, start: int):
    got = cache.get((key, start))
    if got is None:
        if len(cache) > 64:
            cache.clear()
        got = cache[(key, start)] = PathWalk(view, path).run(start)
    return got
