"""Ingest throughput: ThinkingDB TSV and .tdb ingest side by side with rdflib loading the same facts.

    python benchmarks/ingest.py --data ../shared/data            # GO edges.tsv (85,716 facts), 3 runs
    python benchmarks/ingest.py --tsv-lines 1000000              # a generated 1M-line TSV (seed 7)
    python benchmarks/ingest.py --nt-lines 1000000               # 1M N-Triples: thinkingdb, rdflib, pyoxigraph

Every measured run happens in a fresh child process (this script with ``--child``), so each figure
includes opening the store, reading, normalizing, writing and committing, and the peak memory is that
child's own peak resident set size (``getrusage(RUSAGE_SELF).ru_maxrss``, which includes the Python
interpreter and imported modules; the idle baseline of such a child is printed for comparison).
The figures printed are medians over ``--runs`` runs. Goals (issue 2): TSV >= 100,000 facts/s,
.tdb >= 30,000 facts/s, both faster than rdflib. Goal (issue 17, ``--nt-lines``): loading N-Triples
faster than rdflib and within 2x of pyoxigraph (its persistent ``Store.bulk_load`` into a fresh
directory, and its in-memory ``Store.load``). Runs of the loaders are interleaved (one of each, then
the next round), since the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from machine import describe

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _child(kind: str, path: str, workdir: str) -> dict:
    """One measured load in this (fresh) process."""
    sys.path.insert(0, ROOT)
    if kind == "idle":
        import thinkingdb.store.ingest  # noqa: F401  (same imports as a real run)
        return {"seconds": 0.0, "facts": 0}
    if kind == "rdflib":
        import rdflib
        t = time.perf_counter()
        g = rdflib.Graph()
        g.parse(path, format="nt")
        return {"seconds": time.perf_counter() - t, "facts": len(g)}
    if kind in ("oxigraph-memory", "oxigraph-disk"):
        import shutil
        import pyoxigraph
        where = os.path.join(workdir, f"ox-{os.getpid()}")
        t = time.perf_counter()
        if kind == "oxigraph-memory":
            st = pyoxigraph.Store()
            st.load(path=path, format=pyoxigraph.RdfFormat.N_TRIPLES)
        else:
            st = pyoxigraph.Store(where)
            st.bulk_load(path=path, format=pyoxigraph.RdfFormat.N_TRIPLES)
            st.flush()
        seconds = time.perf_counter() - t
        n = len(st)
        del st
        shutil.rmtree(where, ignore_errors=True)
        return {"seconds": seconds, "facts": n}
    from thinkingdb.store.ingest import ingest
    from thinkingdb.store.sqlite import Store
    db = os.path.join(workdir, f"bench-{os.getpid()}.sqlite")
    t = time.perf_counter()
    with Store(db) as st:
        report = ingest(st, [path])
    seconds = time.perf_counter() - t
    size = os.path.getsize(db)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    return {"seconds": seconds, "facts": report.facts, "db_bytes": size}


def _run_child(kind: str, path: str, workdir: str) -> dict:
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", kind, path, workdir],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def _measure(kind: str, path: str, workdir: str, runs: int, results: list[dict] | None = None) -> dict:
    results = results if results is not None else [_run_child(kind, path, workdir) for _ in range(runs)]
    secs = statistics.median(r["seconds"] for r in results)
    facts = results[0]["facts"]
    return {"kind": kind, "facts": facts, "seconds": secs, "facts_per_s": facts / secs if secs else 0.0,
            "peak_rss_mb": statistics.median(r["peak_rss_kb"] for r in results) / 1024,
            "runs": [round(r["seconds"], 4) for r in results], "db_bytes": results[0].get("db_bytes")}


def _read_edges(tsv: str) -> list[tuple[str, str, str]]:
    rows = []
    with open(tsv, encoding="utf-8") as fh:
        for line in fh:
            if line.strip() and not line.startswith("#"):
                s, r, o = line.rstrip("\n").split("\t")[:3]
                rows.append((s, r, o))
    return rows


def _write_tdb(rows, path: str) -> None:
    sys.path.insert(0, ROOT)
    from grammar.format import format_name
    with open(path, "w", encoding="utf-8") as fh:
        for s, r, o in rows:
            fh.write(f"{format_name(s)} {format_name(r)} {format_name(o)}.\n")


def _iri(text: str) -> str:
    return "<http://thinkingdb.example/id/" + "".join(ch if ch.isalnum() or ch in "-._~" else f"%{ord(ch):02X}"
                                                      for ch in text) + ">"


def _write_nt(rows, path: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for s, r, o in rows:
            fh.write(f"{_iri(s)} {_iri(r)} {_iri(o)} .\n")


def generate_nt(path: str, lines: int, seed: int = 7) -> None:
    """``lines`` N-Triples over 200,000 IRIs and 24 predicate IRIs; one in 20 objects is a literal,
    one in 50 a language-tagged literal, one in 100 subjects a blank node."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as fh:
        for _ in range(lines):
            s, o, x = rng.randrange(200_000), rng.randrange(200_000), rng.random()
            subj = f"_:b{s % 5000}" if x < 0.01 else f"<http://example.org/id/Entity_{s}>"
            if x < 0.05:
                obj = f'"value {o}"'
            elif x < 0.07:
                obj = f'"label {o}"@en'
            else:
                obj = f"<http://example.org/id/Entity_{o}>"
            fh.write(f"{subj} <http://example.org/rel/rel_{rng.randrange(24)}> {obj} .\n")


