"""The command line, called in-process: outputs, JSON shapes and exit codes (SPEC §8)."""

import json
import sqlite3

import pytest

from thinkingdb.cli.main import main

EXAMPLE = """
relation depends_on transitive.
alias requires => depends_on.
AchillesIDE uses Ploinky @1.0.
Ploinky provides sandboxing @0.95.
sandboxing relevant_for "secure execution" @0.9.
nginx depends_on openssl.
openssl requires libc @0.5.
rule capability @0.95: ?x uses ?y, ?y provides ?z => ?x has_capability ?z.
rule relevance @0.90: ?x has_capability ?c, ?c relevant_for ?g => ?x relevant_for ?g.
"""


@pytest.fixture
def kb(tmp_path):
    src = tmp_path / "kb.tdb"
    src.write_text(EXAMPLE)
    db = str(tmp_path / "kb.sqlite")
    assert main(["--db", db, "--quiet", "ingest", str(src)]) == 0
    return db


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ingest_json_shape(tmp_path, capsys):
    src = tmp_path / "a.tdb"
    src.write_text("a r b.\nb r c @0.5.\nrule x: ?p r ?q => ?q s ?p.\n")
    code, out, err = run(capsys, "--db", str(tmp_path / "s.sqlite"), "--json", "ingest", str(src))
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert (doc["units"], doc["facts"], doc["rejected"], doc["rules"]) == (0, 2, 0, 1)


def test_bad_input_changes_nothing_byte_for_byte(kb, tmp_path, capsys):
    before = open(kb, "rb").read()
    bad = tmp_path / "bad.tdb"
    bad.write_text("good fact here.\nc d e @7.\nf g.\n")
    code, out, err = run(capsys, "--db", kb, "ingest", str(bad))
    assert code == 2
    assert f"{bad}:2:8: confidence must be in [0, 1], got 7" in err
    assert f"{bad}:3:4:" in err
    assert "Traceback" not in err
    assert open(kb, "rb").read() == before


def test_failed_ingest_into_new_store_is_refused_cleanly(tmp_path, capsys):
    bad = tmp_path / "bad.tsv"
    bad.write_text("a\tb\n")
    code, _, err = run(capsys, "--db", str(tmp_path / "new.sqlite"), "ingest", str(bad))
    assert code == 2
    assert "bad.tsv:1:1: expected 3 or 4 tab-separated fields" in err


@pytest.mark.parametrize("name,content,message", [
    ("x.xlsx", "a,b,c\n", "unsupported file type '.xlsx'"),
    ("empty.tdb", "", "the file holds no facts, rules, declarations or aliases"),
    ("comments.tdb", "# nothing here\n", "the file holds no facts, rules, declarations or aliases"),
    ("bin.tdb", b"\x00\x01\xff", "binary data (a NUL byte): not a text file"),
    ("latin1.tsv", b"caf\xe9\tr\tb\n", "not UTF-8 text (byte 0xe9)"),
    ("conf.tsv", "a\tr\tb\t1.5\n", "confidence must be in [0, 1], got 1.5"),
    ("nan.tsv", "a\tr\tb\tnan\n", "confidence must be a finite number, got nan"),
    ("units.jsonl", '{"id": "u1", "effective_from": "2026-13-01"}\n', "field 'effective_from' must be a date"),
    ("units2.jsonl", '{"topic": "no id"}\n', "needs a non-empty string field 'id'"),
    ("units3.jsonl", '{"id": "u1", "triples": [["a", "r", "b", NaN]]}\n', "NaN is not a finite number"),
    ("units4.jsonl", '{"id": "u1", "topic": "bad \\ud800 text"}\n',
     "units4.jsonl:1:1: field 'topic' is not valid Unicode: a lone surrogate"),
])
def test_bad_files_table(kb, tmp_path, capsys, name, content, message):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    before = open(kb, "rb").read()
    code, _, err = run(capsys, "--db", kb, "ingest", str(path))
    assert code == 2
    assert message in err
    assert err.startswith("thinkingdb: error: ")
    assert open(kb, "rb").read() == before


def test_duplicates_merge_max_confidence_and_keep_all_provenance(tmp_path, capsys):
    tdb = tmp_path / "a.tdb"
    tdb.write_text("Alpha r Beta @0.3.\nalpha R beta @0.7.\n")
    tsv = tmp_path / "b.tsv"
    tsv.write_text("ALPHA\tr\tbeta\t0.5\n")
    db = str(tmp_path / "d.sqlite")
    assert main(["--db", db, "-q", "ingest", str(tdb), str(tsv)]) == 0
    capsys.readouterr()
    code, out, _ = run(capsys, "--db", db, "export", "--format", "tsv")
    assert out == "subject\trelation\tobject\tconfidence\nAlpha\tr\tBeta\t0.7\n"  # labels as first written
    code, out, _ = run(capsys, "--db", db, "--json", "why", "alpha r beta", "--sources")
    prov = json.loads(out)["provenance"]["alpha r beta"]
    assert sorted((p["source"].split("/")[-1], p["line"], p["confidence"]) for p in prov) == [
        ("a.tdb", 1, 0.3), ("a.tdb", 2, 0.7), ("b.tsv", 1, 0.5)]


