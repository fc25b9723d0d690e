"""``thinkingdb materialize``: the closure of a folder of facts, written as Parquet, by Spark or in
process (the reference), and ``export --format parquet`` of a store into the same input layout.

Both engines write the same columns (:mod:`thinkingdb.spark.io`), so their outputs compare row for row.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from ..errors import IngestError, Diagnostic, ValidationError
from ..language import compile_source
from ..model import Declaration, Fact, Rule
from ..normalize import Vocabulary, orient_rules

__all__ = ["MaterializeReport", "load_rules", "materialize", "write_facts_parquet"]

DERIVED_COLUMNS = ("s", "r", "o", "score", "depth", "rule", "weight", "prem")


@dataclass(frozen=True)
class MaterializeReport:
    """What a run did: engine, rounds, derived facts, ``truncated`` (None or ``"depth"``), seconds."""

    engine: str
    rounds: int
    derived: int
    truncated: str | None
    seconds: float
    output: str

    def to_json(self) -> dict:
        return {"engine": self.engine, "rounds": self.rounds, "derived": self.derived,
                "truncated": self.truncated, "seconds": round(self.seconds, 3), "output": self.output}


def load_rules(paths: Iterable[str], default_rules: bool = True) -> tuple[tuple[Rule, ...], Vocabulary]:
    """The rules of ``.tdb`` files (declarations compiled; aliases and inverses in the vocabulary),
    plus the default library unless ``default_rules`` is false."""
    from ..engine.rules import compile_declarations, default_rules_text

    vocab = Vocabulary()
    rules: list[Rule] = []
    decls: list[Declaration] = []
    first: dict[str, tuple[str, int, Rule]] = {}   # rule name -> (file, line, rule)
    texts = [("default_rules.tdb", default_rules_text())] if default_rules else []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            texts.append((path, fh.read()))
    for name, text in texts:
        program = compile_source(text, name, vocab)
        if program.facts:
            raise IngestError([Diagnostic(name, program.facts[0][1], 1, "a rules file for materialize holds rules, "
                                          "declarations and aliases only; put facts in the input folder")])
        for r, line in program.rules:   # a name identifies a rule across the files too, as in a store
            if r.name in first and first[r.name][2] != r:
                src, ln, _ = first[r.name]
                snippet = text.split("\n")[line - 1]
                col = len(snippet) - len(snippet.lstrip()) + 1
                raise IngestError([Diagnostic(name, line, col, f"rule {r.name.split('.not.')[0].split('/')[0]} is "
                                              f"already in the rules from {src}:{ln}; rule names identify rules: "
                                              "rename one", snippet[:200], col)])
            first.setdefault(r.name, (name, line, r))
        rules += [r for r, _ in program.rules]
        decls += [d for d, _ in program.declarations]
    # as a store reads them: over b of `relation c inverse b` (of any file) as c reversed
    return orient_rules(rules, vocab.inverses) + compile_declarations(decls), vocab


def _check_output(out: str, overwrite: bool) -> None:
    if os.path.exists(out) and not overwrite:
        raise ValidationError(f"output {out!r} exists; choose a new folder or pass --overwrite")


def materialize(inputs: str, out: str, rules: tuple[Rule, ...], vocab: Vocabulary, *, engine: str = "spark",
                master: str = "local[2]", max_depth: int | None = None, overwrite: bool = False,
                conf: dict[str, str] | None = None,
                on_round: Callable[[int, int, int, float], None] | None = None) -> MaterializeReport:
    """Derive the closure of the facts in ``inputs`` and write the derived facts to ``out``."""
    _check_output(out, overwrite)
    t0 = time.perf_counter()
    if engine == "local":
        return _materialize_local(inputs, out, rules, vocab, max_depth, on_round, t0)
    if engine != "spark":
        raise ValidationError(f"unknown engine {engine!r}; expected spark or local")
    from .executor import SparkClosure
    from .io import read_facts

    spark = spark_session(master, conf or {})
    facts = read_facts(spark, inputs, vocab)
    run = SparkClosure(spark, facts, rules, max_depth=max_depth,
                       on_round=None if on_round is None else (lambda s: on_round(s.round, s.new, s.improved, s.seconds)))
    run.run()
    derived = run.derived().select(*DERIVED_COLUMNS)
    derived.write.mode("overwrite" if overwrite else "errorifexists").parquet(out)
    n = sum(s.new for s in run.rounds)
    return MaterializeReport("spark", len(run.rounds), n, run.truncated, time.perf_counter() - t0, out)


def spark_session(master: str, conf: dict[str, str]):
    """A Spark session for ``master`` (``""``: the master spark-submit configured) with quiet logs and
    no console progress bar (the rounds are printed instead)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ValidationError("the Spark engine needs the spark extra: pip install 'thinkingdb[spark]'") from exc
    builder = SparkSession.builder if not master else SparkSession.builder.master(master)
    builder = (builder.appName("thinkingdb-materialize")
               .config("spark.ui.showConsoleProgress", "false").config("spark.ui.enabled", "false"))
    if master.startswith("local") and "PYSPARK_PYTHON" not in os.environ:
        # local workers run this interpreter (with thinkingdb importable); on a cluster the
        # executors' Python is the deployment's choice (docs/distributed.md)
        os.environ["PYSPARK_PYTHON"] = sys.executable
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _read_local(inputs: str, vocab: Vocabulary):
    """The same input layout read in process: ``(graph, symbols)`` for Parquet (read in bulk, see
    :func:`_read_parquet_graph`) or a list of facts (TSV, through the ingest reader)."""
    from .io import expand_inputs

    fmt, files = expand_inputs(inputs)
    if fmt == "parquet":
        return _read_parquet_graph(files)
    from ..store.ingest import read_tsv

    facts: list[Fact] = []
    for f in files:
        for batch in read_tsv(f, f, vocab):
            if batch.rejects:
                raise IngestError([r.diagnostic for r in batch.rejects])
            facts.extend(fact for fact, _, _ in batch.facts)
    return facts


