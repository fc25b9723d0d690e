"""HDC lane benchmark: encoding throughput and top-10 Hamming search, side by side in one run.

    python benchmarks/hdc.py [--sizes 100000 1000000] [--runs 5] [--units 20000] [--no-torchhd]
                             [--corpus ../shared/data/corpus100k/corpus_100000.jsonl.gz [--corpus-units N]]

For every size N it stores N random 4096-bit vectors (N x 64 uint64 words, fixed seed) and times one
top-10 search with:

- ours:      ``hdc.top_k`` (blocked XOR + np.bitwise_count scan, threads over row blocks)
- numpy:     a plain ``np.bitwise_count(matrix ^ query).sum(axis=1)`` + argpartition, written here
- memcpy:    ``np.copyto`` of the same bytes once (the memory-bandwidth floor of any full scan)
- torchhd:   ``torchhd.hamming_similarity`` + ``torch.topk`` over a BSC (bool) tensor, if importable

It prints medians over ``--runs``, ratios, the extra peak memory of each method and the machine.
All methods must return the same ten rows (checked). Exit status 0 unless a check fails.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import hdc  # noqa: E402

from machine import describe

WORDS = 64  # 4096 bits


# -- measuring -------------------------------------------------------------------------------------


def _rss_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak_rss() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # Linux: reset VmHWM to the current RSS
        return True
    except OSError:
        return False


def measure(fn: Callable[[], Any], runs: int, warmup: bool = True) -> tuple[float, float | None, Any]:
    """Median seconds over ``runs`` calls, extra peak memory (MiB) of the timed calls, last result."""
    result = fn() if warmup else None  # warm-up: thread pool, page faults of buffers
    gc.collect()
    times, peaks = [], []
    for _ in range(runs):
        can_reset = _reset_peak_rss()
        before = _rss_kib("VmRSS") or 0
        if not can_reset:
            tracemalloc.start()
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
        if can_reset:
            peaks.append(((_rss_kib("VmHWM") or before) - before) / 1024)
        else:
            peaks.append(tracemalloc.get_traced_memory()[1] / 2**20)
            tracemalloc.stop()
    return statistics.median(times), max(peaks) if peaks else None, result


# -- encoding --------------------------------------------------------------------------------------


def bench_encoding(n_units: int, runs: int) -> list[tuple[str, str]]:
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(20_000)]
    rows = []
    # symbols: fresh (hashing) and cached
    fresh = [f"sym-{i}" for i in range(50_000)]
    t0 = time.perf_counter()
    for s in fresh:
        hdc.random_vector(s, namespace="bench")
    fresh_rate = len(fresh) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for s in fresh[-20_000:]:
        hdc.random_vector(s, namespace="bench")
    cached_rate = 20_000 / (time.perf_counter() - t0)
    rows.append(("random_vector, new symbols (8 BLAKE2b blocks each)", f"{fresh_rate:,.0f} symbols/s"))
    rows.append(("random_vector, cached symbols", f"{cached_rate:,.0f} symbols/s"))
    zipf = [1.0 / (rank + 1) for rank in range(len(vocab))]  # word frequencies of real text
    units = [
        {
            "role": rng.choice(["fact", "policy", "procedure", "definition"]),
            "topic": " ".join(rng.choices(vocab, zipf, k=4)),
            "claim": " ".join(rng.choices(vocab, zipf, k=14)),
            "acts": rng.choices(vocab[:50], k=2),
        }
        for _ in range(n_units)
    ]
    one, idx = hdc.HDCIndex(), hdc.HDCIndex()
    clear_caches()
    t0 = time.perf_counter()
    for i, u in enumerate(units):
        one.add(f"u{i}", u)
    add_rate = n_units / (time.perf_counter() - t0)
    rows.append((f"HDCIndex.add, {n_units:,} units (4 + 14 words, Zipf over 20k words)", f"{add_rate:,.0f} units/s"))
    clear_caches()
    t0 = time.perf_counter()
    idx.add_many((f"u{i}", u) for i, u in enumerate(units))
    many_rate = n_units / (time.perf_counter() - t0)
    rows.append(("HDCIndex.add_many, the same units", f"{many_rate:,.0f} units/s ({many_rate / add_rate:.1f}x)"))
    same_vectors(one, idx)
    t_search, _, _ = measure(lambda: idx.search(" ".join(rng.choices(vocab, zipf, k=6)), k=10), runs)
    rows.append((f"HDCIndex.search over {n_units:,} units (3 field scans + scoring)", f"{t_search * 1000:.2f} ms"))
    return rows


def clear_caches() -> None:
    """Empty the symbol and n-gram caches, so that each build starts cold."""
    hdc.vectors._random_words.cache_clear()
    hdc.encoders._gram_votes.cache_clear()
    hdc.encoders._rotated_token.cache_clear()


def same_vectors(a: hdc.HDCIndex, b: hdc.HDCIndex) -> None:
    if sorted(a.ids()) != sorted(b.ids()):
        raise SystemExit("add and add_many stored different ids")
    for uid in a.ids():
        va, vb = a.vectors(uid), b.vectors(uid)
        for f in ("topic", "claim", "acts"):
            x, y = getattr(va, f), getattr(vb, f)
            if (x is None) != (y is None) or (x is not None and not (x == y).all()):
                raise SystemExit(f"add and add_many differ on {uid} {f}")


def bench_corpus(path: str, n_units: int) -> list[tuple[str, str]]:
    """Build an index of ``n_units`` real documents one by one and with add_many (same vectors checked)."""
    import gzip
    import json

    try:
        from lexical import Tokenizer

        tokenizer, tok_name = Tokenizer(), "lexical.Tokenizer"
    except ImportError:
        tokenizer, tok_name = None, "default tokenizer"
    opener = gzip.open if path.endswith(".gz") else open
    units = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if len(units) == n_units:
                break
            doc = json.loads(line)
            units.append((str(doc["id"]), {"topic": " ".join(doc["text"].split()[:8]), "claim": doc["text"]}))
    rows = []
    built = []
    for name in ("add", "add_many"):
        idx = hdc.HDCIndex(tokenizer=tokenizer)
        clear_caches()
        t0 = time.perf_counter()
        if name == "add":
            for uid, fields in units:
                idx.add(uid, fields)
        else:
            idx.add_many(units)
        dt = time.perf_counter() - t0
        built.append(idx)
        label = f"HDCIndex.{name}, {len(units):,} documents of {Path(path).name} ({tok_name})"
        rows.append((label, f"{dt:.1f} s, {len(units) / dt:,.0f} units/s"))
    same_vectors(*built)
    return rows


# -- search ------------------------------------------------------------------------------------------


def plain_numpy_top10(query: np.ndarray, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    dist = np.bitwise_count(matrix ^ query).sum(axis=1)
    part = np.argpartition(dist, 10)[:10]
    part = part[np.lexsort((part, dist[part]))]
    return part, dist[part]


def make_torchhd(matrix: np.ndarray) -> tuple[Callable[[np.ndarray], np.ndarray], str] | None:
    try:
        import torch
        import torchhd
    except Exception as exc:  # any import failure means: not available here
        print(f"torchhd: not available ({type(exc).__name__}: {exc})")
        return None
    bits = np.unpackbits(matrix.view(np.uint8), axis=1, bitorder="little").view(np.bool_)
    memory = torchhd.ensure_vsa_tensor(torch.from_numpy(bits), "BSC")
    # hamming_similarity makes an int64 per compared bit: 8 bytes x 4096 per stored vector, so
    # it is called on chunks of rows (one call on 1M rows would need 32 GiB).
    chunk = 32_768

    def run(query: np.ndarray) -> np.ndarray:
        q = torchhd.ensure_vsa_tensor(torch.from_numpy(hdc.unpack_bits(query).view(np.bool_)), "BSC")
        sim = torch.cat([torchhd.hamming_similarity(q, memory[s : s + chunk]) for s in range(0, memory.shape[0], chunk)])
        top = torch.topk(sim, 10, sorted=True)  # number of equal bits: larger is nearer
        return top.indices.numpy(), 4096 - top.values.numpy()

    version = f"torchhd {torchhd.__version__}, torch {torch.__version__}, {torch.get_num_threads()} threads"
    return run, version


def bench_search(n: int, runs: int, use_torchhd: bool) -> tuple[list[tuple[str, float, float | None, float]], str | None]:
    rng = np.random.default_rng(n)
    matrix = rng.integers(0, np.iinfo(np.uint64).max, size=(n, WORDS), dtype=np.uint64, endpoint=True)
    target = n // 3
    query = matrix[target].copy()
    query[:8] ^= np.uint64(0xFF)  # 64 bits away from the target row: it must come first
    nbytes = matrix.nbytes
    dst = np.empty_like(matrix)
    np.copyto(dst, matrix)  # fault the destination pages in before timing

    results: list[tuple[str, float, float | None, float]] = []
    t_copy, m_copy, _ = measure(lambda: np.copyto(dst, matrix), runs)
    del dst
    gc.collect()
    t_ours, m_ours, (ours, ours_d) = measure(lambda: hdc.top_k(query, matrix, 10), runs)
    t_np, m_np, (plain, plain_d) = measure(lambda: plain_numpy_top10(query, matrix), runs)
    # rows tied at the 10th distance may differ between methods; the distances may not
    if ours[0] != target or plain[0] != target or ours_d.tolist() != plain_d.tolist():
        raise SystemExit(f"top-10 differ: ours {ours_d.tolist()} numpy {plain_d.tolist()}")
    results.append(("ours (hdc.top_k)", t_ours, m_ours, t_ours))
    results.append(("plain numpy XOR + bitwise_count", t_np, m_np, t_ours))
    results.append((f"memcpy of the {nbytes / 2**20:.0f} MiB (np.copyto)", t_copy, m_copy, t_ours))
    version = None
    if use_torchhd:
        made = make_torchhd(matrix)
        if made is not None:
            run, version = made
            slow = n > 200_000  # torchhd takes tens of seconds per call there: one timed call
            t_th, m_th, (got, got_d) = measure(lambda: run(query), 1 if slow else min(runs, 3), warmup=not slow)
            if int(got[0]) != target or got_d.tolist() != ours_d.tolist():
                raise SystemExit(f"torchhd top-10 differ: {got_d.tolist()} vs ours {ours_d.tolist()}")
            results.append(("torchhd BSC hamming_similarity + topk", t_th, m_th, t_ours))
            del made, run
            gc.collect()
    return results, version


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--units", type=int, default=20_000, help="units encoded for the throughput figures")
    ap.add_argument("--no-torchhd", action="store_true")
    ap.add_argument("--corpus", help="JSON lines of {id, text} (.gz read as gzip): also time building an index of "
                    "real documents (topic = first 8 words, claim = text) with add and with add_many")
    ap.add_argument("--corpus-units", type=int, default=100_000)
    args = ap.parse_args(argv)

    print(f"machine: {describe('numpy')}")
    print(f"median of {args.runs} runs after one warm-up; memory = extra peak RSS of one call\n")
    print("## encoding (dim 4096)")
    for name, value in bench_encoding(args.units, args.runs):
        print(f"  {name:<72} {value}")
    if args.corpus:
        for name, value in bench_corpus(args.corpus, args.corpus_units):
            print(f"  {name:<72} {value}")
    for n in args.sizes:
        rows, version = bench_search(n, args.runs, not args.no_torchhd)
        copy_t = next(t for name, t, _, _ in rows if name.startswith("memcpy"))
        print(f"\n## top-10 search over {n:,} vectors of 4096 bits ({n * WORDS * 8 / 2**20:.0f} MiB)")
        if version:
            print(f"  ({version})")
        print(f"  {'method':<42} {'median':>10} {'/ memcpy':>9} {'/ ours':>8} {'peak MiB':>9}")
        for name, t, mem, t_ours in rows:
            mem_s = f"{mem:9.1f}" if mem is not None else f"{'?':>9}"
            print(f"  {name:<42} {t * 1000:8.1f}ms {t / copy_t:8.2f}x {t / t_ours:7.2f}x {mem_s}")
        gc.collect()
    return 0


if __name__ == "__main__":
    sys.exit(main())