def test_skip_invalid_writes_rejects(tmp_path, capsys):
    tsv = tmp_path / "m.tsv"
    tsv.write_text("a\tr\tb\nbroken line\nc\tr\td\t2\ne\tr\tf\n")
    db = str(tmp_path / "m.sqlite")
    rejects = tmp_path / "rej.jsonl"
    code, out, _ = run(capsys, "--db", db, "--json", "ingest", str(tsv), "--skip-invalid", "--rejects", str(rejects))
    assert code == 0
    assert json.loads(out)["facts"] == 2 and json.loads(out)["rejected"] == 2
    rows = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert [(r["line"], r["record"]) for r in rows] == [(2, "broken line"), (3, "c\tr\td\t2")]


def test_reingest_replaces_a_source(tmp_path, capsys):
    src = tmp_path / "s.tdb"
    db = str(tmp_path / "r.sqlite")
    src.write_text("a r b.\nc r d.\n")
    main(["--db", db, "-q", "ingest", str(src)])
    src.write_text("a r b.\n")
    main(["--db", db, "-q", "ingest", str(src)])
    capsys.readouterr()
    _, out, _ = run(capsys, "--db", db, "export", "--format", "tsv", "--no-header")
    assert out == "a\tr\tb\t1.0\n"


def test_foreign_sqlite_file_is_refused_and_untouched(tmp_path, capsys):
    db = tmp_path / "other.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    before = db.read_bytes()
    src = tmp_path / "a.tdb"
    src.write_text("a r b.\n")
    code, _, err = run(capsys, "--db", str(db), "ingest", str(src))
    assert code == 2 and "foreign SQLite database" in err
    assert db.read_bytes() == before


def test_newer_schema_is_refused(kb, capsys):
    con = sqlite3.connect(kb)
    con.execute("PRAGMA user_version = 99")
    con.commit()
    con.close()
    code, _, err = run(capsys, "--db", kb, "stats")
    assert code == 2 and "newer ThinkingDB (schema 99" in err


def test_not_sqlite_is_refused(tmp_path, capsys):
    db = tmp_path / "notes.txt"
    db.write_text("my precious notes\n")
    code, _, err = run(capsys, "--db", str(db), "stats")
    assert code == 2 and "not an SQLite file" in err
    assert db.read_text() == "my precious notes\n"


def test_usage_errors_exit_2_without_traceback(capsys):
    code, _, err = run(capsys, "query")
    assert code == 2 and "Traceback" not in err and "required" in err
    code, _, err = run(capsys, "frobnicate")
    assert code == 2 and "invalid choice" in err


@pytest.mark.parametrize("command", ["ingest", "query", "why", "stats", "export"])
def test_every_command_help_has_an_example(command, capsys):
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    assert "example:\n  thinkingdb" in capsys.readouterr().out


def test_query_plain_pattern_and_exit_codes(kb, capsys):
    code, out, _ = run(capsys, "--db", kb, "--json", "query", "? nginx depends_on ?x.")
    doc = json.loads(out)
    assert code == 0 and doc["truncated"] is None
    # depends_on is declared transitive: openssl is asserted (1.0), libc follows through openssl (1.0 × 0.5)
    assert [(a["bindings"], a["score"]) for a in doc["answers"]] == [({"x": "openssl"}, 1.0), ({"x": "libc"}, 0.5)]
    code, out, _ = run(capsys, "--db", kb, "query", "? nginx uses ?x.")
    assert code == 1 and "no answers" in out


def test_query_conjunction_over_asserted_facts(kb, capsys):
    code, out, _ = run(capsys, "--db", kb, "query", "? ?a uses ?b, ?b provides ?c.", "--format", "tsv")
    assert code == 0
    assert out == "a\tb\tc\tscore\nachilleside\tploinky\tsandboxing\t0.95\n"


def test_worked_example_scores(kb, capsys):
    code, out, _ = run(capsys, "--db", kb, "--json", "query", "? AchillesIDE relevant_for ?g.")
    answers = json.loads(out)["answers"]
    assert [a["bindings"]["g"] for a in answers] == ["secure_execution"]
    assert answers[0]["score"] == pytest.approx(0.95 * 1.0 * 0.95 * 0.9 * 0.90)  # 0.731025
    code, out, _ = run(capsys, "--db", kb, "why", "AchillesIDE relevant_for secure_execution")
    assert code == 0 and "relevance" in out and "capability" in out


def test_export_graphml_round_trips_through_networkx(kb, tmp_path, capsys):
    import networkx as nx
    out_path = tmp_path / "kb.graphml"
    assert main(["--db", kb, "export", "--format", "graphml", "-o", str(out_path)]) == 0
    g = nx.read_graphml(out_path, force_multigraph=True)
    assert g.number_of_edges() == 5
    assert g.nodes["secure_execution"]["label"] == "secure execution"
