"""What the columnar engine returns: a :class:`~thinkingdb.engine.results.ClosureResult` look-alike
over its arrays (scores, depths and proofs read from the fact columns; nothing copied into dicts).

A derived fact's depth is the round that made its current row; its proof is rebuilt from the row's
rule and extras (the premise keys follow from the head and the extras), each premise taken as it
stood one round earlier (``Facts.version``), which is exactly the proof the reference engine keeps.
"""

from __future__ import annotations

import numpy as np

from ..model import Var
from .proofs import Proof
from .results import FactView, _DerivedView

__all__ = ["ColumnarResult"]


class _DIn:
    """What :func:`thinkingdb.engine.query._all_starts` reads as ``view._store.d_in``."""

    def __init__(self, res: "ColumnarResult") -> None:
        self._res = res

    @property
    def d_in(self) -> "_DIn":
        return self

    def get(self, r, default=None):
        run = self._res._run
        if r not in run.so:
            return default
        k, f = run.so[r].merged()
        d = run.facts.round.a[f] > 0
        return np.unique(k[d] % run.n).tolist() or default


class ColumnarResult(FactView):
    """Closure facts held by the columnar engine's indexes; ``stats`` is set by the caller."""

    def __init__(self, g, ids, rules, run, truncated, rounds: int) -> None:
        self.g, self.ids, self.rules = g, ids, rules
        self._run, self.truncated, self.rounds = run, truncated, rounds
        self.stats = None

    @property
    def _store(self) -> _DIn:   # a fresh object each time: a stored one would make a reference cycle
        return _DIn(self)

    @property
    def derived(self):
        return _DerivedView(self)

    @property
    def derived_count(self) -> int:
        return self._run.n_derived

    def derived_keys(self):
        run = self._run
        for r, ix in run.so.items():
            k, f = ix.merged()
            k = k[run.facts.round.a[f] > 0]
            for s, o in zip((k // run.n).tolist(), (k % run.n).tolist()):
                yield (s, r, o)

    def _fid(self, key) -> int:
        run = self._run
        s, r, o = key
        if r not in run.so or s >= run.n or o >= run.n:
            return -1
        k, f = run.so[r].merged()
        want = s * run.n + o
        i = int(np.searchsorted(k, want))
        return int(f[i]) if i < len(k) and int(k[i]) == want else -1

    def _derived_fid(self, key) -> int:
        f = self._fid(key)
        return f if f >= 0 and self._run.facts.round.a[f] > 0 else -1

    def is_derived(self, key) -> bool:
        return self._derived_fid(key) >= 0

    def fact_score(self, key):
        c = self.asserted(key)
        if c is not None:
            return c
        f = self._derived_fid(key)
        return None if f < 0 else float(self._run.facts.score.a[f])

    def depth(self, triple):
        key = self.ids.key(triple)
        if key is None:
            return None
        if self.asserted(key) is not None:
            return 0
        f = self._derived_fid(key)
        return None if f < 0 else int(self._run.facts.round.a[f])

    def fact_proof(self, key):
        c = self.asserted(key)
        if c is not None:
            return Proof.asserted(self.ids.triple(key), c)
        f = self._derived_fid(key)
        return None if f < 0 else self._build(key, int(self._run.facts.round.a[f]))

    def step(self, key):
        """The best derivation of a derived fact one step deep: its rule and its premises' keys (None
        when ``key`` is not derived); no proof tree is built (``materialize`` writes this)."""
        f = self._derived_fid(key)
        if f < 0:
            return None
        _, _, rule_idx, aux = self._run.facts.version(f, int(self._run.facts.round.a[f]))
        return self.rules[rule_idx], self._premises(rule_idx, key, aux)

    def derived_arrays(self):
        """Every derived fact's best derivation in bulk, one group per (relation, rule): yields
        ``(s, r, o, score, depth, rule_idx, prems)`` with ``s``/``o``/``score``/``depth`` arrays,
        ``r``/``rule_idx`` ints and ``prems`` an int array (rows × premises × 3 of s, r, o ids) —
        the same rows :meth:`step` gives one at a time, without a Python object per fact."""
        run = self._run
        fa = run.facts
        for r, ix in run.so.items():
            k, f = ix.merged()
            keep = fa.round.a[f] > 0
            k, f = k[keep], f[keep]
            rule = fa.rule.a[f]
            for ri in np.unique(rule).tolist():
                sel = rule == ri
                fs = f[sel]
                s, o = k[sel] // run.n, k[sel] % run.n
                yield (s, r, o, fa.score.a[fs], fa.round.a[fs], ri,
                       self._premise_arrays(ri, s, o, fa.aux.a[fs]))

    def _premise_arrays(self, rule_idx: int, s: np.ndarray, o: np.ndarray, aux: np.ndarray) -> np.ndarray:
        """:meth:`_premises` for many heads of one rule at once."""
        run = self._run
        ir = run.program.rules[rule_idx]
        h = ir.rule.head
        e = run.n_extras[rule_idx]
        if e == 0:
            ext = np.zeros((len(s), 0), dtype=np.int64)
        elif e == 1:
            ext = aux.reshape(-1, 1)
        else:
            ext = run.ext_tables[rule_idx].view.reshape(-1, e)[aux]   # (the capacity need not divide by e)
        env: dict = {v: ext[:, i] for i, v in enumerate(ir.extras)}
        if isinstance(h.subject, Var):
            env[h.subject] = s
        if isinstance(h.object, Var):
            env[h.object] = o
        out = np.empty((len(s), len(ir.rule.premises), 3), dtype=np.int64)
        for j, p in enumerate(ir.rule.premises):
            out[:, j, 0] = env[p.subject] if isinstance(p.subject, Var) else run.sym[p.subject]
            out[:, j, 1] = run.rid[p.relation]
            out[:, j, 2] = env[p.object] if isinstance(p.object, Var) else run.sym[p.object]
        return out

    def _premises(self, rule_idx: int, key, aux: int) -> list[tuple[int, int, int]]:
        run = self._run
        ir = run.program.rules[rule_idx]
        h = ir.rule.head
        env: dict = dict(zip(ir.extras, run.extras(rule_idx, aux)))
        if isinstance(h.subject, Var):
            env[h.subject] = key[0]
        if isinstance(h.object, Var):
            env[h.object] = key[2]

        def val(t):
            return env[t] if isinstance(t, Var) else run.sym[t]
        return [(val(p.subject), run.rid[p.relation], val(p.object)) for p in ir.rule.premises]

    def _build(self, root_key, limit: int) -> Proof:
        """The proof of ``root_key`` as it stood after round ``limit`` (iterative, memoised)."""
        facts = self._run.facts
        memo: dict[tuple, Proof] = {}

        def ident(key, lim):
            if self.asserted(key) is not None:
                return key, 0
            return key, facts.version(self._fid(key), lim)[0]

        root = ident(root_key, limit)
        stack = [root]
        while stack:
            node = stack[-1]
            if node in memo:
                stack.pop()
                continue
            key, d = node
            c = self.asserted(key)
            if c is not None:
                memo[node] = Proof.asserted(self.ids.triple(key), c)
                stack.pop()
                continue
            _, _, rule_idx, aux = facts.version(self._fid(key), d)
            children = [ident(p, d - 1) for p in self._premises(rule_idx, key, aux)]
            missing = [ch for ch in children if ch not in memo]
            if missing:
                stack.extend(missing)
                continue
            rule = self.rules[rule_idx]
            memo[node] = Proof.derived(self.ids.triple(key), rule.name, rule.weight,
                                       tuple(memo[ch] for ch in children))
            stack.pop()
        return memo[root]

    # -- by id (queries) ---------------------------------------------------------------------------
    def _range(self, ix, v: int):
        run = self._run
        k, f = ix.merged()
        lo, hi = np.searchsorted(k, [v * run.n, (v + 1) * run.n])
        k, f = k[lo:hi], f[lo:hi]
        d = run.facts.round.a[f] > 0
        return (k[d] % run.n).tolist(), run.facts.score.a[f[d]].tolist()

    def out(self, r: int, s: int) -> dict[int, float]:
        res = super().out(r, s)
        run = self._run
        if r in run.so and s < run.n:
            res.update(zip(*self._range(run.so[r], s)))
        return res

    def inn(self, r: int, o: int) -> dict[int, float]:
        res = super().inn(r, o)
        run = self._run
        if r in run.so and o < run.n:
            res.update(zip(*self._range(run.by_object(r), o)))
        return res

    def subjects(self, r: int) -> list[int]:
        run = self._run
        extra: list[int] = []
        if r in run.so:
            k, f = run.so[r].merged()
            extra = np.unique(k[run.facts.round.a[f] > 0] // run.n).tolist()
        return sorted(set(super().subjects(r)) | set(extra))
