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
from ..model import Fact, Rule
from ..normalize import Vocabulary

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
    texts = [("default_rules.tdb", default_rules_text())] if default_rules else []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            texts.append((path, fh.read()))
    for name, text in texts:
        program = compile_source(text, name, vocab)
        if program.facts:
            raise IngestError([Diagnostic(name, program.facts[0][1], 1, "a rules file for materialize holds rules, "
                                          "declarations and aliases only; put facts in the input folder")])
        rules += [r for r, _ in program.rules]
        rules += compile_declarations(d for d, _ in program.declarations)
    return tuple(rules), vocab


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


def _read_local(inputs: str, vocab: Vocabulary) -> list[Fact]:
    """The same input layout read in process (Parquet through pyarrow, TSV through the ingest reader)."""
    from .io import expand_inputs

    fmt, files = expand_inputs(inputs)
    facts: list[Fact] = []
    if fmt == "parquet":
        import pyarrow.parquet as pq

        for f in files:
            t = pq.read_table(f)
            cols = t.column_names
            conf = t.column("c").to_pylist() if "c" in cols else [1.0] * t.num_rows
            for s, r, o, c in zip(t.column("s").to_pylist(), t.column("r").to_pylist(), t.column("o").to_pylist(), conf):
                try:
                    facts.append(Fact(s, r, o, c))
                except ValidationError as exc:
                    raise IngestError([Diagnostic(f, 0, 0, str(exc))]) from None
        return facts
    from ..store.ingest import read_tsv

    for f in files:
        for batch in read_tsv(f, f, vocab):
            if batch.rejects:
                raise IngestError([r.diagnostic for r in batch.rejects])
            facts.extend(fact for fact, _, _ in batch.facts)
    return facts


def _materialize_local(inputs, out, rules, vocab, max_depth, on_round, t0) -> MaterializeReport:
    from ..engine.closure import closure
    from ..engine.graph import FactGraph
    from ..model import Limits

    facts = _read_local(inputs, vocab)
    res = closure(FactGraph(facts), rules, limits=Limits(max_depth=max_depth, max_nodes=None, max_derived=None,
                                                         timeout_ms=None))
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
    write_rows_parquet(rows, os.path.join(out, "part-00000.parquet"))
    if on_round is not None:
        on_round(res.stats.rounds, len(rows), 0, time.perf_counter() - t0)
    return MaterializeReport("local", res.stats.rounds, len(rows), res.truncated, time.perf_counter() - t0, out)


def write_rows_parquet(rows: list[tuple], path: str) -> None:
    """Derived-fact rows in the output schema, as one Parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    prem_type = pa.list_(pa.struct([("s", pa.string()), ("r", pa.string()), ("o", pa.string())]))
    cols = list(zip(*rows)) if rows else [[] for _ in DERIVED_COLUMNS]
    table = pa.table({"s": pa.array(cols[0], pa.string()), "r": pa.array(cols[1], pa.string()),
                      "o": pa.array(cols[2], pa.string()), "score": pa.array(cols[3], pa.float64()),
                      "depth": pa.array(cols[4], pa.int32()), "rule": pa.array(cols[5], pa.string()),
                      "weight": pa.array(cols[6], pa.float64()), "prem": pa.array(cols[7], prem_type)})
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(table, path)


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
