"""Cost follows the question, not the store (issue 20): cold questions on large persistent stores.

    python benchmarks/scale.py [--sizes 1000000 10000000] [--kinds random scale-free go] [--data ../shared/data]
                               [--runs 3] [--workdir /tmp/tdb-scale] [--timeout 300] [--engines thinkingdb pyoxigraph]

Generate and build the stores untimed first (``--questions none`` under ``nice -n 19``), then time the
questions under the exclusive CPU lock, one dataset per run (``--kinds go`` with ``--data``).

Datasets (generated once into ``--workdir`` and reused; fixed seeds, parameters printed):

* ``random``: ``N`` facts ``nI depends_on nJ`` over ``N / 5`` symbols, both ends uniform (seed 7),
  no self loops, no duplicates — a random digraph, so one giant strongly connected component: cycles.
* ``scale-free``: the same, but objects drawn from a power law (``floor(M * u**3)``, then the ids
  permuted): a few hubs have very high in-degree, most symbols almost none.
* ``go`` (with ``--data``): the Gene Ontology edges (85,716 facts, five relations; a DAG). The
  default rule library says nothing about ``is_a``, so on GO the "default" runs also load
  ``relation is_a transitive.`` (printed as ``default+is_a``); pyoxigraph then runs ``is_a+``.

Each engine keeps a persistent store: a ThinkingDB SQLite store (ingested with ``thinkingdb
ingest``) and a pyoxigraph RocksDB store (bulk-loaded N-Triples). Every question runs in a *fresh
process* (``--worker``), interleaved across engines and repeated ``--runs`` times; the tables give
medians. ``open+answer`` is measured inside the process after the imports (open the store, answer,
count every answer); ``process`` is the subprocess's whole wall time (interpreter start and imports
included; ``--python`` chooses the interpreter: what its start loads is printed, see below); ``peak MB`` is that subprocess's ``ru_maxrss``. "Cold" here means a fresh process; the
operating system's page cache is whatever the machine has (it is not dropped).

Questions: ``1-hop`` (``? S depends_on ?x.``), ``reach`` (``? S depends_on+ ?x.``), ``conj``
(``? S depends_on ?x, ?x depends_on ?y.``) and ``why`` of a fact two steps away. ThinkingDB runs each
with the default rule library (where ``depends_on`` is transitive, so plain ``depends_on`` means
reachability) and with ``--no-default-rules``; pyoxigraph runs the SPARQL with the same meaning
(``dep`` or ``dep+``; ``why`` becomes an ``ASK`` of the path, with no proof). ``why`` runs only with
the rules: without them the fact is not derived. Before the timed questions a ``prepare`` process
opens each ThinkingDB store once, untimed, so its graph file is current (its time is printed). A
question whose first run takes over ``--slow`` seconds is not repeated (median of one, marked ``*``).
Each engine's own package is imported outside ``open+answer`` (``pyoxigraph``; ``thinkingdb.api``):
what a question loads beyond it (ThinkingDB loads its parser, engines and numpy only when the
question needs them) is inside, and in peak memory; the ``process`` column includes everything. The side-by-side
table pairs each ThinkingDB row with the pyoxigraph query of the same meaning and
gives ratios (ThinkingDB / pyoxigraph: below 1 is better) of the in-process time and of peak memory.

The interpreter matters to the ``process`` column. An editable install (``pip install -e .``) puts a finder
in ``site`` that imports ``re``, ``pathlib``, ``urllib.parse`` and more (~11 ms) in every process before
either engine starts: both processes pay it, and ThinkingDB then finds some of what it imports already
loaded. A regular install (what ``pip install thinkingdb`` gives a user) loads none of it, so the figures
reported for issue 20 use ``--python`` with a venv holding a regular install of the dependencies and
pyoxigraph (the question processes import this checkout's ``thinkingdb`` either way).

A question process imports nothing of the driver's but ``os``, ``sys`` and ``time`` before the engine
(the driver's modules are imported inside the functions that use them; the worker's arguments and its
one line of output are plain text, not JSON), so that the ``process`` column times the engine, not
the harness: ``json``, for one, is then charged to the engine that needs it.
"""

