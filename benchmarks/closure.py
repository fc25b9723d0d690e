"""Closure benchmarks, side by side in one run (issues 3 and 14).

    python benchmarks/closure.py --data ../shared/data [--runs 5] [--sizes 10000 100000 1000000]
                                 [--skip-clingo] [--skip-nemo] [--queries 200] [--only go generated rules fresh]
                                 [--kinds random scale-free] [--baseline /tmp/old-checkout]

1. GO full closure, "ancestor over all relations", checked against closure_ancestors.tsv.gz;
   thinkingdb vs clingo vs Nemo (nemo-python) vs networkx.transitive_closure_dag.
2. Generated layered DAGs (fixed seeds; parameters printed): transitive closure and the composition
   rule ``?x r ?y, ?y r ?z => ?x r2 ?z``, thinkingdb vs clingo vs Nemo.
2b. Rule sets (benchmarks/workloads.py, the same rules translated for clingo and Nemo): the DAG's
   closure written as two rules, same generation, odd/even paths, an LUBM-like ontology.
3. Depth-3 single-source queries ``s r{1,3} ?x`` on the 1M-edge graph: thinkingdb vs clingo
   (multi-shot grounding) vs pyoxigraph (SPARQL property path ``r|r/r|r/r/r``).
4. UMLS: the two isa-inheritance rules; recall and precision on the test triples.
5. Fresh processes (``fresh``): the composition rule on the smallest generated size, one run per
   process, ThinkingDB as shipped (a small join runs in pure Python), ``thinkingdb+numpy`` (the same
   join forced onto numpy, ``oneround.SMALL_JOIN = -1``), clingo and Nemo: what a one-off run costs.

Every engine runs in its own subprocess (``--worker``); GO, the transitive closures and the rule
sets run each engine once per pass for ``--runs`` passes (interleaved) and report the median, the
others repeat the timed part ``--runs`` times in one process. Nemo's time is ``reason()`` with the
facts imported from CSV inside it; clingo's is grounding and solving from the program text; peak memory is that subprocess's ``ru_maxrss`` (resident set high
water mark: interpreter + data + result), so engines never share or inherit each other's memory.
Load time (reading TSV into the engine, and importing the engine modules, as the peers' imports are
outside their timing too) is reported separately from the timed closure; ``wall`` is the worker process
from interpreter start to exit (imports, data, load and every timed run). ``--baseline DIR`` runs a
second ThinkingDB, the checkout in DIR (e.g. ``git worktree add /tmp/old COMMIT``), as
``thinkingdb@base`` in the same passes (GO, the generated graphs and the rule sets): before/after
figures from one run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from machine import describe, peak_rss_mb
from workloads import WORKLOADS, generated, to_clingo, to_nemo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workloads import LEVELS, PARENTS, WINDOW  # noqa: E402 (printed with the generated graphs)


# -- data --------------------------------------------------------------------------------------
def go_edges(data: Path) -> list[tuple[str, str, str]]:
    with open(data / "go" / "edges.tsv", encoding="utf-8") as fh:
        return [tuple(line.rstrip("\n").split("\t")) for line in fh if line.strip()]


# -- workers -----------------------------------------------------------------------------------
def timed(fn, runs: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(runs):
        out = None   # the previous run's result is not held while the next one runs (peak memory)
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


BASE = "thinkingdb@base"   # --baseline: ThinkingDB run from another checkout, beside this one
NUMPY = "thinkingdb+numpy"   # the one-round join forced onto numpy, whatever the input's size


def warm_imports(g, rules) -> None:
    """Import the engine modules ``closure(g, rules)`` imports on first use, in the load phase (the
    peers' module imports are outside their timed part too): only those of the engine that will run
    (``closure.preload``: a small input's run imports no numpy, so neither does its worker)."""
    import importlib
    from thinkingdb.engine import closure as closure_mod
    if hasattr(closure_mod, "preload"):
        closure_mod.preload(g, rules)
        return
    for name in ("transitive", "nonrecursive", "columnar", "reachsets"):   # an older checkout (--baseline)
        try:
            importlib.import_module(f"thinkingdb.engine.{name}")
        except ImportError:   # a checkout without that module
            pass


def worker(args) -> dict:
    spec = json.loads(args.worker)
    if spec["engine"] == BASE:
        sys.path.insert(0, spec["tree"])
        out = worker_for({**spec, "engine": "thinkingdb"})
        out["engine"] = BASE
        return out
    if spec["engine"] == NUMPY:
        out = worker_for({**spec, "engine": "thinkingdb", "force_numpy": True})
        out["engine"] = NUMPY
        return out
    return worker_for(spec)


def worker_for(spec: dict) -> dict:
    task, engine, runs = spec["task"], spec["engine"], spec["runs"]
    t0 = time.perf_counter()
    if task == "go":
        rows = go_edges(Path(spec["data"]))
        pairs = [(a, b) for a, _, b in rows]
    elif task in ("tc", "compose", "query"):
        pairs = [(f"n{a}", f"n{b}") for a, b in generated(spec["kind"], spec["size"])]
        rows = [(a, "r", b) for a, b in pairs]
    out: dict = {"engine": engine}
    if task == "umls":
        return umls(spec, out)
    if task == "rules":
        return rules_worker(spec, out, t0)
    if engine == "thinkingdb":
        from thinkingdb.engine.closure import closure
        from thinkingdb.engine.graph import FactGraph
        from thinkingdb.model import Atom, Declaration, Fact, Limits, PathRel, PathRepeat, Query, QueryPattern, Rule, Var
        from thinkingdb.engine.rules import compile_declarations
        if spec.get("force_numpy"):
            from thinkingdb.engine import oneround
            oneround.SMALL_JOIN = -1
        g = FactGraph(Fact(a, r, b) for a, r, b in rows)
        if task == "go":
            rules = compile_declarations([Declaration("ancestor", "transitive")] +
                                         [Declaration(r, "subrelation_of", "ancestor") for r in g.relations()])
        elif task == "tc":
            rules = compile_declarations([Declaration("r", "transitive")])
        elif task == "compose":
            x, y, z = Var("x"), Var("y"), Var("z")
            rules = (Rule("compose", (Atom(x, "r", y), Atom(y, "r", z)), Atom(x, "r2", z)),)
        if task == "query":
            out["load_s"] = time.perf_counter() - t0
            return query_thinkingdb(spec, g, pairs, out)
        warm_imports(g, rules)
        out["load_s"] = time.perf_counter() - t0
        out["numpy_loaded"] = "numpy" in sys.modules
        out["median_s"], res = timed(lambda: closure(g, rules), runs)
        out["facts"] = res.derived_count
        out["engine_path"] = res.stats.engine
        out["peak_mb"] = peak_rss_mb()   # before the check below
        if task == "go":
            gold = set()
            with gzip.open(Path(spec["data"]) / "go" / "closure_ancestors.tsv.gz", "rt") as fh:
                for line in fh:
                    a, b = line.split()
                    gold.add((a, b))
            sym, anc = g.symbol, res.ids.find_rel("ancestor")
            mine = {(sym(k[0]), sym(k[2])) for k in res.derived_keys() if k[1] == anc}
            out["equals_gold"] = mine == gold
            out["gold"] = len(gold)
    elif engine == "clingo":
        import clingo
        if task == "query":
            return query_clingo(spec, pairs, out)
        ctl = None

        def run():
            nonlocal ctl
            ctl = clingo.Control(["--warn=none"])
            ctl.add("base", [], facts_text)
            ctl.add("base", [], program)
            ctl.ground([("base", [])])
            n = 0
            with ctl.solve(yield_=True) as h:
                for m in h:
                    n = len(m.symbols(shown=True))
            return n
        facts_text = "".join(f'e("{a}","{b}").\n' for a, b in pairs)
        program = {"go": "anc(X,Y):-e(X,Y). anc(X,Z):-e(X,Y),anc(Y,Z). #show anc/2.",
                   "tc": "anc(X,Y):-e(X,Y). anc(X,Z):-e(X,Y),anc(Y,Z). #show anc/2.",
                   "compose": "c(X,Z):-e(X,Y),e(Y,Z). #show c/2."}[task]
        out["load_s"] = time.perf_counter() - t0
        out["median_s"], out["facts"] = timed(run, runs)
        if task == "tc":
            out["facts"] -= len(set(pairs))   # report derived facts, like thinkingdb
    elif engine == "nemo":
        program, pred = (("c(?X,?Z) :- e(?X,?Y), e(?Y,?Z) .\n", "c") if task == "compose" else
                         ("anc(?X,?Y) :- e(?X,?Y) .\nanc(?X,?Z) :- e(?X,?Y), anc(?Y,?Z) .\n", "anc"))
        out["median_s"], n = nemo_run(pairs, program, pred, runs)
        out["load_s"] = time.perf_counter() - t0 - out["median_s"] * runs
        out["facts"] = n - len(set(pairs)) if task == "tc" else n
    elif engine == "networkx":
        import networkx as nx
        dg = nx.DiGraph(pairs)
        out["load_s"] = time.perf_counter() - t0
        out["median_s"], tc = timed(lambda: nx.transitive_closure_dag(dg), runs)
        out["facts"] = tc.number_of_edges()
    elif engine == "pyoxigraph":
        return query_oxigraph(spec, pairs, out)
    out.setdefault("peak_mb", peak_rss_mb())
    return out


def nemo_run(pairs, rules_text: str, pred: str, runs: int) -> tuple[float, int]:
    """Median time of Nemo's ``reason()`` over ``e`` facts imported from a CSV, and ``pred``'s size."""
    import tempfile
    import nmo_python as nemo
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "e.csv"
        path.write_text("".join(f"{a},{b}\n" for a, b in pairs), encoding="utf-8")
        text = f'@import e :- csv{{resource="{path}"}} .\n' + rules_text
        eng = None

        def run():
            nonlocal eng
            eng = nemo.NemoEngine(nemo.load_string(text))
            eng.reason()
        med, _ = timed(run, runs)
        return med, sum(1 for _ in eng.result(pred))


def rules_worker(spec, out, t0) -> dict:
    """One rule-set workload (benchmarks/workloads.py) on one engine; ``facts`` = derived facts."""
    rows, rules = WORKLOADS[spec["workload"]](spec["size"])
    heads = sorted({r.head.relation for r in rules})
    asserted_heads = len({t for t in rows if t[1] in heads})
    engine, runs = spec["engine"], spec["runs"]
    if engine == "thinkingdb":
        from thinkingdb.engine.closure import closure
        from thinkingdb.engine.graph import FactGraph
        from thinkingdb.model import Fact
        g = FactGraph(Fact(*t) for t in rows)
        warm_imports(g, rules)
        out["load_s"] = time.perf_counter() - t0
        out["numpy_loaded"] = "numpy" in sys.modules
        out["median_s"], res = timed(lambda: closure(g, rules), runs)
        out["facts"], out["engine_path"] = res.derived_count, res.stats.engine
    elif engine == "clingo":
        import clingo
        program = to_clingo(rows, rules)
        out["load_s"] = time.perf_counter() - t0

        def run():
            ctl = clingo.Control(["--warn=none"])
            ctl.add("base", [], program)
            ctl.ground([("base", [])])
            with ctl.solve(yield_=True) as h:
                return sum(len(m.symbols(shown=True)) for m in h)
        out["median_s"], n = timed(run, runs)
        out["facts"] = n - asserted_heads
    elif engine == "nemo":
        import tempfile
        import nmo_python as nemo
        with tempfile.TemporaryDirectory() as tmp:
            text = to_nemo(rows, rules, Path(tmp))
            out["load_s"] = time.perf_counter() - t0
            eng = None

            def run():
                nonlocal eng
                eng = nemo.NemoEngine(nemo.load_string(text))
                eng.reason()
            out["median_s"], _ = timed(run, runs)
            out["peak_mb"] = peak_rss_mb()
            out["facts"] = sum(1 for h in heads for _ in eng.result(f"p_{h}")) - asserted_heads
    out.setdefault("peak_mb", peak_rss_mb())
    return out


def query_sources(pairs, n: int, direction: str = "up") -> list[str]:
    """Random symbols with an edge in the walking direction (fixed seed)."""
    rnd = random.Random(11)
    ends = sorted({a for a, _ in pairs} if direction == "up" else {b for _, b in pairs})
    return [ends[rnd.randrange(len(ends))] for _ in range(n)]


def percentiles(times: list[float]) -> dict:
    times = sorted(times)
    return {"p50_ms": 1000 * times[len(times) // 2], "p99_ms": 1000 * times[min(len(times) - 1, int(len(times) * 0.99))]}


def query_thinkingdb(spec, g, pairs, out):
    from thinkingdb.model import PathRel, PathRepeat, Query, QueryPattern, Var
    from thinkingdb.engine.query import evaluate
    path = PathRepeat(PathRel("r"), 1, 3)
    times, answers = [], 0
    up = spec["direction"] == "up"
    evaluate(Query((QueryPattern(pairs[0][0], path, Var("x")),)), g, ())   # warm-up: canonical ranks
    for s in query_sources(pairs, spec["queries"], spec["direction"]):
        q = Query((QueryPattern(s, path, Var("x")) if up else QueryPattern(Var("x"), path, s),))
        t = time.perf_counter()
        res = evaluate(q, g, ())
        times.append(time.perf_counter() - t)
        answers += len(res.answers)
    out.update(percentiles(times[10:] or times), answers=answers)
    out["peak_mb"] = peak_rss_mb()
    return out


def query_clingo(spec, pairs, out):
    import clingo
    ctl = clingo.Control(["--warn=none"])
    ctl.add("base", [], "".join(f"e({a},{b}).\n" for a, b in pairs))
    ctl.ground([("base", [])])
    times, answers = [], 0
    for i, s in enumerate(query_sources(pairs, spec["queries"], spec["direction"])):
        t = time.perf_counter()
        if spec["direction"] == "up":
            prog = f"a{i}(Y):-e({s},Y). b{i}(Z):-a{i}(Y),e(Y,Z). c{i}(Z):-b{i}(Y),e(Y,Z). "
        else:
            prog = f"a{i}(Y):-e(Y,{s}). b{i}(Z):-a{i}(Y),e(Z,Y). c{i}(Z):-b{i}(Y),e(Z,Y). "
        ctl.add(f"q{i}", [], prog + f"x{i}(Y):-a{i}(Y). x{i}(Y):-b{i}(Y). x{i}(Y):-c{i}(Y).")
        ctl.ground([(f"q{i}", [])])
        got = [a.symbol.arguments[0] for a in ctl.symbolic_atoms.by_signature(f"x{i}", 1)]
        times.append(time.perf_counter() - t)
        answers += len(got)
    out.update(percentiles(times[10:] or times), answers=answers)
    out["peak_mb"] = peak_rss_mb()
    return out


def query_oxigraph(spec, pairs, out):
    import pyoxigraph as ox
    store = ox.Store()
    r = ox.NamedNode("http://t/r")
    store.bulk_extend(ox.Quad(ox.NamedNode(f"http://t/{a}"), r, ox.NamedNode(f"http://t/{b}"), ox.DefaultGraph())
                      for a, b in pairs)
    times, answers = [], 0
    p = "(<http://t/r>|<http://t/r>/<http://t/r>|<http://t/r>/<http://t/r>/<http://t/r>)"
    for s in query_sources(pairs, spec["queries"], spec["direction"]):
        pattern = f"<http://t/{s}> {p} ?x" if spec["direction"] == "up" else f"?x {p} <http://t/{s}>"
        q = f"SELECT DISTINCT ?x WHERE {{ {pattern} }}"
        t = time.perf_counter()
        got = [row[0] for row in store.query(q)]
        times.append(time.perf_counter() - t)
        answers += len(got)
    out.update(percentiles(times[10:] or times), answers=answers)
    out["peak_mb"] = peak_rss_mb()
    return out


def umls(spec, out):
    from thinkingdb.engine.closure import closure
    from thinkingdb.engine.graph import FactGraph
    from thinkingdb.model import Atom, Fact, Limits, Rule, Var
    data = Path(spec["data"]) / "umls"

    def read(name):
        with open(data / name, encoding="utf-8") as fh:
            return [tuple(line.rstrip("\n").split("\t")) for line in fh if line.strip()]
    train, valid, test = read("train.txt"), read("valid.txt"), read("test.txt")
    g = FactGraph(Fact(*t) for t in train)
    x, y, z = Var("x"), Var("y"), Var("z")
    rules = []
    # r ranges over every relation; for r = isa the subject side is transitivity, and the object side
    # (two subtypes of one type are subtypes of each other) is left out: it would make siblings isa.
    for rel in sorted({r for _, r, _ in train + valid + test}):
        rules.append(Rule(f"subject_inherits_{rel}", (Atom(x, "isa", y), Atom(y, rel, z)), Atom(x, rel, z)))
        if rel != "isa":
            rules.append(Rule(f"object_inherits_{rel}", (Atom(x, rel, y), Atom(z, "isa", y)), Atom(x, rel, z)))
    known = set(valid) | set(test)
    for depth in (1, None):
        t = time.perf_counter()
        res = closure(g, rules, limits=Limits(max_depth=depth))
        el = time.perf_counter() - t
        derived = {(k.subject, k.relation, k.object) for k in res.derived}
        hit = len(derived & set(test))
        out[f"depth_{depth}"] = {"seconds": el, "derived": len(derived), "test_recall": hit / len(test),
                                 "test_hits": hit, "precision_vs_test": hit / max(len(derived), 1),
                                 "precision_vs_valid_and_test": len(derived & known) / max(len(derived), 1)}
    out["peak_mb"] = peak_rss_mb()
    return out


# -- driver ------------------------------------------------------------------------------------
def spawn(spec: dict) -> dict:
    if spec["engine"] == BASE:
        spec = {**spec, "tree": BASELINE[0]}
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode:
        return {"engine": spec["engine"], "error": proc.stderr.strip().splitlines()[-1:] or ["failed"]}
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "wall_s": wall}


BASELINE: list[str] = []   # the --baseline checkout, when given


def spawn_interleaved(spec: dict, engines: list[str], runs: int) -> list[dict]:
    """Each engine once per pass, ``runs`` passes (so load on the shared machine hits all alike);
    per engine the median times, the highest peak memory, and the facts of the last run."""
    got: dict[str, list[dict]] = {e: [] for e in engines}
    for _ in range(runs):
        for e in engines:
            got[e].append(spawn({**spec, "engine": e, "runs": 1}))
    rows = []
    for e, rs in got.items():
        ok = [r for r in rs if "error" not in r]
        if not ok:
            rows.append(rs[-1])
            continue
        row = dict(ok[-1])
        row["median_s"] = statistics.median(r["median_s"] for r in ok)
        row["load_s"] = statistics.median(r.get("load_s", 0) for r in ok)
        row["wall_s"] = statistics.median(r["wall_s"] for r in ok)
        row["peak_mb"] = max(r["peak_mb"] for r in ok)
        rows.append(row)
    return rows


RULE_WORKLOADS = [("tc_rules", 100_000, "the 100k-edge DAG's closure written as two rules (linear)"),
                  ("same_generation", 45_000, "same generation over a 45k-edge DAG (non-linear, 3 premises)"),
                  ("odd_even", 100_000, "odd/even paths over a 100k-edge DAG (mutual recursion)"),
                  ("lubm", 3, "LUBM-like ontology, 3 universities (60 rules: classes, properties, joins)")]


def show(title: str, rows: list[dict], base: str = "thinkingdb") -> None:
    print(f"\n== {title}")
    ref = next((r for r in rows if r.get("engine") == base and "median_s" in r), None)
    for r in rows:
        if "error" in r:
            print(f"  {r['engine']:<12} ERROR {r['error']}")
            continue
        extra = {k: v for k, v in r.items() if k not in ("engine", "median_s", "peak_mb", "load_s", "wall_s")}
        ratio = ""
        if ref and "median_s" in r and r is not ref:
            ratio = f"  ({r['median_s'] / ref['median_s']:.2f}x thinkingdb's time, {r['peak_mb'] / ref['peak_mb']:.2f}x its memory)"
        med = f"median {r['median_s']:.3f}s" if "median_s" in r else ""
        print(f"  {r['engine']:<12} {med} load {r.get('load_s', 0):.2f}s wall {r.get('wall_s', 0):.3f}s "
              f"peak {r.get('peak_mb', 0):.0f} MB {extra}{ratio}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--kinds", nargs="+", default=["random", "scale-free"], choices=["random", "scale-free"],
                    help="generated graph kinds (to split a long run)")
    ap.add_argument("--skip-clingo", action="store_true")
    ap.add_argument("--skip-nemo", action="store_true")
    ap.add_argument("--only", nargs="*", default=["go", "generated", "rules", "fresh", "query", "umls"])
    ap.add_argument("--baseline", type=Path, help=f"another checkout of ThinkingDB, run beside this one as {BASE}")
    ap.add_argument("--worker")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args)))
        return
    tdb = ["thinkingdb"]
    if args.baseline:
        BASELINE.append(str(args.baseline.resolve()))
        tdb.append(BASE)
    data = str(args.data.resolve())
    print("machine:", describe("clingo", "nemo-python", "networkx", "numpy"))
    for label, tree in [("thinkingdb", ROOT)] + [(BASE, Path(b)) for b in BASELINE]:
        rev = subprocess.run(["git", "-C", str(tree), "log", "-1", "--format=%h %s"], capture_output=True, text=True)
        print(f"{label}: {tree} at {rev.stdout.strip()[:100] or 'unknown commit'}")
    print(f"runs: {args.runs} (median; go, transitive closure and rule sets interleaved: each engine once per pass),"
          " peak memory = ru_maxrss of a fresh subprocess per engine")
    others = ([] if args.skip_clingo else ["clingo"]) + ([] if args.skip_nemo else ["nemo"])
    if "go" in args.only:
        rows = spawn_interleaved({"task": "go", "data": data}, tdb + others + ["networkx"], args.runs)
        show("GO full closure, ancestor over all 5 relations (gold 791,949)", rows)
    if "generated" in args.only:
        print(f"\ngenerated graphs: layered DAGs, {LEVELS} levels, {PARENTS} parents per node, "
              f"random = uniform within ±{WINDOW} positions, scale-free = preferential attachment; seed 7")
        for kind in args.kinds:
            for size in args.sizes:
                for task in ("tc", "compose"):
                    if task == "tc":
                        rows = spawn_interleaved({"task": task, "kind": kind, "size": size},
                                                 tdb + others, args.runs)
                    else:
                        rows = [spawn({"task": task, "engine": e, "runs": args.runs, "kind": kind, "size": size})
                                for e in tdb + others]
                    show(f"{kind} {size:,} edges, {'transitive closure' if task == 'tc' else 'composition rule'}", rows)
    if "rules" in args.only:
        for name, size, title in RULE_WORKLOADS:
            rows = spawn_interleaved({"task": "rules", "workload": name, "size": size}, tdb + others, args.runs)
            show(title, rows)
    if "fresh" in args.only:
        size = min(args.sizes)
        for kind in args.kinds:
            rows = spawn_interleaved({"task": "compose", "kind": kind, "size": size},
                                     ["thinkingdb", NUMPY] + tdb[1:] + others, args.runs)
            show(f"fresh processes, one run each: {kind} {size:,} edges, composition rule", rows)
    if "query" in args.only:
        size = max(args.sizes)
        for kind, direction in (("random", "up"), ("scale-free", "up"), ("random", "down"), ("scale-free", "down")):
            rows = [spawn({"task": "query", "engine": e, "runs": 1, "kind": kind, "size": size,
                           "queries": args.queries, "direction": direction})
                    for e in ["thinkingdb"] + [o for o in others if o != "nemo"] + ["pyoxigraph"]]
            shape = "s r{1,3} ?x (towards the roots)" if direction == "up" else "?x r{1,3} s (towards the leaves)"
            print(f"\n== depth-3 single-source queries {shape}, {kind} {size:,} edges, {args.queries} sources")
            for r in rows:
                print(f"  {r['engine']:<12} " + (f"ERROR {r['error']}" if "error" in r else
                      f"p50 {r['p50_ms']:.3f} ms  p99 {r['p99_ms']:.3f} ms  answers {r['answers']}  peak {r['peak_mb']:.0f} MB"))
    if "umls" in args.only:
        r = spawn({"task": "umls", "engine": "thinkingdb", "runs": 1, "data": data})
        print("\n== UMLS isa inheritance (subject side and object side, every relation), train -> test")
        for key in ("depth_1", "depth_None"):
            if key in r:
                print(f"  {key:<11} {json.dumps(r[key])}")
        if "error" in r:
            print("  ERROR", r["error"])


if __name__ == "__main__":
    main()
