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
JVM (VmHWM), CPU seconds of each (user + system), the 1-minute load average during the run, disk
used, and Spark's shuffle bytes from its status store. Prints the machine. The forests are generated
in chunks of 4M edges straight to Parquet files, so 100M edges need about as little memory as 1M.

    python benchmarks/spark.py --data ../shared/data --sizes 1000000 --bounded 10000000
    nice -n 19 python benchmarks/spark.py --sizes --bounded 100000000 --engines spark --partitions 200 \\
        --driver-memory 9g --local-dir /tmp/spark-100m/local --conf spark.rdd.compress=true
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
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


CHUNK_ROWS = 4_000_000


def tree_chunks(n: int, seed: int, chunk: int = CHUNK_ROWS):
    """The forest of ``n`` edges ``n{i} parent n{p}`` (i = 1..n, p drawn uniformly below i), as
    ``(children, parents)`` int64 arrays of at most ``chunk`` rows each: memory stays a few chunks'
    worth at any ``n``. The draws are Python's ``random.Random(seed).randrange(i)`` in order (0.4 µs
    each), so every size's graph is the one the earlier list-based generator made, bit for bit."""
    import numpy as np

    rng = random.Random(seed)
    for start in range(1, n + 1, chunk):
        stop = min(start + chunk, n + 1)
        yield (np.arange(start, stop, dtype=np.int64),
               np.fromiter(map(rng.randrange, range(start, stop)), dtype=np.int64, count=stop - start))


def write_tree_parquet(path: str, n: int, seed: int, chunk: int = CHUNK_ROWS) -> int:
    """The forest of :func:`tree_chunks` as the materialize input layout, one Parquet file per chunk
    (``part-00000.parquet``, ...), the keys built by Arrow kernels (no Python string per edge)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    os.makedirs(path, exist_ok=True)
    for k, (child, parent) in enumerate(tree_chunks(n, seed, chunk)):
        m = len(child)
        key = lambda ids: pc.binary_join_element_wise("n", pc.cast(pa.array(ids), pa.string()), "")  # noqa: E731
        table = pa.table({"s": key(child), "r": pa.repeat("parent", m), "o": key(parent),
                          "c": pa.repeat(1.0, m)})
        pq.write_table(table, os.path.join(path, f"part-{k:05d}.parquet"))
    return n


def _descendants(pid: int) -> list[int]:
    """The processes under ``pid`` (the Spark driver JVM and anything it starts)."""
    try:
        kids = [int(k) for k in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()]
    except OSError:
        return []
    return kids + [d for k in kids for d in _descendants(k)]


def _proc(pid: int | str) -> tuple[int, float]:
    """Peak RSS (VmHWM, kB) and CPU seconds (user + system) of one process; (0, 0.0) once it is gone.
    VmHWM, not ``ru_maxrss``: Linux carries ``ru_maxrss`` across exec, so a child started by a
    parent holding a big graph reported the parent's size (the 2.9 GB "driver" at 10M)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            hwm = next((int(line.split()[1]) for line in fh if line.startswith("VmHWM:")), 0)
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return hwm, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0, 0.0


class Sampler(threading.Thread):
    """Every second: peak RSS and CPU seconds of the JVM (the processes under this one), the 1-minute
    load average, and the free space where Spark writes; kills the JVM when that space falls under
    ``min_free`` bytes (the disk is shared), so a run too big for it stops and says so."""

    def __init__(self, disk_path: str, min_free: int, local_dir: str | None = None) -> None:
        super().__init__(daemon=True)
        self.disk_path, self.min_free, self.local_dir = disk_path, min_free, local_dir
        self.local_peak, self.ticks = 0, 0
        self.jvm_peak_kb, self.jvm_cpu, self.loads = 0, {}, []
        self.free_start = self.free_min = shutil.disk_usage(disk_path).free
        self.aborted = None
        self.stop = threading.Event()

    def sample(self) -> None:
        for pid in _descendants(os.getpid()):
            hwm, cpu = _proc(pid)
            self.jvm_peak_kb = max(self.jvm_peak_kb, hwm)
            if cpu:
                self.jvm_cpu[pid] = cpu
        self.loads.append(os.getloadavg()[0])
        free = shutil.disk_usage(self.disk_path).free
        self.free_min = min(self.free_min, free)
        self.ticks += 1
        if self.local_dir and self.ticks % 10 == 1:   # Spark's own files (shuffle, spilled checkpoints)
            self.local_peak = max(self.local_peak, _folder_bytes(self.local_dir))
        if free < self.min_free and self.aborted is None:
            self.aborted = f"free disk {free / 2**30:.1f} GB < {self.min_free / 2**30:.0f} GB"
            for pid in _descendants(os.getpid()):
                os.kill(pid, 9)

    def run(self) -> None:
        while not self.stop.wait(1.0):
            self.sample()