from __future__ import annotations

import os
import sys
import time

from machine import peak_rss_mb as _ru_maxrss_mb

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
sys.path.insert(0, ROOT)

SEED = 7
PYTHON = sys.executable   # the question processes' interpreter (--python)
IRI = "http://thinkingdb.example/"


def peak_rss_mb() -> float:
    """This process's own peak RSS (MiB): ``VmHWM`` of its address space. ``ru_maxrss`` is not used
    for the question processes because on Linux it carries over the parent's peak across the
    fork/exec that started them, which floored every small reading at the driver's size."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return _ru_maxrss_mb()


# -- data --------------------------------------------------------------------------------------------
def generate(kind: str, n_facts: int, seed: int = SEED):
    """``(subjects, objects)`` int arrays of ``n_facts`` distinct edges without self loops."""
    import numpy as np
    rng = np.random.default_rng(seed)
    n_sym = max(n_facts // 5, 2)
    perm = rng.permutation(n_sym)
    keys = np.empty(0, dtype=np.int64)
    while len(keys) < n_facts:
        m = int((n_facts - len(keys)) * 1.1) + 16
        s = rng.integers(0, n_sym, m)
        if kind == "random":
            o = rng.integers(0, n_sym, m)
        else:
            o = perm[(n_sym * rng.random(m) ** 3).astype(np.int64)]
        k = s.astype(np.int64) * n_sym + o
        k = k[s != o]
        keys = np.unique(np.concatenate([keys, k]))
    keys = rng.permutation(keys)[:n_facts]
    return keys // n_sym, keys % n_sym, n_sym


def dataset(kind: str, size: int, work: Path, data: Path | None) -> dict:
    """Write the TSV and N-Triples files of a dataset once; its parameters and chosen questions."""
    import json

    import numpy as np
    name = "go" if kind == "go" else f"{kind}-{size}"
    d = work / name
    meta_path = d / "meta.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if kind == "go" and "extra_rules" not in meta:
            (d / "is_a.tdb").write_text("relation is_a transitive.\n", encoding="utf-8")
            meta["extra_rules"] = str(d / "is_a.tdb")
        return meta
    d.mkdir(parents=True, exist_ok=True)
    if kind == "go":
        with open(data / "go" / "edges.tsv", encoding="utf-8") as fh:
            rows = [line.rstrip("\n").split("\t") for line in fh if line.strip()]
        triples = [(a, r, b) for a, r, b in rows]
        params = {"source": "GO edges.tsv", "facts": len(triples)}
        rel = "is_a"
    else:
        s, o, n_sym = generate(kind, size)
        triples = None
        params = {"facts": size, "symbols": n_sym, "seed": SEED, "relation": "depends_on",
                  "objects": "uniform" if kind == "random" else "power law floor(M*u**3), ids permuted"}
        rel = "depends_on"
    tsv, nt = d / "facts.tsv", d / "facts.nt"
    with open(tsv, "w", encoding="utf-8") as ft, open(nt, "w", encoding="utf-8") as fn:
        if triples is None:
            for a, b in zip(s.tolist(), o.tolist()):
                ft.write(f"n{a}\t{rel}\tn{b}\n")
                fn.write(f"<{IRI}n{a}> <{IRI}{rel}> <{IRI}n{b}> .\n")
        else:
            for a, r, b in triples:
                ft.write(f"{a}\t{r}\t{b}\n")
                fn.write(f"<{IRI}{a}> <{IRI}{r}> <{IRI}{b}> .\n")
    # the start symbol: the first with at least 3 out-edges; the why target: two steps away, not one
    if triples is None:
        out: dict[int, list[int]] = {}
        order = np.argsort(s, kind="stable")
        ss, oo = s[order], o[order]
        starts = np.searchsorted(ss, np.arange(n_sym + 1))
        adj = lambda v: oo[starts[v]:starts[v + 1]].tolist()  # noqa: E731
        start = next(v for v in range(n_sym) if len(adj(v)) >= 3)
        one = set(adj(start))
        two = next(w for v in sorted(one) for w in adj(v) if w not in one and w != start)
        start_key, two_key = f"n{start}", f"n{two}"
    else:
        out = {}
        for a, _, b in triples:
            out.setdefault(a, []).append(b)
        start_key = "GO:0006915" if "GO:0006915" in out else sorted(out)[0]
        one = set(out[start_key])
        two_key = next(w for v in sorted(one) for w in out.get(v, ()) if w not in one)
    meta = {"name": name, "kind": kind, "params": params, "relation": rel, "start": start_key,
            "two_away": two_key, "tsv": str(tsv), "nt": str(nt)}
    if kind == "go":
        (d / "is_a.tdb").write_text("relation is_a transitive.\n", encoding="utf-8")
        meta["extra_rules"] = str(d / "is_a.tdb")
    meta_path.write_text(json.dumps(meta))
    return meta


def build(meta: dict, work: Path, engines: list[str]) -> dict:
    """Build each engine's persistent store once (a subprocess each); the build times."""
    import json
    times = {}
    d = work / meta["name"]
    for engine in engines:
        marker = d / f"{engine}.built"
        if marker.exists():
            times[engine] = json.loads(marker.read_text())
            continue
        res = spawn(["build", engine, str(d), "0", "", meta["tsv"] if engine == "thinkingdb" else meta["nt"], ""],
                    timeout=None)
        marker.write_text(json.dumps(res))
        times[engine] = res
    return times