def _nt_benchmark(args, work: str, baseline: float) -> int:
    path = os.path.join(work, "generated.nt")
    generate_nt(path, args.nt_lines, args.seed)
    print(f"generated {args.nt_lines:,} N-Triples lines (seed {args.seed}), {os.path.getsize(path) / 1e6:.1f} MB; "
          f"{args.runs} interleaved rounds")
    kinds = ["nt", "oxigraph-memory", "oxigraph-disk"] + ([] if args.no_rdflib else ["rdflib"])
    runs: dict[str, list[dict]] = {k: [] for k in kinds}
    for _ in range(args.runs):
        for k in list(kinds):
            try:
                runs[k].append(_run_child(k, path, work))
            except subprocess.CalledProcessError as exc:
                print(f"{k}: failed ({exc.stderr.strip().splitlines()[-1] if exc.stderr else exc})")
                kinds.remove(k)
    if "nt" not in kinds:
        return 1
    names = {"nt": "thinkingdb ingest (.nt)", "oxigraph-memory": "pyoxigraph Store.load (memory)",
             "oxigraph-disk": "pyoxigraph bulk_load (disk)", "rdflib": "rdflib Graph.parse (nt)"}
    results = []
    for k in kinds:
        r = _measure(k, path, work, args.runs, runs[k])
        r["kind"] = names[k]
        results.append(r)
    _print_table(results, baseline)
    ours = results[0]
    for r in results[1:]:
        print(f"thinkingdb / {r['kind']}: {ours['seconds'] / r['seconds']:.2f}x the time, "
              f"{ours['peak_rss_mb'] / r['peak_rss_mb']:.2f}x the peak memory")
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


def generate_tsv(path: str, lines: int, seed: int = 7) -> None:
    """``lines`` TSV facts over 200,000 symbols and 24 relations, a quarter with a confidence."""
    rng = random.Random(seed)
    rels = [f"rel_{i}" for i in range(24)]
    n_sym = 200_000
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("# generated by benchmarks/ingest.py\n")
        for _ in range(lines):
            s, o = rng.randrange(n_sym), rng.randrange(n_sym)
            line = f"Entity {s}\t{rels[rng.randrange(24)]}\tEntity {o}"
            if rng.random() < 0.25:
                line += f"\t{rng.randrange(1, 100) / 100}"
            fh.write(line + "\n")


def _print_table(results: list[dict], baseline_mb: float) -> None:
    print(f"{'load':<32}{'facts':>10}{'median s':>10}{'facts/s':>12}{'peak RSS MB':>13}   runs (s)")
    for r in results:
        print(f"{r['kind']:<32}{r['facts']:>10,}{r['seconds']:>10.3f}{r['facts_per_s']:>12,.0f}"
              f"{r['peak_rss_mb']:>13.1f}   {r['runs']}")
    print(f"(idle child with the same imports: peak RSS {baseline_mb:.1f} MB)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"), help="folder holding go/edges.tsv")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tsv-lines", type=int, metavar="N", help="instead: ingest a generated N-line TSV")
    ap.add_argument("--nt-lines", type=int, metavar="N", help="instead: N-Triples, thinkingdb vs rdflib vs pyoxigraph")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-rdflib", action="store_true")
    args = ap.parse_args(argv)
    print(f"machine: {describe()} | SQLite {sqlite3.sqlite_version}")
    with tempfile.TemporaryDirectory() as work:
        baseline = _run_child("idle", "-", work)["peak_rss_kb"] / 1024
        if args.nt_lines:
            return _nt_benchmark(args, work, baseline)
        if args.tsv_lines:
            path = os.path.join(work, "generated.tsv")
            generate_tsv(path, args.tsv_lines, args.seed)
            print(f"generated {args.tsv_lines:,} lines (seed {args.seed}), {os.path.getsize(path) / 1e6:.1f} MB")
            res = _measure("tsv", path, work, args.runs)
            res["kind"] = f"thinkingdb TSV ({args.tsv_lines:,} lines)"
            _print_table([res], baseline)
            print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
            return 0
        tsv = os.path.join(args.data, "go", "edges.tsv")
        rows = _read_edges(tsv)
        tdb, nt = os.path.join(work, "edges.tdb"), os.path.join(work, "edges.nt")
        _write_tdb(rows, tdb)
        _write_nt(rows, nt)
        print(f"data: {tsv} ({len(rows):,} facts); the same facts as .tdb and as N-Triples; {args.runs} runs each")
        results = [_measure("tsv", tsv, work, args.runs), _measure("tdb", tdb, work, args.runs)]
        results[0]["kind"], results[1]["kind"] = "thinkingdb TSV", "thinkingdb .tdb"
        if not args.no_rdflib:
            try:
                r = _measure("rdflib", nt, work, args.runs)
                r["kind"] = "rdflib Graph.parse (nt)"
                results.append(r)
            except subprocess.CalledProcessError as exc:
                print(f"rdflib: not available ({exc.stderr.strip().splitlines()[-1] if exc.stderr else exc})")
        _print_table(results, baseline)
        if len(results) == 3:
            for r in results[:2]:
                print(f"{r['kind']}: {results[2]['seconds'] / r['seconds']:.2f}x faster than rdflib "
                      f"({r['facts_per_s']:,.0f} vs {results[2]['facts_per_s']:,.0f} facts/s)")
        goals = [("TSV", results[0]["facts_per_s"], 100_000), (".tdb", results[1]["facts_per_s"], 30_000)]
        print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for name, rate, goal in goals:
            print(f"goal {name} >= {goal:,} facts/s: {'met' if rate >= goal else 'NOT met'} ({rate:,.0f})")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        result = _child(sys.argv[2], sys.argv[3], sys.argv[4])
        result["peak_rss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps(result))
        sys.exit(0)
    sys.exit(main())
