"""In-process closure vs Spark local[N] on the same facts and rules, each engine in its own process.

Workloads (all through ``thinkingdb materialize``, so both engines read the same Parquet input and
write the same Parquet output):

* ``go``: Gene Ontology ancestor closure over all 85,716 edges as one ``parent`` relation
  (``ancestor ← parent``, ``ancestor ← parent ∘ ancestor``); checked against the 791,949 pairs of
  ``closure_ancestors.tsv.gz``.
* ``tree-N``: a random forest of N edges (each node's parent drawn among earlier nodes, fixed seed),
  the same two rules; the closure is about N × ln N pairs.
* ``tree-N-d2``: the same forest bounded at ``--max-depth 2`` (two rounds), for sizes whose full
  closure does not fit one process.

Per run: wall time, rounds, derived facts, peak RSS of the Python process and (Spark) of the driver
JVM, and Spark's shuffle bytes read from its status REST endpoint on loopback. Prints the machine.

    python benchmarks/spark.py --data ../shared/data --sizes 1000000 --bounded 10000000
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

RULES = """rule base: ?x parent ?y => ?x ancestor ?y.
rule step: ?x parent ?y, ?y ancestor ?z => ?x ancestor ?z.
"""


def write_facts(path: str, edges) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(path, exist_ok=True)
    s, o = zip(*edges)
    n = len(s)
    table = pa.table({"s": pa.array(s, pa.string()), "r": pa.array(["parent"] * n, pa.string()),
                      "o": pa.array(o, pa.string()), "c": pa.array([1.0] * n, pa.float64())})
    pq.write_table(table, os.path.join(path, "part-00000.parquet"))
    return n


def go_edges(data: str):
    from thinkingdb.normalize import symbol_key

    with open(os.path.join(data, "go", "edges.tsv"), encoding="utf-8") as fh:
        return [(symbol_key(c), symbol_key(p)) for c, _, p in (line.rstrip("\n").split("\t") for line in fh)]


def tree_edges(n: int, seed: int):
    rng = random.Random(seed)
    return [(f"n{i}", f"n{rng.randrange(i)}") for i in range(1, n + 1)]


def _child_peak_kb(pid: int) -> int:
    """Peak RSS (VmHWM) of the processes under ``pid`` (the Spark driver JVM), in kB."""
    peak = 0
    try:
        kids = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    except OSError:
        return 0
    for kid in kids:
        try:
            with open(f"/proc/{kid}/status") as fh:
                for line in fh:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
        except OSError:
            pass
        peak = max(peak, _child_peak_kb(int(kid)))
    return peak


def run_engine(engine: str, facts: str, rules: str, out: str, max_depth: int | None, master: str) -> dict:
    """One materialize run in this (child) process; prints one JSON line."""
    from thinkingdb.spark.materialize import load_rules, materialize

    shutil.rmtree(out, ignore_errors=True)
    rule_set, vocab = load_rules([rules], default_rules=False)
    jvm_peak = [0]
    stop = threading.Event()

    def sample():
        while not stop.wait(0.5):
            jvm_peak[0] = max(jvm_peak[0], _child_peak_kb(os.getpid()))

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    t0 = time.perf_counter()
    conf = {"spark.ui.enabled": "true", "spark.ui.port": "4047", "spark.driver.memory": "8g",
            "spark.sql.shuffle.partitions": "8"} if engine == "spark" else {}
    report = materialize(facts, out, rule_set, vocab, engine=engine, master=master, max_depth=max_depth, conf=conf)
    seconds = time.perf_counter() - t0
    shuffle = None
    if engine == "spark":
        shuffle = _shuffle_bytes()
    stop.set()
    jvm_peak[0] = max(jvm_peak[0], _child_peak_kb(os.getpid()))
    return {"engine": engine, "seconds": seconds, "rounds": report.rounds, "derived": report.derived,
            "truncated": report.truncated, "py_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "jvm_peak_mb": jvm_peak[0] / 1024 if jvm_peak[0] else None,
            "shuffle_mb": None if shuffle is None else shuffle / 2**20}


def _shuffle_bytes() -> int | None:
    """Shuffle bytes written over all stages of this process's Spark application: from the
    driver's status store (through py4j), else from the REST status endpoint on loopback."""
    try:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
        stages = spark.sparkContext._jsc.sc().statusStore().stageList(None)
        return sum(int(stages.apply(i).shuffleWriteBytes()) for i in range(stages.size()))
    except Exception:  # noqa: BLE001 - fall back to the REST endpoint
        pass
    try:
        base = "http://127.0.0.1:4047/api/v1/applications"
        apps = json.load(urllib.request.urlopen(base, timeout=5))
        stages = json.load(urllib.request.urlopen(f"{base}/{apps[0]['id']}/stages", timeout=30))
        return sum(s.get("shuffleWriteBytes", 0) for s in stages)
    except Exception:  # noqa: BLE001 - a measurement we report as missing, never a failure
        return None