# -- questions ---------------------------------------------------------------------------------------
def questions(meta: dict) -> list[dict]:
    s, r, t = meta["start"], meta["relation"], meta["two_away"]
    i = lambda k: f"<{IRI}{k}>"  # noqa: E731
    return [
        {"name": "1-hop", "tdb": f"? {s} {r} ?x.",
         "sparql": f"SELECT ?x WHERE {{ {i(s)} {i(r)} ?x }}",
         "sparql_rules": f"SELECT DISTINCT ?x WHERE {{ {i(s)} {i(r)}+ ?x }}"},
        {"name": "reach", "tdb": f"? {s} {r}+ ?x.",
         "sparql": f"SELECT DISTINCT ?x WHERE {{ {i(s)} {i(r)}+ ?x }}"},
        {"name": "conj", "tdb": f"? {s} {r} ?x, ?x {r} ?y.",
         "sparql": f"SELECT ?x ?y WHERE {{ {i(s)} {i(r)} ?x . ?x {i(r)} ?y }}",
         "sparql_rules": f"SELECT DISTINCT ?x ?y WHERE {{ {i(s)} {i(r)}+ ?x . ?x {i(r)}+ ?y }}"},
        {"name": "why", "why": f"{s} {r} {t}", "rules_only": True,
         "sparql": f"ASK {{ {i(s)} {i(r)}+ {i(t)} }}"},
    ]


# -- workers ---------------------------------------------------------------------------------------
def worker_args(op: str, engine: str, d, meta: dict, q: dict | None = None, rules: bool = False) -> list[str]:
    """The worker's command line: ``op engine dir rules kind text extra`` (the question's text for this
    engine chosen here, so the worker parses nothing)."""
    kind, text = "", ""
    if q is not None and engine == "thinkingdb":
        kind, text = ("why", q["why"]) if "why" in q else ("query", q["tdb"])
    elif q is not None:
        kind, text = "sparql", q["sparql_rules"] if rules and "sparql_rules" in q else q["sparql"]
    extra = meta.get("extra_rules", "") if rules else ""
    return [op, engine, str(d), "1" if rules else "0", kind, text, extra]