def _read_parquet_graph(files: list[str]):
    """Parquet facts ``s, r, o[, c]`` as a read-only graph, without a Python object per fact: the
    columns are encoded to sorted ids, duplicates keep their largest confidence (as
    :meth:`FactGraph.add` does), and the graph reads the graph-file arrays
    (:func:`thinkingdb.store.graphfile.graph_arrays`) from memory. Returns the graph and its symbols
    as an Arrow array in id order. A bad record stops the run with its file and row."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from ..engine.graph import FactGraph
    from ..store.graphfile import graph_arrays

    cols: dict[str, list] = {"s": [], "r": [], "o": [], "c": []}
    for f in files:
        try:
            t = pq.read_table(f)
        except (pa.ArrowException, OSError) as exc:
            raise IngestError([Diagnostic(f, 0, 0, f"not a readable Parquet file: {exc}")]) from None
        missing = {"s", "r", "o"} - set(t.column_names)
        if missing:
            raise IngestError([Diagnostic(f, 0, 0, f"Parquet facts need columns s, r, o (and c); "
                                          f"missing {sorted(missing)}")])
        part = {k: t.column(k).cast(pa.string()) for k in "sro"}
        part["c"] = (t.column("c").cast(pa.float64()) if "c" in t.column_names
                     else pa.chunked_array([pa.array(np.ones(t.num_rows))]))
        bad = pc.or_kleene(pc.or_kleene(pc.is_null(part["c"]), pc.is_nan(part["c"])),
                           pc.or_kleene(pc.less(part["c"], 0.0), pc.greater(part["c"], 1.0)))
        for k in "sro":
            bad = pc.or_kleene(bad, pc.or_kleene(pc.is_null(part[k]), pc.equal(pc.utf8_trim_whitespace(part[k]), "")))
        bad = pc.fill_null(bad, True)
        if pc.any(bad).as_py():
            i = pc.index(bad, True).as_py()
            row = [part[k][i].as_py() for k in "sroc"]
            raise IngestError([Diagnostic(f, i + 1, 0, f"record {i + 1}: fact {row[0]!r} {row[1]!r} {row[2]!r}: "
                                          f"keys must be non-empty and the confidence in [0, 1], got {row[3]!r}")])
        for k in cols:
            cols[k].extend(part[k].chunks)
    if not any(len(c) for c in cols["s"]):
        return FactGraph(), None
    s_col, o_col, r_col = (pa.chunked_array(cols[k], pa.string()) for k in "sor")
    conf = pa.chunked_array(cols["c"], pa.float64()).to_numpy()
    symbols = pc.unique(pa.chunked_array(s_col.chunks + o_col.chunks, pa.string())).sort()
    relations = pc.unique(r_col).sort()
    s = pc.index_in(s_col, symbols).to_numpy().astype(np.int64)
    o = pc.index_in(o_col, symbols).to_numpy().astype(np.int64)
    r = pc.index_in(r_col, relations).to_numpy().astype(np.int64)
    n = len(symbols)
    if len(relations) * n * n >= 2 ** 62:   # pragma: no cover - more than 2**31 symbols
        raise ValidationError("too many distinct symbols for the in-process engine; use --engine spark")
    key = (r * n + s) * n + o
    order = np.lexsort((-conf, key))                     # per triple, the largest confidence first
    key, conf = key[order], conf[order]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    key, conf = key[first], conf[first]
    r, s, o = key // n // n, key // n % n, key % n
    big = symbols.cast(pa.large_string())      # int64 offsets: any total length
    _, off_buf, blob_buf = big.buffers()
    off = np.frombuffer(off_buf, dtype=np.int64)[big.offset:big.offset + n + 1]
    blob = np.frombuffer(blob_buf, dtype=np.uint8)[off[0]:off[-1]] if blob_buf is not None else np.zeros(0, np.uint8)
    arrays = graph_arrays(off - off[0], blob, len(relations), s, r, o, conf)
    g = FactGraph.mapped(arrays, relations.to_pylist(), n, len(s), "<parquet input>")
    return g, big


def _materialize_local(inputs, out, rules, vocab, max_depth, on_round, t0) -> MaterializeReport:
    from ..engine.closure import closure
    from ..engine.graph import FactGraph
    from ..model import Limits

    read = _read_local(inputs, vocab)
    g, symbols = read if isinstance(read, tuple) else (FactGraph(read), None)
    res = closure(g, rules, limits=Limits(max_depth=max_depth, max_nodes=None, max_derived=None, timeout_ms=None))
    path = os.path.join(out, "part-00000.parquet")
    if hasattr(res, "derived_arrays"):
        n = write_arrays_parquet(res, path, symbols)
    else:
        n = write_rows_parquet(_step_rows(res), path)
    if on_round is not None:
        on_round(res.stats.rounds, n, 0, time.perf_counter() - t0)
    return MaterializeReport("local", res.stats.rounds, n, res.truncated, time.perf_counter() - t0, out)


def _step_rows(res) -> list[tuple]:
    """One output row per derived fact, read one fact at a time (engines without bulk arrays)."""
    rows = []
    ids = res.ids
    step = getattr(res, "step", None)  # one step per fact where the engine keeps it; else the proof's top
    for key in res.derived_keys():
        t = ids.triple(key)
        if step is not None:
            rule, prems = step(key)
            name, weight = rule.name, rule.weight
            prem = [dict(zip("sro", (ids.sym_key(p[0]), ids.rel_key(p[1]), ids.sym_key(p[2])))) for p in prems]
            score, depth = res.fact_score(key), res.depth(t)
        else:
            proof = res.fact_proof(key)
            name, weight, score, depth = proof.rule, proof.weight, proof.score, proof.depth
            prem = [{"s": p.conclusion.subject, "r": p.conclusion.relation, "o": p.conclusion.object}
                    for p in proof.premises]
        rows.append((t.subject, t.relation, t.object, score, depth, name, weight, prem))
    return rows


def write_arrays_parquet(res, path: str, symbols=None) -> int:
    """The derived facts of a result with ``derived_arrays`` (the columnar engine) as one Parquet
    file in the output schema, built column by column; returns the number of rows. ``symbols``: the
    graph's symbol keys as an Arrow array in id order, when the caller has them (no Python string
    per symbol is made then)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = res.ids
    if symbols is None:
        keys = pa.array(ids.sym_keys(), pa.string())
    else:
        local = ids.local_keys()   # rule constants the data lacks
        keys = pa.concat_arrays([symbols, pa.array(local, pa.large_string())]) if local else symbols
    rels = np.array([ids.rel_key(i) for i in range(len(res.g._rels) + len(ids.local_rels))], dtype=object)
    prem_struct = pa.struct([("s", keys.type), ("r", pa.string()), ("o", keys.type)])
    tables = []
    for s, r, o, score, depth, ri, prems in res.derived_arrays():
        m, k = len(s), prems.shape[1]
        rule = res.rules[ri]
        flat = prems.reshape(-1, 3)
        prem = pa.ListArray.from_arrays(
            pa.array(np.arange(0, m * k + 1, k, dtype=np.int32)),
            pa.StructArray.from_arrays([keys.take(flat[:, 0]), pa.array(rels[flat[:, 1]], pa.string()),
                                        keys.take(flat[:, 2])], fields=list(prem_struct)))
        tables.append(pa.table({"s": keys.take(s), "r": pa.array(np.full(m, rels[r], dtype=object), pa.string()),
                                "o": keys.take(o), "score": pa.array(score, pa.float64()),
                                "depth": pa.array(depth, pa.int32()),
                                "rule": pa.array(np.full(m, rule.name, dtype=object), pa.string()),
                                "weight": pa.array(np.full(m, rule.weight), pa.float64()), "prem": prem}))
    table = _as_output_schema(pa.concat_tables(tables)) if tables else _empty_table()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(table, path)
    return table.num_rows


