"""Whole answer sets of a pattern with both ends free over a closed relation (issue 21).

``? ?x next ?z.`` under ``relation next transitive.`` has an answer for every pair ``x``, ``z`` with
``z`` reachable from ``x``: 500,500 of them on a 1,000-node chain. The general evaluator
(:func:`thinkingdb.engine.query.evaluate`) walks from every symbol and keeps a dict, a score and a
proof builder per answer (15.7 s and 1.1 GB there). :func:`pair_answers` reads the pairs off the
reach sets the closure already holds (:mod:`thinkingdb.engine.reachsets`): two id columns, sorted
by key in numpy, handed back as a :class:`~thinkingdb.engine.bulk.TableAnswers` (one column for
``?x P ?x``: a :class:`~thinkingdb.engine.bulk.BulkAnswers`) that makes each answer when it is read
and its proof when that is read (24 bytes an answer until then).

It applies to one pattern ``?x P ?y`` (or ``?x P ?x``), ``aggregate="best"``, where ``P`` is one
relation ``R`` (maybe inverted) as ``R``, ``R+`` or ``R*``, ``R`` is closed by the transitive fast
path (:mod:`thinkingdb.engine.transitive` or, goal-directed, :mod:`thinkingdb.engine.reach`) over
the whole graph, and every fact of ``R`` scores 1. Then every answer scores 1, and its proof is the
one the general evaluator builds from the same view: the closed fact ``x R y`` (one step), or none
for the zero-step ``x R* x``. The bounds are those of the general evaluator's walks, one per start
symbol: ``"nodes"`` when a start's walk would see more than ``max_nodes`` symbols (one step: the
start and its new neighbours; ``+``/``*``: its answers), ``"time"`` when the deadline passed or cut
the reach sets short; ``max_derived`` is the closure's (over it, the general engines run).
Anything else returns None and the general evaluator runs.

>>> from thinkingdb.engine.graph import FactGraph
>>> from thinkingdb.engine.query import evaluate
>>> from thinkingdb.engine.rules import compile_declarations
>>> from thinkingdb.model import Declaration, Fact, PathRel, Query, QueryPattern, Var
>>> g = FactGraph([Fact("a", "r", "b"), Fact("b", "r", "c")])
>>> rules = compile_declarations([Declaration("r", "transitive")])
>>> res = evaluate(Query((QueryPattern(Var("x"), PathRel("r"), Var("y")),)), g, rules)
>>> [(a.bindings["x"], a.bindings["y"], a.score) for a in res.answers]
[('a', 'b', 1.0), ('a', 'c', 1.0), ('b', 'c', 1.0)]
>>> res.answers[1].proof.rule, res.answers[1].proof.depth
('r_transitive', 1)
"""

from __future__ import annotations

import time

import numpy as np

from ..model import Limits, Query, Var
from .answers import _proofs_builder
from .bfs import rank_array
from .bulk import BulkAnswers, TableAnswers
from .paths import _simple
from .reachsets import _gather

__all__ = ["pair_answers"]


def pair_answers(view, query: Query, limits: Limits, deadline: float | None,
                 aggregate: str) -> tuple[TableAnswers | BulkAnswers, str | None] | None:
    """The answers of ``query`` over ``view`` and the bound that cut them, or None when this module
    does not answer that shape exactly (see the module docstring)."""
    if aggregate != "best" or len(query.patterns) != 1:
        return None
    pat = query.patterns[0]
    simple = _simple(pat.path)
    if simple is None or not (isinstance(pat.subject, Var) and isinstance(pat.object, Var)):
        return None
    rel, fwd, lo, hi = simple
    if not (lo == hi == 1 or (lo in (0, 1) and hi is None)):
        return None
    ids = view.ids
    n = len(view.g._syms)
    r = ids.find_rel(rel)
    if r is None or ids.n_syms != n:
        return None
    closed = getattr(view, "_rels", {}).get(r) if hasattr(view, "closed_ones") else None
    if closed is None or not closed.all_ones or getattr(closed, "scope", None) is not None:
        return None
    sets = closed.full().sets if hasattr(closed, "full") else closed.sets
    nodes = np.flatnonzero(sets.comp >= 0)
    comp = sets.comp[nodes]
    lens = sets.length[comp]
    u = np.repeat(nodes.astype(np.int64), lens)
    v = _gather(sets.buf, sets.start[comp], lens).astype(np.int64)
    s, o = (u, v) if fwd else (v, u)          # the walk starts at the subject variable
    looped = np.zeros(n, bool)
    looped[s[s == o]] = True
    count = np.bincount(s, minlength=n) if len(s) else np.zeros(n, np.int64)
    truncated = view.truncated
    if limits.max_nodes is not None and n:
        seen = count + 1 - looped if hi == 1 else count + ((lo == 0) & ~looped)
        if int(seen.max()) > limits.max_nodes:
            truncated = truncated or "nodes"
    if deadline is not None and time.perf_counter() > deadline:
        truncated = truncated or "time"
    if lo == 0:                                # R*: every symbol reaches itself in zero steps
        alone = np.flatnonzero(~looped)
        s, o = np.concatenate([s, alone]), np.concatenate([o, alone])
    same = pat.subject == pat.object
    if same:
        s = o = s[s == o]
    rank = rank_array(view.g)
    order = np.lexsort((o, s) if rank is None else (rank[o], rank[s]))
    s, o = s[order], o[order]
    path = pat.path

    def proofs(a: int, b: int | None = None):
        b = a if b is None else b
        if lo == 0 and a == b:
            steps = list
        else:
            key = (a, r, b) if fwd else (b, r, a)
            steps = (lambda: [key])
        return _proofs_builder(view, path, a, b, 1.0, steps, 1)

    if same:
        return BulkAnswers(ids, pat.subject.name, s, np.ones(len(s)), proofs), truncated

    def make(row: list, score: float):
        build = proofs(row[0], row[1])
        return score, lambda: build()[0]
    return TableAnswers(ids, (pat.subject.name, pat.object.name), [s, o], np.ones(len(s)), make), truncated