def _folder_bytes(path: str) -> int:
    """Bytes of the files under ``path``; files removed while it walks count as 0."""
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def run_engine(engine: str, facts: str, rules: str, out: str, max_depth: int | None, master: str,
               conf: dict[str, str], min_free: int) -> dict:
    """One materialize run in this (child) process; prints one JSON line."""
    from thinkingdb.spark.materialize import load_rules, materialize

    shutil.rmtree(out, ignore_errors=True)
    rule_set, vocab = load_rules([rules], default_rules=False)
    disk = conf.get("spark.local.dir", os.path.dirname(out))
    os.makedirs(disk, exist_ok=True)
    sampler = Sampler(disk, min_free, conf.get("spark.local.dir") if engine == "spark" else None)
    sampler.start()
    t0 = time.perf_counter()

    def on_round(rnd: int, new: int, improved: int, seconds: float) -> None:
        sys.stderr.write(f"{time.strftime('%H:%M:%S')} round {rnd}: {new:,} new, {improved:,} improved, "
                         f"{seconds:.1f} s; load {os.getloadavg()[0]:.2f}\n")
        sys.stderr.flush()

    report = materialize(facts, out, rule_set, vocab, engine=engine, master=master, max_depth=max_depth,
                         conf=conf if engine == "spark" else {}, on_round=on_round)
    seconds = time.perf_counter() - t0
    stages = _shuffle_stages() if engine == "spark" else None
    sampler.sample()
    sampler.stop.set()
    py_peak_kb, _ = _proc("self")
    cpu = os.times()
    return {"engine": engine, "seconds": seconds, "rounds": report.rounds, "derived": report.derived,
            "truncated": report.truncated, "py_peak_mb": py_peak_kb / 1024, "py_cpu_s": cpu.user + cpu.system,
            "jvm_peak_mb": sampler.jvm_peak_kb / 1024 if sampler.jvm_peak_kb else None,
            "jvm_cpu_s": sum(sampler.jvm_cpu.values()) if sampler.jvm_cpu else None,
            "load_min": min(sampler.loads, default=None), "load_max": max(sampler.loads, default=None),
            "load_mean": statistics.fmean(sampler.loads) if sampler.loads else None,
            "disk_peak_mb": (sampler.free_start - sampler.free_min) / 2**20,   # machine-wide: others' files too
            "local_dir_peak_mb": sampler.local_peak / 2**20 if sampler.local_dir else None,
            "input_mb": _folder_bytes(facts) / 2**20, "output_mb": _folder_bytes(out) / 2**20,
            "shuffle_mb": None if stages is None else sum(b for _, _, b in stages) / 2**20,
            "shuffle_stages_mb": None if stages is None else [(i, round(b / 2**20, 1)) for i, _, b in stages]}


def _shuffle_stages() -> list[tuple[int, str, int]] | None:
    """``(stage id, name, shuffle bytes written)`` of every stage of this process's Spark
    application that wrote any, from its status REST endpoint (the application's own UI address: a
    second Spark application on this machine takes the next port)."""
    try:
        from pyspark.sql import SparkSession

        sc = SparkSession.getActiveSession().sparkContext
        url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/stages"
        stages = json.load(urllib.request.urlopen(url, timeout=60))
        return sorted((s["stageId"], s.get("name", ""), s.get("shuffleWriteBytes", 0)) for s in stages
                      if s.get("shuffleWriteBytes", 0))
    except Exception:  # noqa: BLE001 - a measurement we report as missing, never a failure
        return None


def spark_conf(args) -> dict[str, str]:
    conf = {"spark.ui.enabled": "true", "spark.ui.port": "4047", "spark.driver.memory": args.driver_memory,
            "spark.sql.shuffle.partitions": str(args.partitions)}
    if args.local_dir:
        conf["spark.local.dir"] = args.local_dir
    for item in args.conf:
        key, _, value = item.partition("=")
        conf[key] = value
    return conf


def child(args) -> int:
    result = run_engine(args.engine, args.facts, args.rules, args.out, args.max_depth, args.master,
                        spark_conf(args), int(args.min_free_gb * 2**30))
    print(json.dumps(result))
    return 0


