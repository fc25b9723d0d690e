"""The first HDC search after a one-unit write: the saved HDC index carried through the change log
(``thinkingdb/retrieval/hdccarry.py``) against the rebuild from every unit it replaces (issue 20).

    python benchmarks/hdc_carry.py [--units 20000] [--facts 100000] [--db PATH] [--runs 3] [--seed 7]

The store: a copy of ``--db`` (with its side files; the original is never written), else one made
here from ``benchmarks/retrieval.py``'s generator (``--units`` units, ``--facts`` facts, same seed).
A first search saves its HDC index. Then, per run and per mode, a fresh copy of that store takes a
write of one new unit (``thinkingdb ingest``) and two fresh CLI processes search
``qwertyuiop zxcvb`` with ``--profile kb-balanced`` (BM25 finds nothing, so HDC runs):

- ``carry``: as shipped — the saved index is loaded and the one changed unit patched;
- ``rebuild``: the same with ``hdccarry.carry`` replaced by ``lambda *a: None`` (what every version
  before it did: encode every unit again, then save).

Reported per mode: medians over ``--runs`` of the wall time and peak RSS of the first process after
the write and of the one after it. The results (ids and scores of ``--json``) of both modes must
be equal (checked, for that query, a misspelt one of the unit written and three drawn from the units'
claims); exit status 1 if not.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import describe

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

QUERY = "qwertyuiop zxcvb"
LAUNCH = "import sys; from thinkingdb.cli.main import main; sys.exit(main())"
NO_CARRY = ("import sys; import thinkingdb.retrieval.hdccarry as h; h.carry = lambda *a: None; "
            "from thinkingdb.cli.main import main; sys.exit(main())")


def run(code: str, args: list[str]) -> tuple[float, float, str]:
    """``(seconds, peak RSS MiB, stdout)`` of one fresh process ``python -c code args``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):   # 1: no results
        raise SystemExit(f"{args} exited {proc.returncode}")
    return took, usage.ru_maxrss / 1024, out


def copy_store(db: Path, into: Path) -> Path:
    """``db`` and its side files (``kb.sqlite.graph``, ``.access``, ...) copied into ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    for f in db.parent.glob(db.name + "*"):
        if f.is_file() and not f.name.endswith((".lock", "-shm")):
            shutil.copy2(f, into / f.name)
    return into / db.name


def results(out: str) -> tuple[list, list]:
    """The returned ``(id, score)`` pairs and the HDC lane's ranked list (up to 50) of a ``--json`` search."""
    got = json.loads(out)
    return ([(r["unit_id"], r["score"]) for r in got["results"]],
            [(r["unit_id"], r["score"]) for r in got["trace"]["lanes"]["hdc"].get("ranked", [])])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--units", type=int, default=20_000)
    ap.add_argument("--facts", type=int, default=100_000)
    ap.add_argument("--db", help="measure on a copy of this store (default: one generated here)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="tdb-hdccarry-") as tmp:
        tmp = Path(tmp)
        if args.db:
            base = copy_store(Path(args.db), tmp / "base")
        else:
            from retrieval import generate
            from thinkingdb.api import KnowledgeBase
            (tmp / "base").mkdir()
            generate(tmp / "units.jsonl", args.units, args.facts, args.seed, None)
            base = tmp / "base" / "kb.sqlite"
            with KnowledgeBase(str(base)) as kb:
                kb.ingest([str(tmp / "units.jsonl")])
        search = ["--db", "DB", "search", QUERY, "--profile", "kb-balanced", "--json"]
        took, rss, _ = run(LAUNCH, [a if a != "DB" else str(base) for a in search])
        print(f"store ready; first search (HDC loaded or built and saved): {took:.2f} s, {rss:.0f} MiB")
        rng = random.Random(args.seed)
        from thinkingdb.api import KnowledgeBase
        with KnowledgeBase(str(base)) as kb:
            claims = [u.claim for u in kb.store.units() if u.claim]
        # the unit written, then three words of a claim, each misspelt: BM25 finds none, HDC's n-grams do
        queries = [QUERY, "tlz nginks"] + [" ".join(w + "q" for w in rng.sample(c.split(), min(3, len(c.split()))))
                             for c in rng.sample(claims, 3)]
        unit = tmp / "u.jsonl"
        unit.write_text(json.dumps({"id": "bench-new-1", "claim": "tls for nginx"}) + "\n", encoding="utf-8")

        times: dict[str, list[tuple[float, float, float, float]]] = {"carry": [], "rebuild": []}
        answers: dict[str, list] = {}
        for r in range(args.runs):
            for mode, code in (("carry", LAUNCH), ("rebuild", NO_CARRY)):
                db = copy_store(base, tmp / f"{mode}-{r}")
                run(LAUNCH, ["--db", str(db), "ingest", str(unit)])
                first = run(code, [a if a != "DB" else str(db) for a in search])
                second = run(code, [a if a != "DB" else str(db) for a in search])
                times[mode].append((first[0], first[1], second[0], second[1]))
                if r == 0:
                    answers[mode] = [results(first[2])] + [results(run(code, ["--db", str(db), "search", q, "--profile",
                                                                             "kb-balanced", "--json"])[2])
                                                           for q in queries[1:]]
                shutil.rmtree(tmp / f"{mode}-{r}")
                print(f"run {r + 1} {mode:8s} first {first[0]:6.2f} s {first[1]:6.0f} MiB   "
                      f"next {second[0]:6.2f} s {second[1]:6.0f} MiB", flush=True)

    print(f"\n{describe('numpy')}")
    print(f"search {QUERY!r} --profile kb-balanced after a 1-unit ingest, fresh CLI processes, "
          f"medians of {args.runs}\n")
    print("| mode | first search after the write | the search after it |")
    print("|---|---|---|")
    for mode, rows in times.items():
        med = [statistics.median(x[i] for x in rows) for i in range(4)]
        print(f"| {mode} | {med[0]:.2f} s, {med[1]:.0f} MiB | {med[2]:.2f} s, {med[3]:.0f} MiB |")
    same = answers["carry"] == answers["rebuild"]
    hits = sum(len(h) for _, h in answers["carry"])
    print(f"\nresults and HDC rankings ({hits} HDC hits) of {len(queries)} queries equal in both modes: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
