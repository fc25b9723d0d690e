"""Serving benchmark: a bounded load test of ``thinkingdb serve`` on loopback, beside in-process calls.

    python benchmarks/serve.py [--units 100000] [--facts 1000000] [--db PATH] [--cache DIR] [--clients 8]
                               [--seconds 60] [--seed 7] [--data ../shared/data]

The knowledge base is the one of ``benchmarks/retrieval.py`` (same generator, same seed: ``--units``
units with acl tags, regions and validity dates, ``--facts`` facts, plus Cranfield when ``--data`` has
it). A reader key searches as that benchmark's caller (``team:alpha``, region ``eu``), so every request
goes through a per-caller view. The server runs as a separate process (``thinkingdb serve``) on
127.0.0.1 and a port the kernel picks; ``--clients`` asyncio clients (httpx) send a fixed mix of
requests for ``--seconds``:

    search kb-fast, search kb-balanced, search kb-thinkingdb, query, why, GET /units/{id}, GET /stats

Phase 1 measures reads alone; phase 2 the same reads while one more client ingests a small file again
and again through ``POST /ingest`` (each ingest is one transaction; the server then warms a new
snapshot and swaps it in). Reported per endpoint: requests, requests/s, p50 and p99 latency (ms),
errors (anything but HTTP 200). The peer is the library itself: the same requests as in-process calls
of :class:`thinkingdb.serve.Service` on one thread, no HTTP (p50 and p99), so the table shows what the
HTTP layer and the concurrency add. The client and the server share the machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import describe, peak_rss_mb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from retrieval import AS_OF, CALLER, generate, make_queries  # noqa: E402

from thinkingdb.api import KnowledgeBase  # noqa: E402
from thinkingdb.serve import Principal, Service  # noqa: E402
from thinkingdb.store.keys import add_key  # noqa: E402
from thinkingdb.store.sqlite import Store  # noqa: E402

LAUNCH = "import sys; from thinkingdb.cli.main import main; sys.exit(main())"
ENDPOINTS = ["search kb-fast", "search kb-balanced", "search kb-thinkingdb", "query", "why", "units", "stats"]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(q / 100 * (len(xs) - 1)))))] if xs else float("nan")


def workload(kb: KnowledgeBase, rng: random.Random, n: int) -> list[tuple[str, str, str, dict | None]]:
    """``n`` requests per endpoint as (label, method, path, body), drawn from the knowledge base."""
    from thinkingdb.retrieval.lanes import lanes_for
    texts = make_queries(rng, kb, n, {})
    lanes = lanes_for(kb)
    units = [u.id for u in lanes.units if u.id.startswith("u")]
    facts = [t for u in rng.sample(units, min(len(units), 4 * n)) for t, _ in lanes.facts.unit_facts.get(u, ())[:1]]
    out = []
    for i in range(n):
        base = {"as_of": AS_OF}
        for profile in ("kb-fast", "kb-balanced", "kb-thinkingdb"):
            out.append((f"search {profile}", "POST", "/search", {"text": texts[i], "profile": profile, **base}))
        t = facts[i % len(facts)]
        out.append(("query", "POST", "/query", {"query": f"? {t.subject} {t.relation} ?x", "limit": 20, **base}))
        out.append(("why", "POST", "/why", {"fact": f"{t.subject} {t.relation} {t.object}", **base}))
        out.append(("units", "GET", f"/units/{rng.choice(units)}", None))
        out.append(("stats", "GET", "/stats", None))
    return out


def in_process(db: str, requests, principal: Principal) -> dict[str, list[float]]:
    """The same requests as direct calls of the service, on one thread (the no-HTTP baseline)."""
    svc = Service(db)
    times: dict[str, list[float]] = {}
    try:
        for label, _, path, body in requests[: 7 * 5]:   # warm-up, not measured
            _call(svc, principal, path, body)
        for label, _, path, body in requests:
            t0 = time.perf_counter()
            _call(svc, principal, path, body)
            times.setdefault(label, []).append((time.perf_counter() - t0) * 1000)
    finally:
        svc.close()
    return times


def _call(svc: Service, who: Principal, path: str, body):
    if path.startswith("/units/"):
        try:
            return svc.unit(who, path[len("/units/"):], {"as_of": AS_OF})
        except Exception:  # noqa: BLE001 - a unit hidden from the caller is a 404 over HTTP too
            return None
    if path == "/stats":
        return svc.stats(who, {"as_of": AS_OF})
    return getattr(svc, path[1:])(who, dict(body))


async def load(url: str, token: str, requests, clients: int, seconds: float, writer: str | None) -> dict:
    import httpx
    results: dict[str, list[tuple[float, int]]] = {}
    ends: list[float] = []
    deadline = time.monotonic() + seconds
    headers = {"Authorization": f"Bearer {token}"}

    async def client(k: int) -> None:
        i = k          # the clients walk the mix together (client k sends k, k + clients, ...), so a
        # window covers the mix in its order, heavy requests included, whatever the throughput
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as http:
            while time.monotonic() < deadline:
                label, method, path, body = requests[i % len(requests)]
                i += clients
                t0 = time.perf_counter()
                try:
                    r = await http.request(method, path, json=body, params={"as_of": AS_OF} if method == "GET" else None)
                    status = r.status_code if not (path.startswith("/units/") and r.status_code == 404) else 200
                except httpx.HTTPError:
                    status = 0
                results.setdefault(label, []).append(((time.perf_counter() - t0) * 1000, status))
        ends.append(time.monotonic())

    async def ingester() -> None:
        n = 0
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {writer}"}, timeout=600) as http:
            while time.monotonic() < deadline:
                text = "".join(f"bench_s{n}_{j} bench_rel bench_o{n}_{j}.\n" for j in range(50))
                t0 = time.perf_counter()
                try:
                    r = await http.post("/ingest", json={"files": [{"name": f"bench-{n % 4}.tdb", "text": text}]})
                    status = r.status_code
                except httpx.HTTPError:
                    status = 0
                results.setdefault("ingest", []).append(((time.perf_counter() - t0) * 1000, status))
                n += 1

    t0 = time.monotonic()
    await asyncio.gather(*[client(k) for k in range(clients)], *([ingester()] if writer else []))
    # reads are counted over the readers' own window (an ingest still running at the deadline is waited
    # for, but no read is sent after it)
    return {"elapsed": max(ends) - t0, "total": time.monotonic() - t0, "results": results}


def report(title: str, run: dict, baseline: dict[str, list[float]]) -> None:
    res, elapsed = run["results"], run["elapsed"]
    total = sum(len(v) for k, v in res.items() if k != "ingest")
    errors = sum(1 for v in res.values() for _, s in v if s != 200)
    print(f"\n{title}: {total:,} reads in {elapsed:.1f} s = {total / elapsed:,.1f} requests/s; errors {errors}"
          + (f"; the last ingest ended at {run['total']:.1f} s" if "ingest" in res else ""))
    print(f"  {'endpoint':<22} {'n':>6} {'req/s':>7} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6}   "
          f"{'in-process p50':>14} {'p99':>8} {'mean':>8}")
    for label in ENDPOINTS + ["ingest"]:
        rows = res.get(label)
        if not rows:
            continue
        ms = [t for t, _ in rows]
        errs = sum(1 for _, s in rows if s != 200)
        base = baseline.get(label)
        side = (f"{statistics.median(base):14.2f} {pct(base, 99):8.2f} {statistics.fmean(base):8.2f}" if base
                else f"{'-':>14} {'-':>8} {'-':>8}")
        rate = len(rows) / (run["total"] if label == "ingest" else elapsed)
        print(f"  {label:<22} {len(rows):>6} {rate:>7.1f} {statistics.median(ms):>8.2f} "
              f"{pct(ms, 99):>8.2f} {errs:>6}   {side}")


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--units", type=int, default=100_000)
    ap.add_argument("--facts", type=int, default=1_000_000)
    ap.add_argument("--db", help="reuse or create this store (default: a temporary file)")
    ap.add_argument("--cache", help="keep the generated store (and its saved indexes) in this folder and run on a "
                                    "copy of it, so later runs skip the build and phase 2's ingests never reach it")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--requests", type=int, default=200, help="requests per endpoint in the mix (default 200)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--endpoints", help=f"comma-separated subset of the mix (default all: {', '.join(ENDPOINTS)})")
    ap.add_argument("--data", default=str(Path(__file__).resolve().parent.parent.parent / "shared" / "data"))
    args = ap.parse_args(argv)
    print(f"machine: {describe('numpy', 'starlette', 'uvicorn', 'httpx')}")
    db = args.db or os.path.join(tempfile.mkdtemp(prefix="tdb-serve-"), "kb.sqlite")
    if args.cache:
        os.makedirs(args.cache, exist_ok=True)
        db, run_db = os.path.join(args.cache, "kb.sqlite"), db
    cran = Path(args.data) / "cranfield"
    if not os.path.exists(db):
        gen = Path(db).with_suffix(".units.jsonl")
        t0 = time.perf_counter()
        generate(gen, args.units, args.facts, args.seed, cran if (cran / "docs.jsonl").exists() else None)
        with KnowledgeBase(db) as kb:
            rep = kb.ingest([str(gen)], progress=False)
        print(f"generated and ingested {rep.units:,} units, {rep.facts:,} facts in {time.perf_counter() - t0:.1f} s")
        if args.cache:      # the saved indexes go into the cache too (what `thinkingdb index` does)
            from thinkingdb.retrieval.lanes import lanes_for
            from thinkingdb.store.access import Caller, parse_date
            with KnowledgeBase(db, create=False) as kb:
                lanes = lanes_for(kb)
                for c, day in ((Caller(), None), (CALLER, AS_OF)):
                    lanes.prepare(lanes.access.view(c, parse_date(day)), ("bm25", "hdc"))
    if args.cache:
        import shutil
        for suffix in ("", ".graph"):
            if os.path.exists(db + suffix):
                shutil.copy(db + suffix, run_db + suffix)
        print(f"store copied from the cache {args.cache} to {run_db}")
        db = run_db
    with Store(db, create=False) as st:
        _, reader = add_key(st, "bench-reader", tags=CALLER.tags, region=CALLER.region)
        _, writer = add_key(st, "bench-writer", writer=True)
    with KnowledgeBase(db, create=False) as kb:
        requests = workload(kb, random.Random(args.seed + 2), args.requests)
        # what `thinkingdb index` does, for the views served below: the server's snapshot and the
        # in-process baseline then load the saved indexes instead of building them (excluded from timings)
        t0 = time.perf_counter()
        from thinkingdb.retrieval.lanes import lanes_for
        from thinkingdb.store.access import Caller, parse_date
        lanes = lanes_for(kb)
        for c, day in ((Caller(), None), (CALLER, AS_OF)):
            lanes.prepare(lanes.access.view(c, parse_date(day)), ("bm25", "hdc", "closure"))
        print(f"indexes built and saved in {time.perf_counter() - t0:.1f} s")
    if args.endpoints:
        keep = {e.strip() for e in args.endpoints.split(",")}
        unknown = keep - set(ENDPOINTS)
        if unknown:
            raise SystemExit(f"--endpoints: unknown {', '.join(sorted(unknown))}")
        requests = [r for r in requests if r[0] in keep]
    random.Random(args.seed + 3).shuffle(requests)
    who = Principal("bench", "bench-reader", CALLER)

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    t0 = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-c", LAUNCH, "--db", db, "-q", "serve", "--port", str(port),
                               "--threads", str(args.clients), "--warm", "kb-thinkingdb"], stdin=subprocess.DEVNULL,
                              cwd=str(Path(__file__).resolve().parent.parent))  # not benchmarks/: lexical.py there
    try:
        import httpx
        while True:
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.perf_counter() - t0 > 900:
                raise SystemExit("the server did not start")
            time.sleep(0.5)
        print(f"server up (snapshot opened, anonymous kb-thinkingdb view warmed) in {time.perf_counter() - t0:.1f} s")
        t0 = time.perf_counter()
        for label, method, path, body in requests[:7] + [r for r in requests if r[0] == "search kb-thinkingdb"][:1]:
            # warm the caller's view (every lane); not measured
            httpx.request(method, url + path, json=body, headers={"Authorization": f"Bearer {reader}"}, timeout=900,
                          params={"as_of": AS_OF} if method == "GET" else None)
        print(f"caller view warmed in {time.perf_counter() - t0:.1f} s")
        print(f"\nload: {args.clients} clients x {args.seconds:g} s; mix of {len(requests):,} requests "
              f"({args.requests} per endpoint: {args.endpoints or 'all'}), caller {CALLER.to_json()}, as of {AS_OF}")
        baseline = in_process(db, requests, who)
        print(f"load average before phase 1: {_load()}")
        report("phase 1, reads only", asyncio.run(load(url, reader, requests, args.clients, args.seconds, None)), baseline)
        print(f"load average after phase 1: {_load()}")
        report("phase 2, reads with an ingest client", asyncio.run(load(url, reader, requests, args.clients,
                                                                        args.seconds, writer)), baseline)
        print(f"load average after phase 2: {_load()}")
    finally:
        server.terminate()
        server.wait(timeout=60)
    print(f"\nbenchmark process peak RSS {peak_rss_mb():,.0f} MiB (the server is a separate process)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
