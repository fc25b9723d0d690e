"""Goal-directed evaluation on issue 20's questions: the CLI in a fresh process, before and after.

A store of ``--facts`` random ``depends_on`` edges over ``--symbols`` symbols (fixed ``--seed``; random
edges, so the graph has cycles) is ingested once into ``--work``; then each question runs as
``thinkingdb query`` / ``thinkingdb why`` in a fresh process for every source tree given with
``--tree LABEL=PATH`` (``PATH`` is put first on ``PYTHONPATH``; ``after`` is this checkout), the trees
interleaved, ``--repeat`` times. Printed per question and tree: median wall time, median CPU time
(user + system) and median peak RSS of the process (its own ``getrusage``), the number of answers (TSV rows: no proofs are built; for ``why``,
1 when a proof was printed) and how the run ended (the bound the CLI says stopped it, exit code).

    python benchmarks/demand.py --tree before=/tmp/before --repeat 3
    python benchmarks/demand.py --db /tmp/tdb-scale/random-1000000/kb.sqlite --only "both ways" --tree before=/tmp/before
    python benchmarks/demand.py --db /tmp/tdb-serve-kb/pristine/kb.sqlite --only relevant_for --chain-symbol gucai

Measures the whole process: Python start, opening the store, building the fact graph (the part
issue 20's persistent graph removes), the closure and printing. The machine is shared: read medians,
and CPU time rather than wall time when the load average is high.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

import machine

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CLI = ["-c", "import resource, sys\nfrom thinkingdb.cli import main\ntry:\n    rc = main()\nfinally:\n"
       "    u = resource.getrusage(resource.RUSAGE_SELF)\n"
       "    sys.stderr.write(f'\\nUSAGE {u.ru_maxrss} {u.ru_utime + u.ru_stime}\\n')\nsys.exit(rc)"]

QUESTIONS = [
    ("1-hop, default rules", ["query", "? n5 depends_on ?x."]),
    ("1-hop, --no-default-rules", ["query", "? n5 depends_on ?x.", "--no-default-rules"]),
    ("depends_on+, --no-default-rules", ["query", "? n5 depends_on+ ?x.", "--no-default-rules"]),
    ("depends_on+, default rules", ["query", "? n5 depends_on+ ?x."]),
    ("1-hop, --max-depth 2", ["query", "? n5 depends_on ?x.", "--max-depth", "2"]),
    ("conjunction, default rules", ["query", "? n5 depends_on ?x, ?x depends_on n7."]),
    ("why, default rules", ["why", "n5 depends_on n7"]),
    ("read both ways, two constants", ["query", "? ?x depends_on n7, n5 depends_on ?x."]),
    ("read both ways, shared dependency", ["query", "? n5 depends_on ?x, ?y depends_on ?x."]),
    ("supports (one rule over depends_on)", ["query", "? n5 supports ?x."]),
    ("supported by (one rule over depends_on)", ["query", "? ?x supports n7."]),
    ("conjunction, --max-nodes 10000", ["query", "? n5 depends_on ?x, ?x depends_on ?y.", "--max-nodes", "10000"]),
    # the default library's relevance rule (a linear chain through relevant_for): on a store of the serve
    # benchmark's generator (--db), from the symbol --chain-symbol names
    ("relevant_for (a linear chain rule)", ["query", "? {chain} relevant_for ?x."]),
]


def generate(path: str, facts: int, symbols: int, seed: int) -> None:
    rnd = random.Random(seed)
    with open(path, "w", encoding="utf-8") as fh:
        for _ in range(facts):
            fh.write(f"n{rnd.randrange(symbols)}\tdepends_on\tn{rnd.randrange(symbols)}\n")


def run(tree: str, db: str, argv: list[str], timeout: float) -> dict:
    env = dict(os.environ, PYTHONPATH=tree, THINKINGDB_DB=db)
    cmd = [sys.executable, *CLI, *argv] + (["--format", "tsv"] if argv[0] == "query" else [])
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd="/tmp")
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    wall = time.perf_counter() - t0
    rss = cpu = float("nan")
    for line in err.decode("utf-8", "replace").splitlines():
        if line.startswith("USAGE "):
            rss, cpu = int(line.split()[1]) / 1024, float(line.split()[2])
    text = err.decode("utf-8", "replace")
    truncated = next((w for w in ("depth", "nodes", "derived", "time") if f"stopped at its {w} bound" in text), None)
    lines = out.decode("utf-8", "replace").splitlines()
    answers = max(len(lines) - 1, 0) if argv[0] == "query" else int(proc.returncode == 0)
    return {"wall": wall, "rss": rss, "cpu": cpu, "answers": answers, "truncated": truncated, "code": proc.returncode,
            "err": [x for x in err.decode("utf-8", "replace").strip().splitlines() if not x.startswith("USAGE")][-1:]
            if proc.returncode not in (0, 1) else []}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default="/tmp/tdb-demand-bench")
    ap.add_argument("--db", help="an existing store to ask (read as it is) instead of generating one")
    ap.add_argument("--facts", type=int, default=1_000_000)
    ap.add_argument("--symbols", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--tree", action="append", default=[], metavar="LABEL=PATH")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds before a process is killed")
    ap.add_argument("--only", action="append", default=[], help="run only questions whose label contains this")
    ap.add_argument("--chain-symbol", default="gucai", help="the subject of the relevant_for question (default gucai, "
                                                            "a symbol of the serve benchmark's store)")
    args = ap.parse_args()
    trees = [("after", ROOT)] + [tuple(t.split("=", 1)) for t in args.tree]
    os.makedirs(args.work, exist_ok=True)
    tag = f"{args.facts}-{args.symbols}-{args.seed}"
    db = args.db or os.path.join(args.work, f"kb-{tag}.sqlite")
    if not os.path.exists(db):
        tsv = os.path.join(args.work, f"edges-{tag}.tsv")
        generate(tsv, args.facts, args.symbols, args.seed)
        subprocess.run([sys.executable, *CLI, "--db", db, "--quiet", "ingest", tsv],
                       check=True, env=dict(os.environ, PYTHONPATH=ROOT))
    print(machine.describe())
    what = f"{db}" if args.db else f"{args.facts:,} random depends_on facts over {args.symbols:,} symbols, seed {args.seed}"
    print(f"store: {what}; each question a fresh CLI process, {args.repeat} interleaved runs, medians")
    questions = [(label, [a.format(chain=args.chain_symbol) for a in argv]) for label, argv in QUESTIONS
                 if not args.only or any(o in label for o in args.only)]
    results: dict = {}
    for _ in range(args.repeat):
        for label, argv in questions:
            for name, tree in trees:
                results.setdefault((label, name), []).append(run(tree, db, argv, args.timeout))
    print(f"{'question':34} {'tree':8} {'wall s':>8} {'CPU s':>8} {'RSS MB':>8} {'answers':>8}  ended")
    for label, _ in questions:
        for name, _ in trees:
            rs = results[(label, name)]
            wall = statistics.median(r["wall"] for r in rs)
            rss = statistics.median(r["rss"] for r in rs)
            cpu = statistics.median(r["cpu"] for r in rs)
            last = rs[-1]
            end = f"truncated={last['truncated']} exit={last['code']}" + (f" {last['err']}" if last["err"] else "")
            print(f"{label:34} {name:8} {wall:8.2f} {cpu:8.2f} {rss:8.0f} {str(last['answers']):>8}  {end}")


if __name__ == "__main__":
    main()
