"""The columnar semi-naive engine: every round over whole arrays (numpy), same results as the
reference engine of :mod:`thinkingdb.engine.closure`.

Facts live in :mod:`~thinkingdb.engine.colstore` indexes (sorted keys and fact ids per relation and
orientation) and per-fact columns (score, round, rule, provenance). Each round runs the
:class:`~thinkingdb.engine.plan.RoundPlan` the planner made from the current sizes: every pipeline
is a chain of vectorized joins (``searchsorted`` ranges expanded with ``repeat``/``cumsum``) over the
start premise's facts — all asserted facts in round 1, the previous round's delta after. Its rows
become candidates ``(head key, score, rule, extras)`` and go through:

* difference: heads asserted, or known with a score at least as high, are dropped (sorted search);
* reduce and apply (:mod:`~thinkingdb.engine.colreduce`): per head the winner of the reference
  engine's canonical choice; new facts get ids and ``round`` = depth, improved facts keep their old
  row; the new and improved facts are the next delta.

The planner's counts are :mod:`~thinkingdb.engine.colsizes`'; a goal-directed run admits heads
through :mod:`~thinkingdb.engine.coladmission`.

Scores are ``weight × premise₀ × premise₁ × …`` in premise order, the same float operations as the
reference engine, so scores compare equal, not just close. Bounds keep their meaning: ``max_depth``
runs one probing round; ``max_nodes`` drops heads outside the scope (only a rule constant can be);
``max_derived`` admits new facts in canonical order, and is also applied while a round accumulates
candidates (only the canonically first ``room`` new heads can survive, so pruning early is exact);
once a round's candidates were cut to the room, later new heads ranked after the room's last are
dropped as they are made. ``timeout_ms`` is checked between join steps and slices: a step never
makes more than ``ROWS`` rows at once; an unfinished round is dropped.
"""

from __future__ import annotations

import time

import numpy as np

from ..model import Limits, Var
from .coladmission import Admission
from .colreduce import ReduceApply
from .colresult import ColumnarResult
from .colsizes import Sizes
from .colstore import Facts, Grow, Index
from .graph import relation_arrays
from .plan import Pipeline, Program, plan_round, unsupported

__all__ = ["unsupported", "run_columnar", "Admission"]

CHUNK = 1 << 16         # start rows per pipeline chunk
COMPACT = 1 << 22       # candidate rows per head relation before an early reduce
ROWS = 1 << 20          # rows one join step makes at once (larger steps run over slices of their input)


class _Timeout(Exception):
    pass


_RANKS: list = [None]   # (the last graph rank list seen, its array); a graph caches its list per version


def _rank_array(ranks) -> np.ndarray:
    """``FactGraph.ranks()[0]`` as an int64 array, converted once per rank list (a range: arange)."""
    if isinstance(ranks, range):
        return np.arange(ranks.start, ranks.stop, ranks.step, dtype=np.int64)
    cached = _RANKS[0]
    if cached is None or cached[0] is not ranks:
        arr = np.asarray(ranks, dtype=np.int64)
        arr.flags.writeable = False
        cached = _RANKS[0] = (ranks, arr)
    return cached[1]