def worker(args: list[str]) -> dict:
    """Run one question (or build or prepare a store) in this fresh process: see :func:`worker_args`."""
    t_start = time.perf_counter()
    op, engine, d = args[0], args[1], args[2]
    store = os.path.join(d, "kb.sqlite")
    if op == "build":
        t0 = time.perf_counter()
        if engine == "thinkingdb":
            from thinkingdb.api import KnowledgeBase
            with KnowledgeBase(store) as kb:
                kb.ingest([args[5]])
        else:
            import pyoxigraph as ox
            st = ox.Store(os.path.join(d, "oxigraph"))
            st.bulk_load(path=args[5], format=ox.RdfFormat.N_TRIPLES)
            st.flush()
            del st
        return {"build_s": time.perf_counter() - t0, "peak_mb": peak_rss_mb()}
    if op == "prepare":
        from thinkingdb.api import KnowledgeBase
        t0 = time.perf_counter()
        with KnowledgeBase(store) as kb:
            n = len(kb.graph)
        return {"prepare_s": time.perf_counter() - t0, "facts": n, "peak_mb": peak_rss_mb()}
    rules, kind, text, extra = args[3] == "1", args[4], args[5], args[6]
    out: dict = {}
    if engine == "thinkingdb":
        from thinkingdb.api import DEFAULT_LIMITS, KnowledgeBase
        t_import = time.perf_counter()
        kb = KnowledgeBase(store, default_rules=rules, readonly=False)
        if extra:
            kb.add_rules_file(extra)
        if kind == "why":
            proof = kb.why(text, limits=DEFAULT_LIMITS)
            out["answers"] = 0 if proof is None else 1
            out["truncated"] = None
        else:
            res = kb.query(text, limits=DEFAULT_LIMITS)
            out["answers"] = len(res.answers)
            out["truncated"] = res.truncated
    else:
        import pyoxigraph as ox
        t_import = time.perf_counter()
        st = ox.Store.read_only(os.path.join(d, "oxigraph"))
        res = st.query(text)
        out["answers"] = int(bool(res)) if isinstance(res, (bool, ox.QueryBoolean)) else sum(1 for _ in res)
        out["truncated"] = None
    t_end = time.perf_counter()
    out.update({"answer_ms": (t_end - t_import) * 1000, "import_ms": (t_import - t_start) * 1000,
                "peak_mb": peak_rss_mb()})
    return out


def emit(result: dict) -> str:
    """The worker's output: one ``key=value`` line each (values are numbers, None or one-line text)."""
    return "".join(f"{k}={' '.join(str(v).split())}\n" for k, v in result.items())


def read_output(text: str) -> dict:
    """The inverse of :func:`emit` (numbers come back as numbers, ``None`` as None)."""
    out: dict = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        for cast in (int, float):
            try:
                out[key] = cast(value)
                break
            except ValueError:
                pass
        else:
            out[key] = None if value == "None" else value
    return out


def spawn(args: list[str], timeout: float | None) -> dict:
    import subprocess
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([PYTHON, __file__, "--worker", *args], capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout {timeout:g}s", "process_ms": (time.perf_counter() - t0) * 1000}
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1][:200]}
    res = read_output(proc.stdout)
    res["process_ms"] = (time.perf_counter() - t0) * 1000
    return res


# -- main --------------------------------------------------------------------------------------------
def fmt_cell(runs: list[dict]) -> tuple[str, dict]:
    import statistics
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return runs[0]["error"], {}
    med = {k: statistics.median(r[k] for r in ok) for k in ("answer_ms", "process_ms", "peak_mb")}
    med["answers"] = ok[0]["answers"]
    med["truncated"] = ok[0].get("truncated")
    med["n"] = len(ok)
    return "", med


def configs_of(q: dict, engines: list[str]) -> list[tuple[str, bool]]:
    out = []
    for engine in engines:
        if engine == "thinkingdb":
            out += [(engine, True)] + ([] if q.get("rules_only") else [(engine, False)])
        else:
            out += ([(engine, True)] if "sparql_rules" in q else []) + [(engine, False)]
    return out


