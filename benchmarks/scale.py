"""Cost follows the question, not the store (issue 20): cold questions on large persistent stores.

    python benchmarks/scale.py [--sizes 1000000 10000000] [--kinds random scale-free] [--data ../shared/data]
                               [--runs 3] [--workdir /tmp/tdb-scale] [--timeout 300] [--engines thinkingdb pyoxigraph]

Datasets (generated once into ``--workdir`` and reused; fixed seeds, parameters printed):

* ``random``: ``N`` facts ``nI depends_on nJ`` over ``N / 5`` symbols, both ends uniform (seed 7),
  no self loops, no duplicates — a random digraph, so one giant strongly connected component: cycles.
* ``scale-free``: the same, but objects drawn from a power law (``floor(M * u**3)``, then the ids
  permuted): a few hubs have very high in-degree, most symbols almost none.
* ``go`` (with ``--data``): the Gene Ontology edges (85,716 facts, five relations; a DAG).

Each engine keeps a persistent store: a ThinkingDB SQLite store (ingested with ``thinkingdb
ingest``) and a pyoxigraph RocksDB store (bulk-loaded N-Triples). Every question runs in a *fresh
process* (``--worker``), interleaved across engines and repeated ``--runs`` times; the tables give
medians. ``open+answer`` is measured inside the process after the imports (open the store, answer,
count every answer); ``process`` is the subprocess's whole wall time (interpreter start and imports
included); ``peak MB`` is that subprocess's ``ru_maxrss``. "Cold" here means a fresh process; the
operating system's page cache is whatever the machine has (it is not dropped).

Questions: ``1-hop`` (``? S depends_on ?x.``), ``reach`` (``? S depends_on+ ?x.``), ``conj``
(``? S depends_on ?x, ?x depends_on ?y.``) and ``why`` of a fact two steps away. ThinkingDB runs each
with the default rule library (where ``depends_on`` is transitive, so plain ``depends_on`` means
reachability) and with ``--no-default-rules``; pyoxigraph runs the SPARQL with the same meaning
(``dep`` or ``dep+``; ``why`` becomes an ``ASK`` of the path, with no proof).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from machine import describe, peak_rss_mb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SEED = 7
IRI = "http://thinkingdb.example/"


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
    import numpy as np
    name = "go" if kind == "go" else f"{kind}-{size}"
    d = work / name
    meta_path = d / "meta.json"
    if meta_path.exists():
        return json.loads(meta_path.read_text())
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
    meta_path.write_text(json.dumps(meta))
    return meta


def build(meta: dict, work: Path, engines: list[str]) -> dict:
    """Build each engine's persistent store once (a subprocess each); the build times."""
    times = {}
    d = work / meta["name"]
    for engine in engines:
        marker = d / f"{engine}.built"
        if marker.exists():
            times[engine] = json.loads(marker.read_text())
            continue
        res = spawn({"op": "build", "engine": engine, "meta": meta, "dir": str(d)}, timeout=None)
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


# -- workers -----------------------------------------------------------------------------------------
def worker(spec: dict) -> dict:
    t_start = time.perf_counter()
    engine, meta = spec["engine"], spec["meta"]
    d = Path(spec["dir"])
    if spec["op"] == "build":
        t0 = time.perf_counter()
        if engine == "thinkingdb":
            from thinkingdb.api import KnowledgeBase
            with KnowledgeBase(str(d / "kb.sqlite")) as kb:
                kb.ingest([meta["tsv"]])
        else:
            import pyoxigraph as ox
            st = ox.Store(str(d / "oxigraph"))
            st.bulk_load(path=meta["nt"], format=ox.RdfFormat.N_TRIPLES)
            st.flush()
            del st
        return {"build_s": time.perf_counter() - t0, "peak_mb": peak_rss_mb()}
    q = spec["question"]
    out: dict = {}
    if engine == "thinkingdb":
        from thinkingdb.api import DEFAULT_LIMITS, KnowledgeBase
        t_import = time.perf_counter()
        kb = KnowledgeBase(str(d / "kb.sqlite"), default_rules=spec["rules"], readonly=False)
        if "why" in q:
            proof = kb.why(q["why"], limits=DEFAULT_LIMITS)
            out["answers"] = 0 if proof is None else 1
            out["truncated"] = None
        else:
            res = kb.query(q["tdb"], limits=DEFAULT_LIMITS)
            out["answers"] = len(res.answers)
            out["truncated"] = res.truncated
    else:
        import pyoxigraph as ox
        t_import = time.perf_counter()
        st = ox.Store.read_only(str(d / "oxigraph"))
        text = q["sparql_rules"] if spec["rules"] and "sparql_rules" in q else q["sparql"]
        res = st.query(text)
        out["answers"] = int(bool(res)) if isinstance(res, bool) else sum(1 for _ in res)
        out["truncated"] = None
    t_end = time.perf_counter()
    out.update({"answer_ms": (t_end - t_import) * 1000, "import_ms": (t_import - t_start) * 1000,
                "peak_mb": peak_rss_mb()})
    return out