def _empty_table():
    return _rows_table([])


def _as_output_schema(table):
    """Large strings (from a big symbol table) cast to the output schema's strings."""
    schema = _empty_table().schema
    return table.cast(schema) if table.schema != schema else table


def write_rows_parquet(rows: list[tuple], path: str) -> int:
    """Derived-fact rows in the output schema, as one Parquet file; returns the number of rows."""
    import pyarrow.parquet as pq

    table = _rows_table(rows)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(table, path)
    return table.num_rows


def _rows_table(rows: list[tuple]):
    import pyarrow as pa

    prem_type = pa.list_(pa.struct([("s", pa.string()), ("r", pa.string()), ("o", pa.string())]))
    cols = list(zip(*rows)) if rows else [[] for _ in DERIVED_COLUMNS]
    return pa.table({"s": pa.array(cols[0], pa.string()), "r": pa.array(cols[1], pa.string()),
                     "o": pa.array(cols[2], pa.string()), "score": pa.array(cols[3], pa.float64()),
                     "depth": pa.array(cols[4], pa.int32()), "rule": pa.array(cols[5], pa.string()),
                     "weight": pa.array(cols[6], pa.float64()), "prem": pa.array(cols[7], prem_type)})


def write_facts_parquet(rows: Iterable[tuple[str, str, str, float]], out: str, overwrite: bool = False) -> int:
    """Asserted facts ``(s, r, o, c)`` as the input layout of ``materialize`` (a folder with one file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    _check_output(out, overwrite)
    rows = list(rows)
    cols = list(zip(*rows)) if rows else [[], [], [], []]
    table = pa.table({"s": pa.array(cols[0], pa.string()), "r": pa.array(cols[1], pa.string()),
                      "o": pa.array(cols[2], pa.string()), "c": pa.array(cols[3], pa.float64())})
    os.makedirs(out, exist_ok=True)
    pq.write_table(table, os.path.join(out, "part-00000.parquet"))
    return len(rows)


def print_round(rnd: int, new: int, improved: int, seconds: float) -> None:
    """The per-round progress line on standard error."""
    sys.stderr.write(f"round {rnd}: {new:,} new, {improved:,} improved, {seconds:.2f} s\n")