def peer_of(q: dict, rules: bool) -> tuple[str, bool]:
    """The pyoxigraph run with the meaning of a ThinkingDB run."""
    return ("pyoxigraph", True) if rules and "sparql_rules" in q else ("pyoxigraph", False)


def interpreter_start(python: str) -> str:
    """What the interpreter's own start loads before either engine: an editable install's finder imports
    re, pathlib, urllib.parse and more (~11 ms) in every process, which an installed package's does not,
    and which hides what each engine's own imports cost (both engines' processes start alike)."""
    import subprocess
    code = "import sys; print(int(any('__editable__' in m for m in sys.modules)), int('re' in sys.modules))"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return ("an editable install's finder runs at start" if out[0] == "1" else "no editable finder") + (
        "; re is loaded at start" if out[1] == "1" else "; re is not loaded at start")


def run_dataset(meta: dict, args) -> None:
    import json
    d = args.workdir / meta["name"]
    rules_label = "default+is_a" if meta.get("extra_rules") else "default"
    print(f"\n## {meta['name']}: {json.dumps(meta['params'])}; start {meta['start']}, why target {meta['two_away']}")
    print(f"   {os.popen('uptime').read().strip()}")
    for engine, b in build(meta, args.workdir, args.engines).items():
        note = f"{b['build_s']:.1f} s, peak {b.get('peak_mb') or 0:.0f} MB" if b.get("build_s") else b.get("note", b.get("error", "?"))
        print(f"   build {engine} (untimed, nice 19, earlier): {note}")
    if "thinkingdb" in args.engines and args.questions != ["none"]:
        p = spawn(worker_args("prepare", "thinkingdb", d, meta), timeout=None)
        print(f"   prepare thinkingdb (graph file current; untimed): {p.get('prepare_s', float('nan')):.2f} s, "
              f"{p.get('facts', '?')} facts, peak {p.get('peak_mb', 0):.0f} MB {p.get('error', '')}")
    table: dict = {}
    print("| question | engine | rules | open+answer ms | process ms | peak MB | answers | truncated |")
    print("|---|---|---|---:|---:|---:|---:|---|")
    for q in questions(meta):
        if q["name"] not in args.questions:
            continue
        configs = configs_of(q, args.engines)
        results: dict = {c: [] for c in configs}
        for i in range(args.runs):
            for engine, rules in configs:
                prior = results[(engine, rules)]
                if i and (not prior or "error" in prior[0] or prior[0]["process_ms"] > args.slow * 1000):
                    continue    # slow or failed: one run is enough to show it
                prior.append(spawn(worker_args("ask", engine, d, meta, q, rules), args.timeout))
        for (engine, rules), runs in results.items():
            err, m = fmt_cell(runs)
            table[(q["name"], engine, rules)] = (err, m)
            label = (rules_label if rules else "none") if engine == "thinkingdb" else (
                "path+" if rules and "sparql_rules" in q else "plain")
            if err:
                print(f"| {q['name']} | {engine} | {label} | {err} | | | | |")
            else:
                star = "" if m["n"] > 1 else "*"
                print(f"| {q['name']} | {engine} | {label} | {m['answer_ms']:,.1f}{star} | {m['process_ms']:,.0f} | "
                      f"{m['peak_mb']:,.0f} | {m['answers']:,} | {m['truncated'] or ''} |")
        sys.stdout.flush()
    if set(args.engines) >= {"thinkingdb", "pyoxigraph"}:
        side_by_side(meta, table, rules_label)