def spawn(spec: dict, timeout: float | None) -> dict:
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)], capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout {timeout:g}s", "process_ms": (time.perf_counter() - t0) * 1000}
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1][:200]}
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    res["process_ms"] = (time.perf_counter() - t0) * 1000
    return res


# -- main --------------------------------------------------------------------------------------------
def fmt_cell(runs: list[dict]) -> tuple[str, dict]:
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return runs[0]["error"], {}
    med = {k: statistics.median(r[k] for r in ok) for k in ("answer_ms", "process_ms", "peak_mb")}
    med["answers"] = ok[0]["answers"]
    med["truncated"] = ok[0].get("truncated")
    return "", med


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--kinds", nargs="+", default=["random", "scale-free"], choices=["random", "scale-free"])
    ap.add_argument("--data", type=Path, help="the shared data folder (adds GO)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/tdb-scale"))
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per question process")
    ap.add_argument("--engines", nargs="+", default=["thinkingdb", "pyoxigraph"])
    ap.add_argument("--questions", nargs="+", default=["1-hop", "reach", "conj", "why"])
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return
    print(describe("numpy", "pyoxigraph"))
    print("(shared machine: timings are noisy; medians of interleaved fresh processes)")
    sets = [(k, n) for n in args.sizes for k in args.kinds] + ([("go", 0)] if args.data else [])
    for kind, size in sets:
        meta = dataset(kind, size, args.workdir, args.data)
        print(f"\n## {meta['name']}: {json.dumps(meta['params'])}; start {meta['start']}, why target {meta['two_away']}")
        for engine, b in build(meta, args.workdir, args.engines).items():
            print(f"   build {engine}: {b.get('build_s', float('nan')):.1f} s, peak {b.get('peak_mb', 0):.0f} MB")
        print(f"| question | engine | rules | open+answer ms | process ms | peak MB | answers | truncated |")
        print("|---|---|---|---:|---:|---:|---:|---|")
        for q in questions(meta):
            if q["name"] not in args.questions:
                continue
            configs = []
            for engine in args.engines:
                if engine == "thinkingdb":
                    configs += [(engine, True)] + ([] if q.get("rules_only") else [(engine, False)])
                else:
                    configs += ([(engine, True)] if "sparql_rules" in q else []) + [(engine, False)]
            results: dict = {c: [] for c in configs}
            for _ in range(args.runs):
                for engine, rules in configs:
                    spec = {"op": "ask", "engine": engine, "meta": meta, "dir": str(args.workdir / meta["name"]),
                            "question": q, "rules": rules}
                    results[(engine, rules)].append(spawn(spec, args.timeout))
            for (engine, rules), runs in results.items():
                err, m = fmt_cell(runs)
                label = ("default" if rules else "none") if engine == "thinkingdb" else (
                    "dep+" if rules and "sparql_rules" in q else "plain")
                if err:
                    print(f"| {q['name']} | {engine} | {label} | {err} | | | | |")
                else:
                    print(f"| {q['name']} | {engine} | {label} | {m['answer_ms']:,.1f} | {m['process_ms']:,.0f} | "
                          f"{m['peak_mb']:,.0f} | {m['answers']:,} | {m['truncated'] or ''} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