def measure(engine: str, facts: str, rules: str, work: str, max_depth, args) -> dict:
    """One run in a fresh process; its progress lines go to this process's stderr."""
    cmd = [sys.executable, __file__, "--child", "--engine", engine, "--facts", facts, "--rules", rules,
           "--out", os.path.join(work, f"out-{engine}"), "--master", args.master,
           "--partitions", str(args.partitions), "--driver-memory", args.driver_memory,
           "--min-free-gb", str(args.min_free_gb)]
    cmd += ["--local-dir", args.local_dir] if args.local_dir else []
    cmd += [x for item in args.conf for x in ("--conf", item)]
    if max_depth is not None:
        cmd += ["--max-depth", str(max_depth)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {"engine": engine, "error": f"exit {proc.returncode}"}
    return json.loads(lines[-1])


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
    ap.add_argument("--partitions", type=int, default=8, help="spark.sql.shuffle.partitions")
    ap.add_argument("--driver-memory", default="8g", help="spark.driver.memory (the JVM heap in local mode)")
    ap.add_argument("--local-dir", help="spark.local.dir: where shuffle files and spilled checkpoints go")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="more Spark settings")
    ap.add_argument("--work", help="folder for the generated facts and outputs (default: a new temporary one)")
    ap.add_argument("--min-free-gb", type=float, default=5.0,
                    help="stop a run (kill its JVM) when the free disk falls under this; the disk is shared")
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
    work = args.work or tempfile.mkdtemp(prefix="tdb-spark-bench-")
    os.makedirs(work, exist_ok=True)
    rules = os.path.join(work, "rules.tdb")
    with open(rules, "w", encoding="utf-8") as fh:
        fh.write(RULES)
    workloads = []
    if args.data:
        workloads.append(("go", lambda path: write_facts(path, go_edges(args.data)), None))
    workloads += [(f"tree-{n}", (lambda path, n=n: write_tree_parquet(path, n, args.seed)), None) for n in args.sizes]
    workloads += [(f"tree-{n}-d2", (lambda path, n=n: write_tree_parquet(path, n, args.seed)), 2) for n in args.bounded]
    print(f"seed {args.seed}; rules: ancestor <- parent; ancestor <- parent o ancestor; master {args.master}; "
          f"Spark: {args.partitions} shuffle partitions, driver memory {args.driver_memory}, conf {args.conf}")
    print("| workload | edges | engine | s (median) | rounds | derived | py peak MB | JVM peak MB | shuffle MB "
          "| CPU s (JVM + py) | load (1 min, min-max) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, make, depth in workloads:
        facts = os.path.join(work, name, "facts")
        t0 = time.perf_counter()
        n = make(facts)
        print(f"  {name}: generated {n:,} edges in {time.perf_counter() - t0:.1f} s; generator peak RSS "
              f"{_proc('self')[0] / 1024:.0f} MB; input {_folder_bytes(facts) / 2**20:.0f} MB", flush=True)
        results = {}
        for engine in args.engines:
            runs = [measure(engine, facts, rules, os.path.join(work, name), depth, args) for _ in range(args.runs)]
            for r in runs:
                print("  " + json.dumps(r), flush=True)
            ok = [r for r in runs if "error" not in r]
            if not ok:
                print(f"| {name} | {n:,} | {engine} | failed: {runs[0]['error']} | | | | | | | |", flush=True)
                continue
            med = statistics.median(r["seconds"] for r in ok)
            r = ok[0]
            results[engine] = med
            jvm = "" if r["jvm_peak_mb"] is None else f"{r['jvm_peak_mb']:.0f}"
            sh = "" if r["shuffle_mb"] is None else f"{r['shuffle_mb']:.0f}"
            cpu = f"{r['jvm_cpu_s'] or 0:.0f} + {r['py_cpu_s']:.0f}"
            print(f"| {name} | {n:,} | {engine} | {med:.1f} | {r['rounds']} | {r['derived']:,} | "
                  f"{r['py_peak_mb']:.0f} | {jvm} | {sh} | {cpu} | {r['load_min']:.2f}-{r['load_max']:.2f} |", flush=True)
        if name == "go" and args.data:
            with gzip.open(os.path.join(args.data, "go", "closure_ancestors.tsv.gz"), "rt") as fh:
                gold = sum(1 for _ in fh)
            for engine in results:
                got = count_pairs(os.path.join(work, name, f"out-{engine}"))
                print(f"  go {engine}: {got:,} ancestor pairs; answer key {gold:,}: {'equal' if got == gold else 'DIFFERENT'}")
        if "local" in results and "spark" in results:
            print(f"  {name}: spark / in-process time = {results['spark'] / results['local']:.2f}")
        shutil.rmtree(os.path.join(work, name), ignore_errors=True)   # big workloads: free the disk as we go
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
