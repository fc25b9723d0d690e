"""Facts in and out of the distributed layout: a folder (or glob) of Parquet or TSV files.

Input facts are ``s, r, o[, c]``: Parquet columns by those names, or TSV lines ``subject<TAB>relation
<TAB>object[<TAB>confidence]`` with ``#`` comments. TSV keys are normalized exactly as ``thinkingdb
ingest`` does (symbol keys, relation aliases and inverse declarations from the rules); Parquet files
written by ``thinkingdb export --format parquet`` hold canonical keys already and are read as they are.
A confidence that is not a number in [0, 1] stops the run with the file and the record named.

The output folder holds the derived facts as Parquet: ``s, r, o, score, depth, rule, prem`` where
``prem`` lists the premise keys of the best derivation (one-step provenance: any proof can be rebuilt
by following the premises).
"""

from __future__ import annotations

import glob
import os
from typing import Iterator

from ..errors import Diagnostic, IngestError, ValidationError
from ..normalize import Vocabulary

__all__ = ["read_facts", "expand_inputs"]



def expand_inputs(spec: str) -> tuple[str, list[str]]:
    """The format (``parquet`` or ``tsv``) and the files of a folder or a glob.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "a.tsv").write_text("x\\tr\\ty\\n")
    >>> fmt, files = expand_inputs(str(d)); fmt, [pathlib.Path(f).name for f in files]
    ('tsv', ['a.tsv'])
    """
    if os.path.isdir(spec):
        files = sorted(p for p in glob.glob(os.path.join(spec, "**", "*"), recursive=True) if os.path.isfile(p)
                       and not os.path.basename(p).startswith(("_", ".")))
    else:
        files = sorted(glob.glob(spec, recursive=True))
    if not files:
        raise IngestError([Diagnostic(spec, 0, 0, "no input files: give a folder or a glob of .parquet or .tsv files")])
    kinds = {os.path.splitext(f)[1].lower() for f in files}
    if kinds <= {".parquet"}:
        return "parquet", files
    if kinds <= {".tsv", ".txt"}:
        return "tsv", files
    raise IngestError([Diagnostic(spec, 0, 0, "mixed or unsupported input files " + ", ".join(sorted(kinds))
                                  + ": one folder holds .parquet files or .tsv files")])


def _orient(vocab: Vocabulary, s: str, r: str, o: str) -> tuple[str, str, str]:
    """Canonical keys; a label with no key (blank) becomes ``""`` and is reported by the caller."""
    try:
        return vocab.orient(s, r, o)
    except ValidationError:
        return "", r or "", ""


def _normalize_batches(batches: Iterator, vocab: Vocabulary) -> Iterator:
    import pyarrow as pa

    for batch in batches:
        s, r, o = (batch.column(i).to_pylist() for i in range(3))
        out = [_orient(vocab, a, b, c) for a, b, c in zip(s, r, o)]
        yield pa.RecordBatch.from_arrays(
            [pa.array([t[0] for t in out], pa.string()), pa.array([t[1] for t in out], pa.string()),
             pa.array([t[2] for t in out], pa.string()), batch.column(3), batch.column(4)],
            names=["s", "r", "o", "c", "file"])


def read_facts(spark, spec: str, vocab: Vocabulary | None = None):
    """The asserted facts of a folder or glob as a DataFrame ``s, r, o, c`` (canonical keys)."""
    from pyspark.sql import functions as F  # noqa: N812

    fmt, files = expand_inputs(spec)
    if fmt == "parquet":
        raw = spark.read.parquet(*files)
        missing = {"s", "r", "o"} - set(raw.columns)
        if missing:
            raise IngestError([Diagnostic(spec, 0, 0, f"Parquet facts need columns s, r, o (and c); missing {sorted(missing)}")])
        conf = F.col("c").cast("double") if "c" in raw.columns else F.lit(1.0)
        df = raw.select("s", "r", "o", conf.alias("c"), F.input_file_name().alias("file"))
    else:
        raw = spark.read.csv(files, sep="\t", comment="#", header=False, quote="", mode="PERMISSIVE",
                             schema="s string, r string, o string, c string, extra string")
        bad_shape = raw.where(F.col("extra").isNotNull() | F.col("o").isNull())
        first = bad_shape.select(F.input_file_name().alias("f"), "s", "r", "o").limit(1).collect()
        if first:
            row = first[0]
            raise IngestError([Diagnostic(row["f"], 0, 0, "expected 3 or 4 tab-separated fields (subject, relation, "
                                          f"object, confidence), got {row['s']!r} {row['r']!r} {row['o']!r}")])
        conf = F.when(F.col("c").isNull() | (F.trim(F.col("c")) == ""), F.lit("1")).otherwise(F.trim(F.col("c")))
        typed = raw.select("s", "r", "o", conf.cast("double").alias("c"), F.input_file_name().alias("file"),
                           conf.alias("c_text"))
        bad_num = typed.where(F.col("c").isNull()).limit(1).collect()
        if bad_num:
            row = bad_num[0]
            raise IngestError([Diagnostic(row["file"], 0, 0, f"confidence must be a number, got {row['c_text']!r} "
                                          f"in fact {row['s']} {row['r']} {row['o']}")])
        vocab = vocab or Vocabulary()
        df = typed.select("s", "r", "o", "c", "file").mapInArrow(
            lambda it: _normalize_batches(it, vocab), "s string, r string, o string, c double, file string")
    bad = df.where(F.col("c").isNull() | F.isnan("c") | (F.col("c") < 0) | (F.col("c") > 1)
                   | (F.col("s") == "") | (F.col("o") == "") | (F.col("r") == "")).limit(1).collect()
    if bad:
        row = bad[0]
        raise IngestError([Diagnostic(row["file"], 0, 0, f"fact {row['s']!r} {row['r']!r} {row['o']!r}: confidence "
                                      f"must be in [0, 1] and keys non-empty, got {row['c']!r}")])
    return df.drop("file")