class _Run(ReduceApply):
    """One run's facts and state; a round's joins here, its reduce and apply in :mod:`.colreduce`."""

    def __init__(self, g, ids, rules, scope, limits: Limits, deadline, members=None) -> None:
        self.g, self.ids, self.rules, self.limits, self.deadline = g, ids, rules, limits, deadline
        self.program = Program.of(rules)
        self.rid = {k: ids.rel(k) for k in self.program.relations()}
        self.sym = {t: ids.sym(t) for r in rules for a in r.premises + (r.head,)
                    for t in (a.subject, a.object) if not isinstance(t, Var)}
        self.n = n = max(ids.n_syms, 1)
        self.ext_dtype = np.int32 if n < 2**31 else np.int64   # candidates' extras: symbol ids or -1
        self.scope = None if scope is None else np.frombuffer(bytes(scope), dtype=np.uint8).astype(bool)
        self.facts = Facts()
        self.so: dict[int, Index] = {}
        self.os: dict[int, Index] = {}
        self.asserted = 0
        for r in sorted(set(self.rid.values())):
            s, o, c = relation_arrays(g, r, self.scope, members)
            keys = s.astype(np.int64) * n + o
            order = np.argsort(keys)
            fids = self.facts.append(c[order], 0, -1, -1)
            self.so[r] = Index(n)
            self.so[r].add(keys[order], fids)
            self.asserted += len(keys)
        self.sizes = Sizes(self)
        names = sorted(r.name for r in rules)
        self.name_rank = np.array([names.index(r.name) for r in rules], dtype=np.int64)
        self.n_extras = [len(ir.extras) for ir in self.program.rules]
        self.ext_tables = {i: Grow(self.ext_dtype) for i, e in enumerate(self.n_extras) if e > 1}
        self.head_width: dict[int, int] = {}
        for ir in self.program.rules:
            h = self.rid[ir.rule.head.relation]
            self.head_width[h] = max(self.head_width.get(h, 0), len(ir.extras))
        self._ranks = None
        self.firings = 0
        self.n_derived = 0
        self.probing = False   # a depth probe must see every candidate: no pruning
        self.admit: Admission | None = None   # goal-directed: only demanded heads within their budget
        self.round = 0
        self.pruned = False    # this round's candidates were cut to the max_derived room
        self.cutoff: dict[int, tuple[int, int]] = {}   # head relation -> ranks of the room's last new head
        self._subjects: dict[int, np.ndarray] = {}     # head relation -> subjects of its facts (this round)

    # -- helpers -----------------------------------------------------------------------------------
    def tick(self) -> None:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise _Timeout

    def ranks(self) -> np.ndarray:
        """Canonical rank of every symbol id (rule constants unknown to the graph included)."""
        if self._ranks is None:
            ids = self.ids
            base = _rank_array(ids.g.ranks()[0])
            local = [ids.sym_rank(i) for i in range(len(base), self.n)]
            if not local:   # the graph's ranks are already a permutation of its ids
                self._ranks = base
                return base
            base = base.astype(np.float64)
            allr = np.concatenate([base, np.asarray(local, dtype=np.float64)]) if local else base
            self._ranks = np.empty(len(allr), dtype=np.int64)
            self._ranks[np.argsort(allr, kind="stable")] = np.arange(len(allr))
        return self._ranks

    def by_object(self, r: int) -> Index:
        ix = self.os.get(r)
        if ix is None:
            ix = self.os[r] = self.so[r].flipped()
        return ix

    # -- one pipeline --------------------------------------------------------------------------------
    def _value(self, t, env, m):
        return np.full(m, self.sym[t], dtype=np.int64) if not isinstance(t, Var) else env[t]

    def _start(self, pl: Pipeline, keys, fids):
        atom = pl.start.atom
        n = self.n
        s, o = keys // n, keys % n
        keep = None
        for t, col in ((atom.subject, s), (atom.object, o)):
            if not isinstance(t, Var):
                hit = col == self.sym[t]
                keep = hit if keep is None else keep & hit
        if atom.subject == atom.object and isinstance(atom.subject, Var):
            keep = (s == o) if keep is None else keep & (s == o)
        if keep is not None:
            s, o, fids = s[keep], o[keep], fids[keep]
        env = {}
        if isinstance(atom.subject, Var):
            env[atom.subject] = s
        if isinstance(atom.object, Var):
            env[atom.object] = o
        return env, {pl.start.premise: fids.astype(np.int64)}, len(fids)

    def _step(self, j, env, prem, m):
        atom, r, n = j.atom, self.rid[j.atom.relation], self.n
        if j.mode == "check":
            keys = self._value(atom.subject, env, m) * n + self._value(atom.object, env, m)
            fid = self.so[r].lookup(keys)
            keep = np.flatnonzero(fid >= 0)
            env = {v: a[keep] for v, a in env.items()}
            prem = {p: a[keep] for p, a in prem.items()}
            prem[j.premise] = fid[keep]
            return env, prem, len(keep)
        if j.mode == "scan":
            k, f = self.so[r].all()
            s, o = k // n, k % n
            if atom.subject == atom.object:
                sel = np.flatnonzero(s == o)
                s, o, f = s[sel], o[sel], f[sel]
            rows = np.repeat(np.arange(m), len(k if atom.subject != atom.object else s))
            idx = np.tile(np.arange(len(s)), m)
            env = {v: a[rows] for v, a in env.items()}
            prem = {p: a[rows] for p, a in prem.items()}
            env[atom.subject], env[atom.object] = s[idx], o[idx]
            prem[j.premise] = f[idx].astype(np.int64)
            return env, prem, len(rows)
        lead, free = (atom.subject, atom.object) if j.mode == "by_subject" else (atom.object, atom.subject)
        ix = self.so[r] if j.mode == "by_subject" else self.by_object(r)
        rows, other, fid = ix.expand(self._value(lead, env, m))
        env = {v: a[rows] for v, a in env.items()}
        prem = {p: a[rows] for p, a in prem.items()}
        env[free] = other
        prem[j.premise] = fid
        return env, prem, len(rows)

    def _candidates(self, pl: Pipeline, keys, fids, out: dict) -> None:
        """Run ``pl`` over the start facts ``(keys, fids)``; append surviving candidates to ``out``."""
        for c0 in range(0, max(len(keys), 1), CHUNK):
            self.tick()
            env, prem, m = self._start(pl, keys[c0:c0 + CHUNK], fids[c0:c0 + CHUNK])
            for env, prem, m in self._joined(pl, env, prem, m, 0):
                self._emit(pl, env, prem, m, out)

    def _fanout(self, j, env, m) -> np.ndarray | None:
        """Rows each input row becomes in join step ``j`` (None: a check, at most one)."""
        atom, r = j.atom, self.rid[j.atom.relation]
        if j.mode == "check":
            return None
        if j.mode == "scan":
            k, _ = self.so[r].all()
            width = len(k) if atom.subject != atom.object else int(np.count_nonzero(k // self.n == k % self.n))
            return np.full(m, width, dtype=np.int64)
        lead = atom.subject if j.mode == "by_subject" else atom.object
        ix = self.so[r] if j.mode == "by_subject" else self.by_object(r)
        lo_keys = self._value(lead, env, m) * self.n
        return sum((np.searchsorted(bk, lo_keys + self.n) - np.searchsorted(bk, lo_keys) for bk, _ in ix.blocks),
                   np.zeros(m, dtype=np.int64))

    def _joined(self, pl: Pipeline, env, prem, m, i: int):
        """The rows of ``pl`` after its join steps ``i..``, in batches: a step that would make more
        than ``ROWS`` rows at once runs over slices of its input (a cartesian step over 10k facts made
        100M rows in one piece), and the deadline is checked between slices."""
        steps = pl.steps
        while i < len(steps) and m:
            env, prem, m = self._early_cut(pl, env, prem, m)
            j = steps[i]
            fan = self._fanout(j, env, m) if m else None
            if fan is not None and m > 1 and int(fan.sum()) > ROWS:
                # a slice ends with the row that reaches the next multiple of ROWS: it makes fewer
                # than ROWS rows plus that row's own
                cum = np.cumsum(fan)
                ends = np.searchsorted(cum, np.arange(ROWS, int(cum[-1]), ROWS), side="left") + 1
                cuts = np.unique(np.concatenate([[0], np.minimum(ends, m), [m]])).tolist()
                for a, b in zip(cuts[:-1], cuts[1:]):
                    self.tick()
                    sub = self._step(j, {v: x[a:b] for v, x in env.items()}, {p: x[a:b] for p, x in prem.items()},
                                     b - a)
                    self.tick()
                    yield from self._joined(pl, *sub, i + 1)
                return
            env, prem, m = self._step(j, env, prem, m)
            self.tick()
            i += 1
        if m:
            yield env, prem, m

    def _early_cut(self, pl: Pipeline, env, prem, m):
        """Drop rows before they are joined further when their bound head subject already decides
        that every head they make is dropped in ``_emit``: not demanded (goal-directed, when the
        demand of the head relation is by subject only), or ranked after the max_derived room's last
        new head (only when every symbol is in scope, and never for a subject that already has a fact
        of the head relation: a derived one may still be improved)."""
        head = self.program.rules[pl.rule].rule.head
        if not isinstance(head.subject, Var) or head.subject not in env:
            return env, prem, m
        h = self.rid[head.relation]
        subj = env[head.subject]
        drop = None
        if self.admit is not None:
            budget = self.admit.subject_budget(h, subj)
            if budget is not None:
                drop = budget < self.round
        cut = self.cutoff.get(h)
        if cut is not None and self.scope is None:
            late = self.ranks()[subj] > cut[0]
            if h not in self._subjects:
                self._subjects[h] = np.unique(self.so[h].all()[0] // self.n)
            if len(self._subjects[h]):
                late &= ~np.isin(subj, self._subjects[h])
            drop = late if drop is None else drop | late
        if drop is None or not drop.any():
            return env, prem, m
        keep = np.flatnonzero(~drop)
        return {v: a[keep] for v, a in env.items()}, {p: a[keep] for p, a in prem.items()}, len(keep)

    def _emit(self, pl: Pipeline, env, prem, m, out: dict) -> None:
        """Candidates of joined rows: head keys, admission, scores, difference, the max_derived cutoff."""
        ir = self.program.rules[pl.rule]
        rule, n = ir.rule, self.n
        h = self.rid[rule.head.relation]
        width = self.head_width[h]
        score_col = self.facts.score.a
        self.firings += m
        hkey = self._value(rule.head.subject, env, m) * n + self._value(rule.head.object, env, m)
        keep = None
        if self.admit is not None:   # what the reference engine drops after the round, dropped now
            keep = self.admit.budget(h, hkey) >= self.round
        cut = self.cutoff.get(h)
        if cut is not None:          # new heads after the max_derived room's last one can never be kept
            rk = self.ranks()
            rs = rk[hkey // n]
            late = rs > cut[0]
            tie = np.flatnonzero(rs == cut[0])
            late[tie] = rk[hkey[tie] % n] > cut[1]
            if self.scope is not None:
                late &= self.scope[hkey // n] & self.scope[hkey % n]
            late &= self.so[h].lookup(hkey) < 0
            keep = ~late if keep is None else keep & ~late
        if keep is not None:
            keep = np.flatnonzero(keep)
            if len(keep) < m:
                hkey, m = hkey[keep], len(keep)
                env = {v: a[keep] for v, a in env.items()}
                prem = {p: a[keep] for p, a in prem.items()}
                if not m:
                    return
        score = np.full(m, rule.weight)
        for p in range(len(rule.premises)):
            score = score * score_col[prem[p]]
        del prem
        known = self.so[h].lookup(hkey)
        old = known >= 0
        if old.any():
            kf = known[old]
            better = np.zeros(m, dtype=bool)
            better[old] = (self.facts.round.a[kf] > 0) & (score[old] > score_col[kf])
            keep = np.flatnonzero(~old | better)
            if not len(keep):
                return
            hkey, score = hkey[keep], score[keep]
            env = {v: a[keep] for v, a in env.items()}
        ext = np.full((len(hkey), width), -1, dtype=self.ext_dtype)
        for i, v in enumerate(ir.extras):
            ext[:, i] = env[v]
        del env
        part = out.setdefault(h, [])
        part.append([hkey, score, np.full(len(hkey), pl.rule, dtype=np.int32), ext])
        del hkey, score, ext
        room = None if self.limits.max_derived is None else self.limits.max_derived - self.n_derived
        limit = COMPACT if room is None or self.probing else min(COMPACT, max(ROWS, 4 * room))
        if sum(len(p[0]) for p in part) > limit:
            out[h] = [list(self._reduce(part, prune=True, h=h))]

    def evaluate(self, plan, delta) -> dict:
        """Candidates of one round per head relation (reduced), after difference. A head relation
        is reduced as soon as its last pipeline of the round has run, so only one relation's
        unreduced candidates are held at a time."""
        out: dict[int, list] = {}
        self.pruned = False
        self.cutoff = {}
        self._subjects = {}
        head = [self.rid[self.program.rules[pl.rule].rule.head.relation] for pl in plan.pipelines]
        last = {h: i for i, h in enumerate(head)}
        done = {}
        for i, pl in enumerate(plan.pipelines):
            r = self.rid[pl.start.atom.relation]
            if delta is None:
                keys, fids = self.so[r].all()
            else:
                keys, fids = delta[r]
            self._candidates(pl, keys, fids, out)
            h = head[i]
            if last[h] == i and out.get(h):
                done[h] = self._reduce(out.pop(h))
        return dict(sorted(done.items()))

def run_columnar(g, ids, rules, scope, scope_list, truncated, limits: Limits, deadline, t0,
                 demand=None, probe: bool = True):
    """The closure of ``rules`` over ``g`` (see the module docstring); a
    :class:`~thinkingdb.engine.colresult.ColumnarResult` (``stats`` left for the caller).
    ``demand``: goal-directed, admit only demanded facts within their budgets; ``probe=False``: the
    demand already decided whether the depth bound cut anything (no probing round); its foreseen
    ``"depth"`` comes after every round, so a bound that cuts inside them is reported instead."""
    foreseen, truncated = (True, None) if truncated == "depth" else (False, truncated)
    run = _Run(g, ids, tuple(rules), scope, limits, deadline, scope_list)
    if demand is not None:
        run.admit = Admission(demand, run.n)
    rounds, delta = 0, None
    try:
        while True:
            sizes = None if delta is None else {ids.rel_key(r): len(v[0]) for r, v in delta.items()}
            run.round = rounds + 1
            if limits.max_depth is not None and rounds >= limits.max_depth:
                if not probe:
                    break
                plan = plan_round(run.program, rounds + 1, run.sizes, sizes)
                run.probing = True
                if run.evaluate(plan, delta):
                    truncated = truncated or "depth"
                break
            plan = plan_round(run.program, rounds + 1, run.sizes, sizes)
            cands = run.evaluate(plan, delta)
            rounds += 1
            if not cands:
                break
            delta, cut = run.apply(cands, rounds)
            truncated = truncated or cut
            if truncated == "derived" or not delta:
                break
    except _Timeout:
        truncated = truncated or "time"
    if foreseen:
        truncated = truncated or "depth"
    return ColumnarResult(g, ids, tuple(rules), run, truncated, rounds)
