"""What the planner of :mod:`thinkingdb.engine.columnar` knows about the facts of a run: a relation's
size, its fan-out from either end, how many facts match a premise with constants. The
:class:`~thinkingdb.engine.plan.RoundPlan` of each round is chosen from these counts; they are cached
per relation size, and a fan-out is recounted only when its relation's size doubles.
"""

from __future__ import annotations

import numpy as np

from ..model import Atom, Var

__all__ = ["Sizes"]


class Sizes:
    """The planner's view of the known facts (cached per relation size)."""

    def __init__(self, run) -> None:   # a columnar._Run
        self.run = run
        self.cache: dict = {}

    def size(self, relation: str) -> int:
        return len(self.run.so[self.run.rid[relation]])

    def fanout(self, relation: str, end: int) -> float:
        """Recounted only when the relation's size doubles (so never once per round)."""
        r = self.run.rid[relation]
        size = len(self.run.so[r])
        key = ("fan", r, end, size.bit_length())
        if key not in self.cache:
            ix = self.run.so[r] if end == 0 else self.run.os.get(r)
            if ix is not None:
                d = ix.distinct()
            else:
                k, _ = self.run.so[r].all()
                ends = np.sort(k % self.run.n)   # (np.unique would import numpy.ma: 1.3 MB)
                d = int(len(ends) > 0) + int(np.count_nonzero(ends[1:] != ends[:-1]))
            self.cache[key] = size / max(d, 1)
        return self.cache[key]

    def matches(self, atom: Atom) -> int:
        run = self.run
        r = run.rid[atom.relation]
        so = run.so[r]
        s, o = atom.subject, atom.object
        if isinstance(s, Var) and isinstance(o, Var):
            return len(so)
        key = ("match", atom, len(so) if not isinstance(s, Var) or r in run.os else len(so).bit_length())
        if key not in self.cache:
            if not isinstance(s, Var) and not isinstance(o, Var):
                c = int(so.lookup(np.array([run.sym[s] * run.n + run.sym[o]]))[0] >= 0)
            elif not isinstance(s, Var):
                c = so.count(run.sym[s])
            elif r in run.os:
                c = run.os[r].count(run.sym[o])
            else:
                k, _ = so.all()
                c = int(np.count_nonzero(k % run.n == run.sym[o]))
            self.cache[key] = c
        return self.cache[key]
