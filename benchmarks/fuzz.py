"""Fuzzing at scale (issue 21): the generators of tests/test_fuzz.py, many more cases, one process per
target, and what each target cost.

Targets: the language (``compile_source``), query/why/search over one text, and every reader
(.tdb .tsv .csv .jsonl .md .txt, and .nt .ttl when the rdf extra is installed). Each target runs
``--cases`` / targets cases drawn by hypothesis from the test module's strategies (seeded with
``--seed``, generation only: no shrinking, no example database), then a few large inputs of its own
(10 MB lines, 10 MB of brackets, deep JSON). An *escape* is any exception that is not a
``ThinkingDBError``, or a refused ingest whose diagnostics do not name the file or that changed the
store. Printed per target: cases run, escapes, the slowest case's time and the process's peak RSS
(VmHWM: each target is a fresh process).

    python benchmarks/fuzz.py --cases 18000 --seed 21
    python benchmarks/fuzz.py --cases 600 --targets language 'reader .ttl'
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Python puts this script's folder first on the path, where benchmarks/lexical.py would shadow the
# lexical package: take it off (it is appended again after the packages, for machine.py)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent / "tests"))


def _targets() -> list[str]:
    import test_fuzz
    return ["language", "query / why / search"] + [f"reader {e}" for e in test_fuzz.EXTENSIONS]


def _big_cases(target: str) -> list:
    """Large inputs run once per target after the generated ones."""
    line = b"x" * 10_000_000
    if target == "language" or target.startswith("query"):
        return ["x" * 10_000_000 + " r y.", "? a " + "(" * 100_000 + "r" + ")" * 100_000 + " ?x.",
                "? a (r|s){2,1000000000} ?x."]
    ext = target.split()[-1]
    out = [(line + b"\n", False), (line + b" r y.\n", True), (b"a\tr\t" + line + b"\n", False)]
    if ext in (".ttl", ".nt"):
        out += [(b"@prefix : <http://e/> .\n:a :b " + b"(" * 10_000_000 + b"\n", False),
                (b"<http://e/a> <http://e/b> \"" + line + b"\" .\n", False)]
    if ext == ".jsonl":
        out += [(b'{"id": "d", "x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}\n", True)]
    if ext == ".md":
        out += [(b"---\n" + b"".join(b"k%d: v\n" % i for i in range(20_000)) + b"---\n# T\ntext\n", False),
                (b"".join(b"# H\n\ntext\n\n" for _ in range(20_000)), False)]
    return out


def _peak_rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for row in fh:
            if row.startswith("VmHWM:"):
                return int(row.split()[1]) / 1024
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(target: str, n: int, seed: int) -> dict:
    """Run one target in this process; the result as a dict."""
    from hypothesis import HealthCheck, Phase, given, settings, seed as hseed, strategies as st

    import test_fuzz
    from thinkingdb.errors import ThinkingDBError
    work = Path(tempfile.mkdtemp(prefix="tdb-fuzz-"))
    kb = None
    if target == "language":
        strategy, run = test_fuzz.TEXTS, test_fuzz.language_case
    elif target.startswith("query"):
        kb = test_fuzz.make_kb(work)
        strategy, run = test_fuzz.TEXTS, (lambda text: test_fuzz.query_case(kb, text))
    else:
        kb = test_fuzz.make_kb(work)
        ext = target.split()[-1]
        strategy = st.tuples(test_fuzz.BYTES, st.booleans())
        run = (lambda case: test_fuzz.reader_case(kb, work, case[0], ext, case[1]))
    stats = {"target": target, "cases": 0, "escapes": 0, "max_s": 0.0, "first_escapes": []}

    def one(case) -> None:
        t0 = time.perf_counter()
        try:
            run(case)
        except ThinkingDBError:
            pass
        except Exception:  # noqa: BLE001 - an escape is what this counts
            stats["escapes"] += 1
            if len(stats["first_escapes"]) < 3:
                stats["first_escapes"].append({"case": repr(case)[:300], "traceback": traceback.format_exc()[-2000:]})
        finally:
            took = time.perf_counter() - t0
            stats["cases"] += 1
            if took > stats["max_s"]:
                stats["max_s"], stats["slowest"] = took, repr(case)[:120]

    @hseed(seed)
    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def drive(case):
        one(case)
    drive()
    for case in _big_cases(target):
        one(case)
    stats["peak_rss_mb"] = round(_peak_rss_mb(), 1)
    stats["max_s"] = round(stats["max_s"], 3)
    if kb is not None:
        kb.close()
    return stats


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=1800, help="generated cases in all, split evenly over the targets")
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--targets", nargs="*", help="run only these (names as printed)")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    ap.add_argument("--child", nargs=3, metavar=("TARGET", "N", "SEED"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]), int(args.child[2]))))
        return 0
    sys.path.append(str(HERE))   # after the packages: benchmarks/lexical.py must not shadow lexical
    from machine import describe
    targets = args.targets or _targets()
    per = max(1, args.cases // len(targets))
    print(f"# fuzz: {per} generated cases per target + large inputs, seed {args.seed}; {describe()}")
    print(f"{'target':<24} {'cases':>7} {'escapes':>8} {'slowest s':>10} {'peak RSS MB':>12}")
    results = []
    t0 = time.perf_counter()
    for target in targets:
        p = subprocess.run([sys.executable, __file__, "--child", target, str(per), str(args.seed)],
                           capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        if p.returncode != 0:
            res = {"target": target, "cases": 0, "escapes": 1, "max_s": 0.0, "peak_rss_mb": 0.0,
                   "first_escapes": [{"case": "(the target's process died)", "traceback": p.stderr[-2000:]}]}
        else:
            res = json.loads(p.stdout.strip().splitlines()[-1])
        results.append(res)
        print(f"{target:<24} {res['cases']:>7} {res['escapes']:>8} {res['max_s']:>10.3f} {res['peak_rss_mb']:>12.1f}",
              flush=True)
    total = sum(r["cases"] for r in results)
    escapes = sum(r["escapes"] for r in results)
    print(f"{'total':<24} {total:>7} {escapes:>8}   ({time.perf_counter() - t0:.0f} s wall)")
    for r in results:
        for e in r["first_escapes"]:
            print(f"\n## escape in {r['target']}: {e['case']}\n{e['traceback']}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 1 if escapes else 0


if __name__ == "__main__":
    sys.exit(main())
