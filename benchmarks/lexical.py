"""Lexical lane benchmark: ranking quality on Cranfield and speed on corpus100k, side by side.

    python benchmarks/lexical.py --data ../shared/data [--sizes 10000 100000] [--queries 1000] [--runs 5]

Quality: all 225 Cranfield queries, binary qrels, documents = title + text; MAP
(over the top 1000), nDCG@10, P@10, R@100 for the lexical lane and for bm25s
with the same PyStemmer stemmer and stopword list (the like-for-like pair), plus
the lane as BM25F on the collection's fields (title as ``topic``, text as
``claim``, DS009 default weights), which bm25s cannot do, and the same run end to
end: the documents ingested as knowledge units into a ThinkingDB store and
searched through the pipeline (BM25 lane, 1,000 results, no score or gap cut).
Against bm25s: the MAP difference with a paired randomization test and a 95%
bootstrap interval over queries.

Speed: the first N documents of corpus100k and the first Q queries, top 10,
one thread. Every engine runs in its own child process per run (engines
interleaved, so background load hits them alike); the child reports build time
(tokenization included), queries per second (query tokenization included) and
peak memory = peak RSS of the child (``ru_maxrss``) minus its RSS after loading
the corpus. Medians over ``--runs`` runs. The top 10 of the lexical lane is
compared with a naive pure-Python BM25 on a sample of queries.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from machine import describe, peak_rss_mb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lexical import DEFAULT_STOPWORDS, BM25Index, Tokenizer  # noqa: E402

ENGINES = ["lexical", "bm25s", "tantivy"]


# ----------------------------------------------------------------- data


def load_corpus(data: Path, n: int) -> list[tuple[str, str]]:
    out = []
    with gzip.open(data / "corpus100k" / "corpus_100000.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            if len(out) >= n:
                break
            d = json.loads(line)
            out.append((str(d["id"]), d["text"]))
    return out


def load_queries(data: Path, n: int) -> list[str]:
    return json.loads((data / "corpus100k" / "queries.json").read_text())[:n]


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


# --------------------------------------------------------------- engines


def bm25s_tokenize(texts: list[str]):
    import bm25s
    import Stemmer

    return bm25s.tokenize(texts, stopwords=sorted(DEFAULT_STOPWORDS), stemmer=Stemmer.Stemmer("english"), show_progress=False)


def run_lexical(docs, queries, k):
    idx = BM25Index(field_weights={"text": 1.0})
    t0 = time.perf_counter()
    idx.rebuild(docs)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    results = idx.search_many(queries, k=k)
    qtime = time.perf_counter() - t0
    return build, qtime, [[(h.doc_id, h.score) for h in hits] for hits in results]


def run_bm25s(docs, queries, k):
    import bm25s

    ids = [d for d, _ in docs]
    t0 = time.perf_counter()
    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    retriever.index(bm25s_tokenize([t for _, t in docs]), show_progress=False)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    qtok = bm25s_tokenize(queries)
    res, scores = retriever.retrieve(qtok, k=k, backend_selection="numpy", n_threads=1, show_progress=False)
    qtime = time.perf_counter() - t0
    return build, qtime, [[(ids[i], float(s)) for i, s in zip(r, sc)] for r, sc in zip(res.tolist(), scores.tolist())]


def run_tantivy(docs, queries, k):
    import tantivy

    t0 = time.perf_counter()
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("text", stored=False, tokenizer_name="en_stem")
    sb.add_text_field("id", stored=True, tokenizer_name="raw")
    index = tantivy.Index(sb.build())
    writer = index.writer(heap_size=256_000_000, num_threads=1)
    for doc_id, text in docs:
        writer.add_document(tantivy.Document(text=text, id=doc_id))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    build = time.perf_counter() - t0
    searcher = index.searcher()
    t0 = time.perf_counter()
    out = []
    for q in queries:
        hits = searcher.search(index.parse_query(q, ["text"]), k).hits
        out.append([(searcher.doc(addr)["id"][0], score) for score, addr in hits])
    qtime = time.perf_counter() - t0
    return build, qtime, out


RUNNERS = {"lexical": run_lexical, "bm25s": run_bm25s, "tantivy": run_tantivy}


def worker(engine: str, data: Path, size: int, nq: int, sample: int) -> None:
    if engine == "bm25s":
        import bm25s  # noqa: F401  # pyflakes: ignore (imports are not part of the measured memory)
        import Stemmer  # noqa: F401
    elif engine == "tantivy":
        import tantivy  # noqa: F401
    docs = load_corpus(data, size)
    queries = load_queries(data, nq)
    base = rss_mb()
    build, qtime, results = RUNNERS[engine](docs, queries, 10)
    print(json.dumps({
        "build_s": build,
        "qps": len(queries) / qtime,
        "peak_mb": peak_rss_mb() - base,
        "sample": results[:sample] if engine == "lexical" else [],
    }))


# ------------------------------------------------------------ naive check


def naive_top10(docs, queries, tokenizer: Tokenizer, k1=1.2, b=0.75):
    """Plain-Python BM25 (dicts and Counters), ties by doc id; independent of the index code.

    As ``lexical.scoring`` defines it: a compound word (a group of 2+ terms from
    ``tokenizer.groups``) takes one position in the length, and in a query scores
    the better of its whole form and the sum of its parts.
    """
    tfs = {}
    df: Counter[str] = Counter()
    total = 0
    postings = defaultdict(list)
    for doc_id, text in docs:
        groups = tokenizer.groups(text)
        tf = Counter(t for g in groups for t in g)
        dl = sum(len(g) - 1 if len(g) > 1 else 1 for g in groups)
        tfs[doc_id] = (tf, dl)
        total += dl
        df.update(tf.keys())
        for t in tf:
            postings[t].append(doc_id)
    n = len(docs)
    nonempty = sum(1 for tf, dl in tfs.values() if dl)
    avgdl = total / nonempty

    def term_scores(term: str) -> dict[str, float]:
        if term not in df:
            return {}
        idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
        out = {}
        for doc_id in postings[term]:
            tf, dl = tfs[doc_id]
            f = tf[term]
            out[doc_id] = idf * f * (k1 + 1) / (f + k1 * (1 - b + b * dl / avgdl))
        return out

    out = []
    for q in queries:
        scores: dict[str, float] = defaultdict(float)
        for group, qf in sorted(Counter(tokenizer.groups(q)).items()):
            if len(group) == 1:
                for doc_id, s in term_scores(group[0]).items():
                    scores[doc_id] += qf * s
                continue
            whole = term_scores(group[0])
            parts: dict[str, float] = defaultdict(float)
            for p in group[1:]:
                for doc_id, s in term_scores(p).items():
                    parts[doc_id] += s
            for doc_id in whole.keys() | parts.keys():
                scores[doc_id] += qf * max(whole.get(doc_id, 0.0), parts.get(doc_id, 0.0))
        out.append(sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:10])
    return out


def same_top10(ours, naive) -> bool:
    if [d for d, _ in ours] == [d for d, _ in naive]:
        return all(math.isclose(a, b, rel_tol=1e-9) for (_, a), (_, b) in zip(ours, naive))
    return False


# -------------------------------------------------------------- quality


def cranfield(data: Path) -> list[dict]:
    root = data / "cranfield"
    docs = [json.loads(line) for line in open(root / "docs.jsonl", encoding="utf-8")]
    texts = [(d["doc_id"], f"{d['title']} {d['text']}") for d in docs]
    queries = [line.rstrip("\n").split("\t") for line in open(root / "queries.tsv", encoding="utf-8")]
    qrels: dict[str, set[str]] = defaultdict(set)
    for line in open(root / "qrels_binary.trec"):
        q, _, d, r = line.split()
        if int(r) > 0:
            qrels[q].add(d)
    runs = {}
    idx = BM25Index(field_weights={"text": 1.0})
    idx.rebuild(texts)
    runs["lexical (this lane)"] = [[h.doc_id for h in idx.search(text, k=1000)] for _, _, text in queries]
    # Not like-for-like (bm25s has no fields): the collection's own fields with DS009's default
    # weights, title as `topic` (1.5) and text as `claim` (1.0), unchanged (text repeats the title).
    fielded = BM25Index()
    fielded.rebuild((d["doc_id"], {"topic": d["title"], "claim": d["text"]}) for d in docs)
    runs["lexical, BM25F title→topic 1.5, text→claim 1.0"] = [
        [h.doc_id for h in fielded.search(text, k=1000)] for _, _, text in queries
    ]
    runs["ThinkingDB search, units (topic = title, claim = text), BM25 lane, no cuts"] = thinkingdb_search(docs, queries)
    try:
        import bm25s

        retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
        retriever.index(bm25s_tokenize([t for _, t in texts]), show_progress=False)
        res, _ = retriever.retrieve(bm25s_tokenize([q for _, _, q in queries]), k=1000, show_progress=False, n_threads=1)
        runs["bm25s (same stemmer, stopwords)"] = [[texts[i][0] for i in row] for row in res.tolist()]
    except ImportError:
        print("bm25s not installed: skipped")
    rows = []
    for name, ranked_lists in runs.items():
        aps, nd, p10, r100 = [], [], [], []
        for (qid, _, _), ranked in zip(queries, ranked_lists):
            rel = qrels[qid]
            hits, ap = 0, 0.0
            for i, d in enumerate(ranked, 1):
                if d in rel:
                    hits += 1
                    ap += hits / i
            aps.append(ap / len(rel))
            dcg = sum(1 / math.log2(i + 1) for i, d in enumerate(ranked[:10], 1) if d in rel)
            idcg = sum(1 / math.log2(i + 1) for i in range(1, min(10, len(rel)) + 1))
            nd.append(dcg / idcg)
            p10.append(sum(d in rel for d in ranked[:10]) / 10)
            r100.append(len(rel & set(ranked[:100])) / len(rel))
        mean = statistics.fmean
        rows.append({"engine": name, "MAP": mean(aps), "nDCG@10": mean(nd), "P@10": mean(p10), "R@100": mean(r100),
                     "AP": aps})
    return rows


def thinkingdb_search(docs: list[dict], queries: list[list[str]]) -> list[list[str]]:
    """The lane as a user gets it: the documents ingested as knowledge units into a store, searched
    through the pipeline with a profile that keeps 1,000 results (BM25 only, no score or gap cut)."""
    import tempfile

    import thinkingdb
    from thinkingdb.retrieval.profiles import Profile

    deep = Profile(name="cranfield-depth-1000", hdc="off", max_results=1000, candidates=1000, min_score=0.0, gap=0.0)
    with tempfile.TemporaryDirectory() as tmp:
        units = Path(tmp) / "cranfield.jsonl"
        with open(units, "w", encoding="utf-8") as fh:
            for d in docs:
                fh.write(json.dumps({"id": d["doc_id"], "topic": d["title"], "claim": d["text"]}) + "\n")
        kb = thinkingdb.open(Path(tmp) / "kb.sqlite")
        try:
            kb.ingest([units])
            return [[r.unit_id for r in kb.search(text, profile=deep).results] for _, _, text in queries]
        finally:
            kb.close()


def bootstrap_ci(a: list[float], b: list[float], rounds: int = 10_000, seed: int = 7) -> tuple[float, float]:
    """95% percentile bootstrap interval of mean(a - b), resampling queries."""
    import random

    diff = [x - y for x, y in zip(a, b)]
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(diff, k=len(diff))) for _ in range(rounds))
    return means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1]


def paired_test(a: list[float], b: list[float], rounds: int = 20_000, seed: int = 7) -> tuple[float, float, int, int]:
    """Mean of ``a - b``, its two-sided p-value under a paired randomization (sign-flip) test, wins, losses."""
    import random

    diff = [x - y for x, y in zip(a, b)]
    observed = abs(statistics.fmean(diff))
    rng = random.Random(seed)
    extreme = sum(
        abs(statistics.fmean([d if rng.random() < 0.5 else -d for d in diff])) >= observed - 1e-15 for _ in range(rounds)
    )
    return statistics.fmean(diff), extreme / rounds, sum(d > 1e-12 for d in diff), sum(d < -1e-12 for d in diff)


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--sample", type=int, default=200, help="queries checked against the naive BM25")
    ap.add_argument("--engines", nargs="+", default=ENGINES, choices=ENGINES)
    ap.add_argument("--skip-quality", action="store_true")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--worker", nargs=2, metavar=("ENGINE", "SIZE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker[0], args.data, int(args.worker[1]), args.queries, args.sample)
        return 0

    print(f"machine: {describe('numpy', 'PyStemmer', 'bm25s', 'tantivy')}\n")
    if not args.skip_quality:
        print("## Quality: Cranfield, 225 queries, binary qrels, title + text\n")
        print("| engine | MAP | nDCG@10 | P@10 | R@100 |\n|---|---|---|---|---|")
        rows = cranfield(args.data)
        for row in rows:
            print(f"| {row['engine']} | {row['MAP']:.4f} | {row['nDCG@10']:.4f} | {row['P@10']:.4f} | {row['R@100']:.4f} |")
        print()
        peer = next((r for r in rows if r["engine"].startswith("bm25s")), None)
        if peer is not None:
            print("Average precision against bm25s, per query (paired randomization test, 20,000 sign flips):\n")
            for row in rows:
                if row is not peer:
                    delta, p, wins, losses = paired_test(row["AP"], peer["AP"])
                    low, high = bootstrap_ci(row["AP"], peer["AP"])
                    print(f"- {row['engine']}: MAP {delta:+.4f} (95% bootstrap interval {low:+.4f} to {high:+.4f}), "
                          f"p = {p:.3f}; better on {wins} queries, worse on {losses}, "
                          f"equal on {len(row['AP']) - wins - losses}")
            print()

    if args.skip_speed:
        return 0
    print(f"## Speed: corpus100k, {args.queries} queries, top 10, one thread, median of {args.runs} runs\n")
    print("peak memory = child-process peak RSS minus its RSS after loading the corpus\n")
    tok = Tokenizer()
    for size in args.sizes:
        measured: dict[str, list[dict]] = defaultdict(list)
        for _ in range(args.runs):
            for engine in args.engines:
                out = subprocess.run(
                    [sys.executable, __file__, "--data", str(args.data), "--queries", str(args.queries),
                     "--sample", str(args.sample), "--worker", engine, str(size)],
                    capture_output=True, text=True, check=True,
                )
                measured[engine].append(json.loads(out.stdout.strip().splitlines()[-1]))
        med = {e: {key: statistics.median(r[key] for r in runs) for key in ("build_s", "qps", "peak_mb")}
               for e, runs in measured.items()}
        print(f"### {size:,} documents\n")
        print("| engine | build s | queries/s | peak MB | build vs lexical | q/s vs lexical | memory vs lexical |")
        print("|---|---|---|---|---|---|---|")
        ours = med.get("lexical")
        for engine, m in med.items():
            ratios = ("", "", "")
            if ours and engine != "lexical":
                ratios = (f"{m['build_s'] / ours['build_s']:.2f}×", f"{m['qps'] / ours['qps']:.2f}×",
                          f"{m['peak_mb'] / ours['peak_mb']:.2f}×")
            print(f"| {engine} | {m['build_s']:.2f} | {m['qps']:,.0f} | {m['peak_mb']:.0f} | " + " | ".join(ratios) + " |")
        if "lexical" in measured:
            sample_q = load_queries(args.data, args.queries)[: args.sample]
            naive = naive_top10(load_corpus(args.data, size), sample_q, tok)
            ours_sample = measured["lexical"][0]["sample"]
            same = sum(same_top10(o, n) for o, n in zip(ours_sample, naive))
            print(f"\ntop-10 equal to the naive BM25 (ids in order, scores within 1e-9): {same}/{len(naive)} queries\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
