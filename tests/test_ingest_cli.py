"""The lint, normalize and retract commands, called in-process through an argparse harness."""

import argparse
import json

import pytest

from thinkingdb.cli import tools as cli_tools
from thinkingdb.errors import ThinkingDBError
from thinkingdb.store.ingest import ingest
from thinkingdb.store.sqlite import Store


def run(argv, capsys, db="kb.sqlite"):
    parser = argparse.ArgumentParser(prog="thinkingdb")
    parser.add_argument("--db", default=db)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    sub = parser.add_subparsers(dest="command")
    cli_tools.register(sub)
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except ThinkingDBError as exc:  # what the main program turns into one stderr line and exit 2
        return 2, str(exc)
    return code, capsys.readouterr().out


def test_lint_exit_codes_and_json(tmp_path, capsys):
    messy = tmp_path / "m.tdb"
    messy.write_text("relation uses transitive.\na uses b.\nA uses b @0.5.\n")
    code, out = run(["--json", "lint", str(messy)], capsys)
    doc = json.loads(out)
    assert code == 1 and doc["count"] == 2
    assert sorted(f["code"] for f in doc["findings"]) == ["conflicting-confidence", "similar-symbols"]
    clean = tmp_path / "c.tdb"
    clean.write_text("relation uses transitive.\na uses b.\n")
    code, out = run(["lint", str(clean)], capsys)
    assert (code, out) == (0, "1 file(s): no findings\n")


def test_normalize_to_output_and_stdout(tmp_path, capsys):
    src = tmp_path / "x.tsv"
    src.write_text("B\tdependsOn\tA\nb\tdepends_on\ta\t0.5\n")
    code, out = run(["normalize", str(src), "-o", "-"], capsys)
    assert (code, out) == (0, "b\tdepends_on\ta\n")
    dst = tmp_path / "y.tsv"
    code, out = run(["--json", "normalize", str(src), "-o", str(dst)], capsys)
    assert code == 0 and json.loads(out)["lines"] == 1 and dst.read_text() == "b\tdepends_on\ta\n"


def test_normalize_with_vocab(tmp_path, capsys):
    src = tmp_path / "x.tsv"
    src.write_text("car\thasPart\twheel\nnginx\trequires\tssl\n")
    vocab = tmp_path / "v.tdb"
    vocab.write_text("relation part_of inverse has_part.\nalias requires => depends_on.\n")
    code, out = run(["normalize", str(src), "-o", "-", "--vocab", str(vocab)], capsys)
    assert out == "nginx\tdepends_on\tssl\nwheel\tpart_of\tcar\n"


def test_normalize_bad_input_is_an_error(tmp_path, capsys):
    src = tmp_path / "x.tdb"
    src.write_text("a b c\n")
    code, message = run(["normalize", str(src)], capsys)
    assert code == 2 and "x.tdb:1:" in message


def test_retract_command(tmp_path, capsys):
    db = str(tmp_path / "kb.sqlite")
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    a.write_text("x\tuses\ty\nx\tuses\tz\n")
    b.write_text("x\tuses\ty\t0.5\n")
    with Store(db) as st:
        ingest(st, [str(a), str(b)])
    code, out = run(["--json", "retract", str(a)], capsys, db=db)
    assert code == 0 and json.loads(out) == {"sources": [str(a)], "facts": 1, "units": 0, "provenance": 2}
    with Store(db) as st:
        assert [(str(f.triple), f.confidence) for f in st.facts()] == [("x uses y", 0.5)]
    code, message = run(["retract", "never.tsv"], capsys, db=db)
    assert code == 2 and "not an ingested source: never.tsv" in message
    code, message = run(["retract", "a.tsv"], capsys, db=str(tmp_path / "none.sqlite"))
    assert code == 2 and "no such store" in message


def test_every_command_has_an_example():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    cli_tools.register(sub)
    for name in ("lint", "normalize", "retract"):
        assert f"thinkingdb" in sub.choices[name].epilog and name in sub.choices[name].epilog