def side_by_side(meta: dict, table: dict, rules_label: str) -> None:
    print(f"\nside by side, {meta['name']} (ratio = ThinkingDB / pyoxigraph; time is open+answer in the process, "
          "process the whole fresh process; meets goal: both ratios and memory at most 1, not truncated, or "
          "pyoxigraph did not finish)")
    print("| question | rules | ThinkingDB ms | pyoxigraph ms | time ratio | process ratio | ThinkingDB MB | "
          "pyoxigraph MB | memory ratio | answers (tdb / ox) | meets goal |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for q in questions(meta):
        for rules in (True, False):
            mine = table.get((q["name"], "thinkingdb", rules))
            if mine is None:
                continue
            peer = table.get((q["name"], *peer_of(q, rules)))
            label = rules_label if rules else "none"
            (e1, a), (e2, b) = mine, peer or ("not run", {})
            ta = e1 or f"{a['answer_ms']:,.1f}"
            tb = e2 or f"{b['answer_ms']:,.1f}"
            ma = "" if e1 else f"{a['peak_mb']:,.0f}"
            mb = "" if e2 else f"{b['peak_mb']:,.0f}"
            if e1 or e2:   # ours did not finish: no; only the peer did not: ours met what the peer could not
                # (ours stopped by a bound where the peer did not finish either: a bound pyoxigraph needed too,
                # the goal's wording; reach x reach on a graph with cycles is billions of answers)
                verdict = "no" if e1 else f"yes (pyoxigraph: {e2})" if not a["truncated"] else \
                    f"both bounded (ThinkingDB: {a['truncated']} after {a['answers']:,} answers; pyoxigraph: {e2})"
                print(f"| {q['name']} | {label} | {ta} | {tb} | | | {ma} | {mb} | | | {verdict} |")
                continue
            rt, rm = a["answer_ms"] / max(b["answer_ms"], 1e-9), a["peak_mb"] / max(b["peak_mb"], 1e-9)
            rp = a["process_ms"] / max(b["process_ms"], 1e-9)
            # the goal counts the whole fresh process as well as open+answer: a user starts one per question
            ok = rt <= 1 and rp <= 1 and rm <= 1 and not a["truncated"]
            ans = f"{a['answers']:,} / {b['answers']:,}" + ("" if q["name"] == "why" or a["answers"] == b["answers"]
                                                            else " DIFFER")
            print(f"| {q['name']} | {label} | {ta} | {tb} | {rt:.2f} | {rp:.2f} | {ma} | {mb} | {rm:.2f} | {ans} | "
                  f"{'yes' if ok else 'no'}{' (truncated: ' + a['truncated'] + ')' if a['truncated'] else ''} |")
    sys.stdout.flush()


def main() -> None:
    if sys.argv[1:2] == ["--worker"]:   # a question process: nothing of the driver's is imported
        sys.stdout.write(emit(worker(sys.argv[2:])))
        return
    import argparse
    from pathlib import Path

    from machine import describe
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", nargs="+", help="(internal) run one question: see worker_args")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--kinds", nargs="+", default=["random", "scale-free", "go"],
                    choices=["random", "scale-free", "go"], help="go needs --data")
    ap.add_argument("--data", type=Path, help="the shared data folder (for GO)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--slow", type=float, default=20.0, help="a question slower than this (s) runs once")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/tdb-scale"))
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per question process")
    ap.add_argument("--engines", nargs="+", default=["thinkingdb", "pyoxigraph"])
    ap.add_argument("--questions", nargs="+", default=["1-hop", "reach", "conj", "why"], help="'none': build only")
    ap.add_argument("--python", default=sys.executable,
                    help="the interpreter of the question processes (default this one), e.g. a venv with a regular "
                         "install: python3 -m venv /tmp/reg && /tmp/reg/bin/pip install '.[rdf]'")
    args = ap.parse_args()
    global PYTHON
    PYTHON = args.python
    print(describe("numpy", "pyoxigraph"))
    print(f"question processes: {PYTHON} ({interpreter_start(PYTHON)})")
    print("(each question in a fresh process; medians of interleaved runs)")
    sets = [(k, n) for n in args.sizes for k in args.kinds if k != "go"]
    if "go" in args.kinds and args.data:
        sets.append(("go", 0))
    for kind, size in sets:
        run_dataset(dataset(kind, size, args.workdir, args.data), args)


if __name__ == "__main__":
    main()
