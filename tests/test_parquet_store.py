"""Parquet facts into the store: a materialized closure ingested back, and `why` explaining it from
its stored provenance; the in-process `materialize` engine (needs pyarrow only, not Spark)."""

from __future__ import annotations

import json

import pytest

pq = pytest.importorskip("pyarrow.parquet", reason="the spark extra is not installed (pyarrow missing)")

from thinkingdb.cli import main  # noqa: E402


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def closure_dir(tmp_path, capsys):
    src = tmp_path / "kb.tdb"
    src.write_text("a depends_on b @0.9. b depends_on c @0.8. c depends_on d @0.5.\n", encoding="utf-8")
    db = str(tmp_path / "kb.sqlite")
    assert run(capsys, "--db", db, "-q", "ingest", str(src))[0] == 0
    assert run(capsys, "--db", db, "export", "--format", "parquet", "-o", str(tmp_path / "facts"))[0] == 0
    rules = tmp_path / "rules.tdb"
    rules.write_text("relation depends_on transitive.\n", encoding="utf-8")
    code, out, _ = run(capsys, "--json", "materialize", "--engine", "local", "--in", str(tmp_path / "facts"),
                       "--out", str(tmp_path / "closure"), "--rules", str(rules), "--no-default-rules")
    assert code == 0 and json.loads(out)["derived"] == 3      # a-c, b-d, a-d
    return db, tmp_path / "closure"


def test_materialized_closure_ingests_and_why_rebuilds_the_proof(closure_dir, capsys):
    db, closure = closure_dir
    code, out, _ = run(capsys, "--db", db, "--json", "ingest", str(closure))
    assert code == 0 and json.loads(out)["facts"] == 3
    code, out, _ = run(capsys, "--db", db, "why", "a depends_on d", "--format", "json", "--no-default-rules")
    assert code == 0
    proof = json.loads(out)
    proof = proof.get("proof", proof)
    # hand-computed: a-d = 0.9 × 0.8 × 0.5 through two steps, whichever split was best
    assert proof["kind"] == "rule" and proof["depth"] == 2
    assert proof["score"] == pytest.approx(0.36)

    def leaves(p):
        return [p["fact"]] if not p["premises"] else [f for q in p["premises"] for f in leaves(q)]
    got = sorted((f["subject"], f["object"]) for f in leaves(proof))
    assert got == [("a", "b"), ("b", "c"), ("c", "d")]   # down to the facts of kb.tdb


def test_a_file_that_is_not_parquet_is_refused_by_name(tmp_path, capsys):
    bad = tmp_path / "facts.parquet"
    bad.write_bytes(b"not parquet at all")
    code, _, err = run(capsys, "--db", str(tmp_path / "kb.sqlite"), "ingest", str(bad))
    assert code == 2 and "facts.parquet" in err and "Parquet" in err


def test_materialized_row_without_premises_is_rejected(tmp_path, capsys):
    import pyarrow as pa

    d = tmp_path / "closure"
    d.mkdir()
    prem = pa.list_(pa.struct([("s", pa.string()), ("r", pa.string()), ("o", pa.string())]))
    pq.write_table(pa.table({"s": ["a"], "r": ["r"], "o": ["b"], "score": [0.5], "depth": pa.array([1], pa.int32()),
                             "rule": ["k"], "weight": [1.0], "prem": pa.array([[]], prem)}), d / "part-0.parquet")
    code, _, err = run(capsys, "--db", str(tmp_path / "kb.sqlite"), "ingest", str(d))
    assert code == 2 and "row 1" in err and "premises" in err


def test_a_materialized_proof_never_shows_a_hidden_premise(tmp_path, capsys):
    """The closure was computed from facts a restricted unit asserts; the closure folder itself is
    public. An anonymous `why` may see the public fact, never the hidden premises behind it."""
    from thinkingdb import KnowledgeBase

    units = tmp_path / "units.jsonl"
    units.write_text(json.dumps({"id": "secret", "topic": "vault", "claim": "the vault chain", "acl": ["hr:secret"],
                                 "triples": [["a", "depends_on", "b"], ["b", "depends_on", "c"]]}) + "\n",
                     encoding="utf-8")
    db = str(tmp_path / "kb.sqlite")
    assert run(capsys, "--db", db, "-q", "ingest", str(units))[0] == 0
    assert run(capsys, "--db", db, "export", "--format", "parquet", "-o", str(tmp_path / "facts"))[0] == 0
    rules = tmp_path / "rules.tdb"
    rules.write_text("relation depends_on transitive.\n", encoding="utf-8")
    assert run(capsys, "materialize", "--engine", "local", "--in", str(tmp_path / "facts"), "--out",
               str(tmp_path / "closure"), "--rules", str(rules), "--no-default-rules", "-q")[0] == 0
    assert run(capsys, "--db", db, "-q", "ingest", str(tmp_path / "closure"))[0] == 0
    with KnowledgeBase(db) as kb:
        proof = kb.why("a depends_on c")                     # anonymous
        assert proof is not None and proof.kind == "asserted"
        assert {str(t) for t in proof.facts()} == {"a depends_on c"}
