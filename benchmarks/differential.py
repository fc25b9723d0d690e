"""Differential hunt at scale: generated programs and questions, the goal-directed engines against an
independent naive oracle written here and against the full closure, in process and through a store.

Programs are ThinkingDB text (so the compiler is in the loop): up to 9 facts over 5 symbols and 4
relations with spread confidences; up to two declarations (transitive, symmetric, inverse,
subrelation_of); up to three rules of 1-3 premises with constants, premises sharing no variable,
heads with a constant no fact mentions (``knew``), optionally a ``not`` premise. Questions: 1-2
patterns with every binding pattern and property paths (``^``, ``/``, ``|``, ``+ * {m,n}``).

Targets (each case is one program and four questions):

* ``oracle``: answers and scores (best) under ``max_depth`` None, 0-3 against the naive fixpoint
  (rounds of every rule over the facts known; the best score over derivations of height <= d), and
  against the full closure; a run that reports no truncation must have the unbounded answers.
* ``limits``: every ``max_nodes`` / ``max_derived`` / ``max_rows`` setting, best and noisy-or: no
  answer the unbounded closure lacks, no best score above it, and no truncation-free run missing one.
* ``why``: ``why`` of every derivable fact (and of absent ones), goal-directed against the full
  closure (proof shape, scores, depths, alternatives) and the oracle's best score.
* ``store``: the program ingested into a fresh store; ``KnowledgeBase.query`` (best, noisy-or k = 1,
  2, 3, 5; ``max_depth`` None, 1, 2), ``stream`` with and without ``limit`` and ``why`` against the
  in-memory full closure, and every best proof re-checked with ``check_proof``.

Known differences left out of the comparison: which symbols a zero-step path (``r*``, ``r{0,n}``)
relates to themselves when a symbol exists only through rules (see the 2026-11-27 report). Rules and
declarations are read as a store reads them: over ``b`` of ``relation c inverse b`` they are over c
reversed (store.rulejson.orient_rules); a store refuses chained inverses (``relation c inverse a.
relation a inverse t.``), which the compiler accepts: those programs count as refused.

    python benchmarks/differential.py --cases 3000 --seed 0
    python benchmarks/differential.py --cases 400 --targets store --negation
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]   # benchmarks/lexical.py shadows lexical

from thinkingdb.engine.graph import FactGraph  # noqa: E402
from thinkingdb.engine.proofs import check_proof  # noqa: E402
from thinkingdb.engine.query import evaluate, why  # noqa: E402
from thinkingdb.engine.rules import compile_declarations  # noqa: E402
from thinkingdb.errors import ThinkingDBError  # noqa: E402
from thinkingdb.store.rulejson import orient_rules  # noqa: E402
from thinkingdb.language import compile_source, parse_query  # noqa: E402
from thinkingdb.normalize import Vocabulary  # noqa: E402
from thinkingdb.model import Fact, Limits, PathAlt, PathInv, PathRel, PathRepeat, PathSeq, Triple, Var  # noqa: E402

SYMS = ["n1", "n2", "n3", "n4", "n5"]
HEAD_ONLY = "knew"
RELS = ["a", "b", "c", "t"]
TARGETS = ("oracle", "limits", "why", "store")


# -- generators ------------------------------------------------------------------------------------

def gen_program(rng: random.Random, negation: bool = False) -> str:
    lines = [f"{rng.choice(SYMS)} {rng.choice(RELS)} {rng.choice(SYMS)}{rng.choice(['', '', '', ' @0.9', ' @0.5', ' @0.3'])}."
             for _ in range(rng.randint(0, 9))]
    for _ in range(rng.randint(0, 2)):
        kind, r = rng.choice(["transitive", "symmetric", "inverse", "subrelation_of"]), rng.choice(RELS)
        other = f" {rng.choice([x for x in RELS if x != r] + ['h'])}" if kind in ("inverse", "subrelation_of") else ""
        lines.append(f"relation {r} {kind}{other}.")
    for i in range(rng.randint(0, 3)):
        n = rng.randint(1, 3)
        vs = ["?x", "?y", "?z", "?w"][:n + 1]
        prem = [(rng.choice(vs + vs + [rng.choice(SYMS)]), rng.choice(RELS + ["h"]), rng.choice(vs + vs + [rng.choice(SYMS)]))
                for _ in range(n)]
        body = sorted({t for p in prem for t in (p[0], p[2]) if t.startswith("?")})
        pick = (lambda: rng.choice(body * 3 + [SYMS[0], HEAD_ONLY])) if body else (lambda: rng.choice([SYMS[0], HEAD_ONLY]))
        head = (pick(), rng.choice(RELS + ["h"]), pick())
        neg = [f"not {rng.choice(body)} {rng.choice(RELS + ['h'])} {rng.choice(body + [SYMS[0], '?_'])}"] \
            if negation and body and rng.random() < 0.5 else []
        weight = rng.choice(["", "", " @0.5", " @0.9"])
        lines.append(f"rule r{i}{weight}: {', '.join([' '.join(p) for p in prem] + neg)} => {' '.join(head)}.")
    return "\n".join(lines) + "\n"


def gen_path(rng: random.Random, depth: int = 0) -> str:
    x = rng.random()
    if depth >= 2 or x < 0.45:
        return rng.choice(RELS + ["h"])
    if x < 0.55:
        return "^" + gen_path(rng, depth + 1)
    if x < 0.68:
        return f"({gen_path(rng, depth + 1)}/{gen_path(rng, depth + 1)})"
    if x < 0.8:
        return f"({gen_path(rng, depth + 1)}|{gen_path(rng, depth + 1)})"
    return f"({gen_path(rng, depth + 1)}){rng.choice(['+', '*', '{1,2}', '{0,1}', '{2}', '{2,}', '{0,3}'])}"


def gen_query(rng: random.Random) -> str:
    term = lambda: rng.choice(["?u", "?v", "?w", "?u", "?v"] + SYMS[:3] + [HEAD_ONLY])  # noqa: E731
    return "? " + ", ".join(f"{term()} {gen_path(rng)} {term()}" for _ in range(rng.choice([1, 1, 1, 2]))) + "."


# -- the oracle --------------------------------------------------------------------------------------

def _match(atom, fact, env):
    env = dict(env)
    for t, v in ((atom.subject, fact[0]), (atom.object, fact[2])):
        if isinstance(t, Var):
            if t.name.startswith("_"):
                continue
            if env.setdefault(t, v) != v:
                return None
        elif t != v:
            return None
    return env


def _round(asserted: dict, cur: dict, rules) -> dict:
    """One naive round: every rule over the facts of ``cur``; asserted facts keep their confidence."""
    nxt, by_rel = dict(asserted), {}
    for f, s in cur.items():
        by_rel.setdefault(f[1], []).append((f, s))
    for rule in rules:
        envs = [({}, rule.weight)]
        for p in rule.premises:
            envs = [(e, sc * s) for env, sc in envs for f, s in by_rel.get(p.relation, ())
                    for e in [_match(p, f, env)] if e is not None]
        for env, sc in envs:
            if any(_match(p, f, env) is not None for p in rule.negated for f, _ in by_rel.get(p.relation, ())):
                continue
            b = lambda t: env[t] if isinstance(t, Var) else t  # noqa: E731
            h = (b(rule.head.subject), rule.head.relation, b(rule.head.object))
            if h not in asserted and sc > nxt.get(h, -1.0):
                nxt[h] = sc
    return nxt


def _strata(rules):
    import networkx as nx
    g = nx.DiGraph()
    for r in rules:
        g.add_node(r.head.relation)
        g.add_edges_from((a.relation, r.head.relation) for a in r.premises + r.negated)
    cond = nx.condensation(g)
    pos = {c: i for i, c in enumerate(nx.topological_sort(cond))}
    groups: dict[int, list] = {}
    for r in rules:
        groups.setdefault(pos[cond.graph["mapping"][r.head.relation]], []).append(r)
    return [groups[k] for k in sorted(groups)]


def oracle_closure(facts: dict, rules, depth: int | None = None) -> dict:
    """{triple: best score over derivations of height <= depth}; with ``not`` premises (no depth):
    stratum by stratum to a fixpoint."""
    if any(r.negated for r in rules):
        cur = dict(facts)
        for group in _strata(rules):
            while True:
                nxt = _round(facts, cur, group)
                for k, v in cur.items():
                    nxt[k] = max(nxt.get(k, v), v)
                if nxt == cur:
                    break
                cur = nxt
        return cur
    cur = dict(facts)
    for d in range(10**6):
        if depth is not None and d == depth:
            return cur
        nxt = _round(facts, cur, rules)
        if nxt == cur:
            return cur
        cur = nxt
    raise AssertionError("unreachable")


def _compose(a: dict, b: dict) -> dict:
    by: dict = {}
    for (x, y), s in b.items():
        by.setdefault(x, []).append((y, s))
    out: dict = {}
    for (x, y), s in a.items():
        for z, t in by.get(y, ()):
            if s * t > out.get((x, z), -1):
                out[(x, z)] = s * t
    return out


def _best(*maps) -> dict:
    out: dict = {}
    for m in maps:
        for k, v in m.items():
            if v > out.get(k, -1):
                out[k] = v
    return out


def path_pairs(path, closed: dict, symbols) -> dict:
    """{(s, o): best walk score} of a property path over the closed facts (max-product semiring)."""
    if isinstance(path, PathRel):
        return {(s, o): sc for (s, r, o), sc in closed.items() if r == path.relation}
    if isinstance(path, PathInv):
        return {(o, s): sc for (s, o), sc in path_pairs(path.path, closed, symbols).items()}
    if isinstance(path, PathSeq):
        out = path_pairs(path.parts[0], closed, symbols)
        for p in path.parts[1:]:
            out = _compose(out, path_pairs(p, closed, symbols))
        return out
    if isinstance(path, PathAlt):
        return _best(*(path_pairs(p, closed, symbols) for p in path.options))
    step = path_pairs(path.path, closed, symbols)
    power = {(x, x): 1.0 for x in symbols}
    for _ in range(path.min):
        power = _compose(power, step)
    out, k = dict(power), path.min
    while path.max is None or k < path.max:
        power, k = _compose(power, step), k + 1
        grown = _best(out, power)
        if grown == out and path.max is None:
            break
        out = grown
    return out


def nullable(p) -> bool:
    if isinstance(p, PathRel):
        return False
    if isinstance(p, PathInv):
        return nullable(p.path)
    if isinstance(p, PathSeq):
        return all(nullable(x) for x in p.parts)
    if isinstance(p, PathAlt):
        return any(nullable(x) for x in p.options)
    return p.min == 0 or nullable(p.path)


def oracle_query(q, closed: dict, asserted: dict) -> dict:
    symbols = {x for (s, _, o) in closed for x in (s, o)}
    rows = [({}, 1.0)]
    for p in q.patterns:
        pairs = path_pairs(p.path, closed, symbols)
        rows = [(e, sc * v) for env, sc in rows for (s, o), v in pairs.items()
                for e in [_match(p, (s, None, o), env)] if e is not None]
    out: dict = {}
    for env, sc in rows:
        key = tuple(sorted((k.name, v) for k, v in env.items() if not k.name.startswith("_")))
        out[key] = max(out.get(key, -1), sc)
    return _comparable(q, out, asserted)


def _comparable(q, answers: dict, asserted: dict) -> dict:
    """Leave out answers naming a symbol no asserted fact holds when a path can match zero steps
    (which of those a zero-step walk relates to itself is the known difference above)."""
    if not any(nullable(p.path) for p in q.patterns):
        return answers
    known = {x for (s, _, o) in asserted for x in (s, o)}
    return {k: v for k, v in answers.items() if all(x in known for _, x in k)}


def got(res) -> dict:
    return {tuple(sorted(a.bindings.items())): a.score for a in res.answers}


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(math.isclose(a[k], b[k], rel_tol=1e-9, abs_tol=1e-12) for k in a)


# -- targets -------------------------------------------------------------------------------------------

class Case:
    def __init__(self, seed: int, negation: bool):
        rng = random.Random(seed)
        self.text = gen_program(rng, negation)
        self.queries = [gen_query(rng) for _ in range(4)]
        self.vocab = Vocabulary()   # its inverses apply to the questions too, as a store's do
        prog = compile_source(self.text, vocab=self.vocab)   # ParseError: a refused program, not a case
        if not (prog.facts or prog.rules or prog.declarations):
            raise ThinkingDBError("an empty program")
        if any(c in self.vocab.inverses for c in self.vocab.inverses.values()):
            raise ThinkingDBError("chained inverses, which a store refuses")
        # as a store reads them: b of `relation c inverse b` is c reversed in every rule and declaration
        self.rules = orient_rules(tuple(r for r, _ in prog.rules) + compile_declarations(
            [d for d, _ in prog.declarations if d.kind != "inverse"]), self.vocab.inverses)
        self.facts: dict = {}
        for f, _ in prog.facts:
            t = (f.triple.subject, f.triple.relation, f.triple.object)
            self.facts[t] = max(self.facts.get(t, 0.0), f.confidence)
        self.graph = FactGraph([Fact(s, r, o, c) for (s, r, o), c in self.facts.items()])
        self.negation = any(r.negated for r in self.rules)


def target_oracle(c: Case, work: str) -> list[str]:
    out = []
    full_closed = oracle_closure(c.facts, c.rules)
    for depth in (None,) if c.negation else (None, 0, 1, 2, 3):
        closed = oracle_closure(c.facts, c.rules, depth)
        for qt in c.queries:
            q = parse_query(qt, c.vocab)
            res = evaluate(q, c.graph, c.rules, limits=Limits(max_depth=depth))
            full = got(evaluate(q, c.graph, c.rules, limits=Limits(max_depth=depth), goal_directed=False))
            if not same(got(res), full):
                out.append(f"{qt} depth={depth}: goal-directed {sorted(got(res).items())} full {sorted(full.items())}")
                continue
            mine, want = _comparable(q, got(res), c.facts), oracle_query(q, closed, c.facts)
            if not same(mine, want):
                out.append(f"{qt} depth={depth} truncated={res.truncated}: {sorted(mine.items())} oracle {sorted(want.items())}")
            elif res.truncated is None and depth is not None and not same(want, oracle_query(q, full_closed, c.facts)):
                out.append(f"{qt} depth={depth}: answers missing with truncated None")
    return out


def target_limits(c: Case, work: str) -> list[str]:
    out = []
    bounds = [Limits(max_nodes=n) for n in (1, 2, 3, 5, 8)] + [Limits(max_derived=n) for n in (0, 1, 2, 5)] + \
        [Limits(max_rows=n) for n in (1, 2, 5)] + [Limits(max_derived=2_000_000, timeout_ms=30_000, max_rows=1_000_000)]
    for qt in c.queries:
        q = parse_query(qt, c.vocab)
        for agg in ("best", "noisy-or"):
            ref = got(evaluate(q, c.graph, c.rules, aggregate=agg, k=2, goal_directed=False))
            for lim in bounds:
                res = evaluate(q, c.graph, c.rules, limits=lim, aggregate=agg, k=2)
                mine = got(res)
                if res.truncated is None and not same(mine, ref):
                    out.append(f"{qt} {lim} {agg}: answers missing with truncated None")
                if set(mine) - set(ref):
                    out.append(f"{qt} {lim} {agg}: answers the unbounded closure lacks {sorted(set(mine) - set(ref))}")
                if agg == "best" and any(v > ref.get(k, 1.0) + 1e-12 for k, v in mine.items()):
                    out.append(f"{qt} {lim}: a score above the unbounded one")
    return out


def _shape(p):
    if p is None:
        return None
    return (p.kind, p.rule, round(p.score, 12), p.depth, tuple(_shape(x) for x in p.premises),
            tuple(_shape(a) for a in p.alternatives or ()))


def target_why(c: Case, work: str) -> list[str]:
    if c.negation:
        return []
    out, full = [], oracle_closure(c.facts, c.rules)
    for t in list(full)[:12] + [("n1", "a", "n5"), (HEAD_ONLY, "b", "n1")]:
        tr = Triple(*t)
        for depth in (None, 1, 2):
            for alts in (0, 2):
                a = why(tr, c.graph, c.rules, limits=Limits(max_depth=depth), alternatives=alts)
                b = why(tr, c.graph, c.rules, limits=Limits(max_depth=depth), alternatives=alts, goal_directed=False)
                if _shape(a) != _shape(b):
                    out.append(f"why {tr} depth={depth} alternatives={alts}: goal-directed {_shape(a)} full {_shape(b)}")
        a, want = why(tr, c.graph, c.rules), full.get(t)
        if (a is None) != (want is None) or (a is not None and not math.isclose(a.score, want, rel_tol=1e-9)):
            out.append(f"why {tr}: {None if a is None else a.score}, oracle {want}")
    return out


def target_store(c: Case, work: str) -> list[str]:
    from thinkingdb.api import open_kb
    src, out = os.path.join(work, "p.tdb"), []
    with open(src, "w", encoding="utf-8") as fh:
        fh.write(c.text)
    with open_kb(os.path.join(work, "kb.sqlite"), default_rules=False) as kb:
        kb.ingest([src])
        for qt in c.queries:
            q = parse_query(qt, c.vocab)
            for depth in (None, 1, 2):
                for agg, k in (("best", 1), ("noisy-or", 1), ("noisy-or", 2), ("noisy-or", 3), ("noisy-or", 5)):
                    lim = Limits(max_depth=depth, max_derived=2_000_000, timeout_ms=30_000, max_rows=1_000_000)
                    res = kb.query(qt, limits=lim, aggregate=agg, k=k)
                    ref = got(evaluate(q, c.graph, c.rules, limits=Limits(max_depth=depth), aggregate=agg, k=k,
                                       goal_directed=False))
                    if not same(got(res), ref):
                        out.append(f"{qt} depth={depth} {agg} k={k}: store {sorted(got(res).items())} in memory {sorted(ref.items())}")
                    if agg == "best":
                        for a in list(res.answers)[:5]:
                            for p in a.proof if isinstance(a.proof, tuple) else (a.proof,):
                                bad = check_proof(p, c.rules, lambda t: c.facts.get((t.subject, t.relation, t.object)))
                                if bad:
                                    out.append(f"{qt}: a proof does not check: {bad[:2]}")
            ref = got(evaluate(q, c.graph, c.rules, goal_directed=False))
            streamed = {tuple(sorted(a.bindings.items())): a.score for a in kb.stream(qt)}
            if not same(streamed, ref):
                out.append(f"{qt}: stream {sorted(streamed.items())} in memory {sorted(ref.items())}")
            for n in (1, 2):
                first = list(kb.stream(qt, limit=n))
                if len(first) != min(n, len(ref)) or any(
                        not math.isclose(a.score, ref.get(tuple(sorted(a.bindings.items())), -1.0)) for a in first):
                    out.append(f"{qt}: stream limit={n} gave {[(a.bindings, a.score) for a in first]}")
        if not c.negation:
            full = oracle_closure(c.facts, c.rules)
            for t in list(full)[:25]:
                p = kb.why(f"{t[0]} {t[1]} {t[2]}")
                if p is None or not math.isclose(p.score, full[t], rel_tol=1e-9):
                    out.append(f"why {t}: {None if p is None else p.score}, oracle {full[t]}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=500, help="generated programs per target")
    ap.add_argument("--seed", type=int, default=0, help="the first program's seed (programs seed, seed+1, ...)")
    ap.add_argument("--targets", nargs="*", choices=TARGETS, default=list(TARGETS))
    ap.add_argument("--negation", action="store_true", help="rules may have a 'not' premise")
    ap.add_argument("--show", type=int, default=3, help="failing cases printed per target")
    args = ap.parse_args(argv)
    sys.path.append(str(HERE))
    from machine import describe
    print(f"# differential: {args.cases} programs per target from seed {args.seed}, negation {args.negation}; {describe()}")
    print(f"{'target':<8} {'programs':>9} {'refused':>8} {'failing':>8} {'seconds':>8}")
    failing_total = 0
    for name in args.targets:
        run = globals()[f"target_{name}"]
        t0, refused, failing, shown = time.perf_counter(), 0, 0, []
        for seed in range(args.seed, args.seed + args.cases):
            try:
                case = Case(seed, args.negation)
            except ThinkingDBError:
                refused += 1
                continue
            work = tempfile.mkdtemp(prefix="tdb-differential-")
            try:
                problems = run(case, work)
            except Exception:  # noqa: BLE001 - a crash is a finding
                problems = ["crash: " + traceback.format_exc()[-1200:]]
            finally:
                shutil.rmtree(work, ignore_errors=True)
            if problems:
                failing += 1
                if len(shown) < args.show:
                    shown.append(f"## {name}, seed {seed}\n{case.text}{problems[0]}")
        failing_total += failing
        print(f"{name:<8} {args.cases:>9} {refused:>8} {failing:>8} {time.perf_counter() - t0:>8.1f}", flush=True)
        for s in shown:
            print(s)
    return 1 if failing_total else 0


if __name__ == "__main__":
    sys.exit(main())