def child(args) -> int:
    print(json.dumps(run_engine(args.engine, args.facts, args.rules, args.out, args.max_depth, args.master)))
    return 0


def measure(engine: str, facts: str, rules: str, work: str, max_depth, master: str) -> dict:
    cmd = [sys.executable, __file__, "--child", "--engine", engine, "--facts", facts, "--rules", rules,
           "--out", os.path.join(work, f"out-{engine}"), "--master", master]
    if max_depth is not None:
        cmd += ["--max-depth", str(max_depth)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"engine": engine, "error": proc.stderr.strip().splitlines()[-1:] or ["failed"]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def count_pairs(out: str) -> int:
    import pyarrow.parquet as pq

    n = 0
    for root, _, files in os.walk(out):
        for f in files:
            if f.endswith(".parquet"):
                t = pq.read_table(os.path.join(root, f), columns=["r"])
                n += sum(1 for r in t.column("r").to_pylist() if r == "ancestor")
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", help="the shared data folder (for the GO workload)")
    ap.add_argument("--sizes", type=int, nargs="*", default=[1_000_000], help="forest sizes, full closure")
    ap.add_argument("--bounded", type=int, nargs="*", default=[], help="forest sizes at --max-depth 2")
    ap.add_argument("--engines", nargs="*", default=["local", "spark"])
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--engine", help=argparse.SUPPRESS)
    ap.add_argument("--facts", help=argparse.SUPPRESS)
    ap.add_argument("--rules", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--max-depth", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    from machine import describe

    print(describe("pyspark", "pyarrow", "numpy"))
    work = tempfile.mkdtemp(prefix="tdb-spark-bench-")
    rules = os.path.join(work, "rules.tdb")
    with open(rules, "w", encoding="utf-8") as fh:
        fh.write(RULES)
    workloads = []
    if args.data:
        workloads.append(("go", lambda: go_edges(args.data), None))
    workloads += [(f"tree-{n}", (lambda n=n: tree_edges(n, args.seed)), None) for n in args.sizes]
    workloads += [(f"tree-{n}-d2", (lambda n=n: tree_edges(n, args.seed)), 2) for n in args.bounded]
    print(f"seed {args.seed}; rules: ancestor <- parent; ancestor <- parent o ancestor; master {args.master}")
    print("| workload | edges | engine | s (median) | rounds | derived | py peak MB | JVM peak MB | shuffle MB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, make, depth in workloads:
        facts = os.path.join(work, name, "facts")
        n = write_facts(facts, make())
        results = {}
        for engine in args.engines:
            runs = [measure(engine, facts, rules, os.path.join(work, name), depth, args.master) for _ in range(args.runs)]
            ok = [r for r in runs if "error" not in r]
            if not ok:
                print(f"| {name} | {n:,} | {engine} | failed: {runs[0]['error']} | | | | | |")
                continue
            med = statistics.median(r["seconds"] for r in ok)
            r = ok[0]
            results[engine] = med
            jvm = "" if r["jvm_peak_mb"] is None else f"{r['jvm_peak_mb']:.0f}"
            sh = "" if r["shuffle_mb"] is None else f"{r['shuffle_mb']:.0f}"
            print(f"| {name} | {n:,} | {engine} | {med:.1f} | {r['rounds']} | {r['derived']:,} | "
                  f"{r['py_peak_mb']:.0f} | {jvm} | {sh} |", flush=True)
        if name == "go" and args.data:
            with gzip.open(os.path.join(args.data, "go", "closure_ancestors.tsv.gz"), "rt") as fh:
                gold = sum(1 for _ in fh)
            for engine in results:
                got = count_pairs(os.path.join(work, name, f"out-{engine}"))
                print(f"  go {engine}: {got:,} ancestor pairs; answer key {gold:,}: {'equal' if got == gold else 'DIFFERENT'}")
        if "local" in results and "spark" in results:
            print(f"  {name}: spark / in-process time = {results['spark'] / results['local']:.2f}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
