"""Parquet facts into the store: the input layout of ``thinkingdb materialize`` (``s, r, o[, c]``) and
its output, the materialized closure (``s, r, o, score, depth, rule, weight, prem``).

A materialized fact is stored as a fact with its score as confidence, and its one-step provenance
(rule, weight, depth, premise keys) in the provenance record, so that ``why`` rebuilds its proof from
the provenance (:func:`materialized_proof`) instead of deriving it again. Keys in these files are
canonical already (both layouts are written by ThinkingDB); they are checked, not re-normalized.
Needs pyarrow (the ``spark`` extra).
"""

from __future__ import annotations

import glob
import os
from typing import Callable, Iterator

from ..errors import Diagnostic, IngestError, ValidationError
from ..model import Fact, Triple
from ..normalize import Vocabulary, relation_key
from .records import CHUNK, Batch, _reject

__all__ = ["read_parquet", "materialized_proof"]


def _files(path: str) -> list[str]:
    if os.path.isdir(path):
        return sorted(glob.glob(os.path.join(path, "**", "*.parquet"), recursive=True))
    return [path]


def _check_key(value, what: str, key: Callable[[str], str] | None = None) -> str:
    """A stored key as it is: a non-blank string (symbols may be exact IRIs, so only relations are
    checked against their canonical form)."""
    if not isinstance(value, str) or not value.strip() or (key is not None and key(value) != value):
        raise ValidationError(f"{what} {value!r} is not a canonical key (files for this reader are written by "
                              "`thinkingdb export --format parquet` or `thinkingdb materialize`)")
    return value


def read_parquet(path: str, source: str, vocab: Vocabulary) -> Iterator[Batch]:
    """A ``.parquet`` file, or a folder of them (a materialize output), as batches of facts."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise IngestError([Diagnostic(source, 0, 0, "reading Parquet needs pyarrow: pip install 'thinkingdb[spark]'")]) from None
    files = _files(path)
    if not files:
        raise IngestError([Diagnostic(source, 0, 0, "the folder holds no .parquet files")])
    batch = Batch(source)
    any_row = False
    for f in files:
        try:
            table = pq.read_table(f)
        except Exception as exc:  # noqa: BLE001 - pyarrow's many error types, translated here
            raise IngestError([Diagnostic(f, 0, 0, f"not a readable Parquet file: {exc}")]) from None
        cols = set(table.column_names)
        if not {"s", "r", "o"} <= cols:
            raise IngestError([Diagnostic(f, 0, 0, f"Parquet facts need columns s, r, o; found {sorted(cols)}")])
        derived = "prem" in cols
        score_col = "score" if derived else ("c" if "c" in cols else None)
        batch.size += os.path.getsize(f)
        for i, row in enumerate(table.to_pylist(), start=1):
            any_row = True
            where = f"{f} row {i}"
            try:
                s = _check_key(row["s"], "subject")
                r = _check_key(row["r"], "relation", relation_key)
                o = _check_key(row["o"], "object")
                fact = Fact(s, r, o, 1.0 if score_col is None else row[score_col])
                detail = None
                if derived:
                    prem = [[p["s"], p["r"], p["o"]] for p in row["prem"] or ()]
                    if not prem or not isinstance(row.get("rule"), str) or not isinstance(row.get("depth"), int):
                        raise ValidationError("a materialized fact needs its rule, depth and premises")
                    detail = {"materialized": {"rule": row["rule"], "weight": row.get("weight"),
                                               "depth": row["depth"], "premises": prem}}
            except (ValidationError, KeyError, TypeError) as exc:
                batch.rejects.append(_reject(f, i, 1, f"{where}: {exc}", str(row)[:200]))
                continue
            batch.add_fact(fact, i, None, detail)
            if len(batch.rows) >= CHUNK:
                yield batch
                batch = Batch(source)
    if not any_row and not batch.rejects:
        batch.rejects.append(_reject(source, 1, 1, "the Parquet files hold no facts", ""))
    yield batch


def materialized_proof(triple: Triple, provenance: Callable[[Triple], list[dict]],
                       confidence: Callable[[Triple], float | None]):
    """The proof of a materialized fact rebuilt from its stored provenance, down to facts asserted by
    some other source; None when ``triple`` is not (only) materialized, or when a fact on the way is
    one ``confidence`` does not know (the caller's view: a hidden fact is never shown through a proof)."""
    from ..engine.proofs import Proof

    def build(t: Triple, budget: int):
        c = confidence(t)        # None: a fact the caller may not see, so no proof through it
        if c is None:
            return None
        recs = provenance(t)
        mats = [p["materialized"] for p in recs if "materialized" in p]
        if not recs or len(mats) < len(recs) or budget < 0:
            return Proof.asserted(t, c)
        m = mats[0]
        prem = []
        for s, r, o in m["premises"]:
            p = build(Triple(s, r, o), m["depth"] - 1)
            if p is None:
                return None
            prem.append(p)
        weight = m.get("weight")
        if weight is None:
            return Proof(t, c, m["depth"], "rule", m["rule"], 1.0, tuple(prem))
        return Proof.derived(t, m["rule"], weight, tuple(prem))

    recs = provenance(triple)
    if not recs or not all("materialized" in p for p in recs):
        return None
    return build(triple, recs[0]["materialized"]["depth"])
