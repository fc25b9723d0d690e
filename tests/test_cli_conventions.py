"""CLI conventions of issue 17 (as in sqlite-utils and friends) and packaging: --version, read commands
that refuse a missing store, normalize to stdout, TSV headers, `sources`, `--caller-tags` that leaves the
query text alone, lint of a missing file, the shipped examples, LICENSE and metadata."""

from __future__ import annotations

import io
import json
import os
import pathlib
import sys
import tomllib

import pytest

from thinkingdb.cli import main

ROOT = pathlib.Path(__file__).resolve().parent.parent


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_version_matches_the_package_metadata(capsys):
    from importlib.metadata import version
    code, out, _ = run(capsys, "--version")
    assert (code, out) == (0, f"thinkingdb {version('thinkingdb')}\n")
    assert version("thinkingdb") == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


@pytest.mark.parametrize("argv", [["query", "? a r ?x."], ["why", "a r b"], ["stats"], ["export", "--format", "tsv"],
                                  ["sources"], ["search", "anything"], ["retract", "x.tdb"]])
def test_read_commands_refuse_a_missing_store_and_do_not_create_it(tmp_path, capsys, argv):
    db = tmp_path / "missing.sqlite"
    code, _, err = run(capsys, "--db", str(db), *argv)
    assert code == 2 and "no such store" in err
    assert not db.exists()


def test_normalize_prints_unless_in_place(tmp_path, capsys):
    src = tmp_path / "x.tsv"
    src.write_text("B\tdependsOn\tA\n", encoding="utf-8")
    code, out, _ = run(capsys, "normalize", str(src))
    assert (code, out) == (0, "b\tdepends_on\ta\n")
    assert src.read_text(encoding="utf-8") == "B\tdependsOn\tA\n"  # untouched
    code, _, _ = run(capsys, "-q", "normalize", str(src), "-i")
    assert code == 0 and src.read_text(encoding="utf-8") == "b\tdepends_on\ta\n"
    code, _, err = run(capsys, "normalize", str(src), "-i", "-o", "y.tsv")
    assert code == 2 and "exclude" in err


@pytest.fixture
def kb(tmp_path, capsys):
    src = tmp_path / "deps.tdb"
    src.write_text("nginx depends_on openssl.\nopenssl depends_on libc.\n", encoding="utf-8")
    db = str(tmp_path / "kb.sqlite")
    assert main(["--db", db, "-q", "ingest", str(src)]) == 0
    capsys.readouterr()
    return db


def test_query_tsv_has_a_header_row_unless_asked_not_to(kb, capsys):
    _, out, _ = run(capsys, "--db", kb, "query", "? nginx depends_on+ ?x.", "--format", "tsv")
    assert out.splitlines() == ["x\tscore", "libc\t1.0", "openssl\t1.0"]
    _, out, _ = run(capsys, "--db", kb, "query", "? nginx depends_on+ ?x.", "--format", "tsv", "--no-header")
    assert out.splitlines() == ["libc\t1.0", "openssl\t1.0"]


def test_export_to_stdout_with_dash(kb, capsys):
    code, out, _ = run(capsys, "--db", kb, "export", "--format", "tsv", "-o", "-", "--no-header")
    assert (code, out) == (0, "nginx\tdepends_on\topenssl\t1.0\nopenssl\tdepends_on\tlibc\t1.0\n")


def test_sources_command(kb, capsys, tmp_path):
    code, out, _ = run(capsys, "--db", kb, "sources")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "source\tkind\trecords\tingested_at"
    assert [ln.split("\t")[:3] for ln in lines[1:]] == [[os.path.normpath(str(tmp_path / "deps.tdb")), "tdb", "2"]]
    _, out, _ = run(capsys, "--db", kb, "--json", "sources")
    assert [s["records"] for s in json.loads(out)["sources"]] == [2]


def test_caller_tags_leave_the_query_text_alone():
    from thinkingdb.cli.main import build_parser
    args = build_parser().parse_args(["search", "--caller-tags", "a:b,c:d", "--caller-tags", "e", "laptop policy"])
    assert (args.caller_tags, args.text) == (["a:b", "c:d", "e"], "laptop policy")


def test_lint_of_a_missing_file_exits_2(tmp_path, capsys):
    code, _, err = run(capsys, "lint", str(tmp_path / "nope.tdb"))
    assert code == 2 and "no such file" in err


# -- packaging ------------------------------------------------------------------------------------------------
def test_the_shipped_examples_are_the_repository_examples():
    for name in ("software.tdb", "units.jsonl"):
        assert (ROOT / "thinkingdb" / "data" / "examples" / name).read_bytes() == (ROOT / "examples" / name).read_bytes()


class _Stdin:
    def __init__(self, data: bytes):
        self.buffer = io.BytesIO(data)


@pytest.mark.parametrize("name,fmt", [("software", []), ("units", ["--format", "jsonl"]), ("units", [])])
def test_example_piped_into_ingest_equals_ingesting_the_file(tmp_path, capsys, monkeypatch, name, fmt):
    code, text, _ = run(capsys, "example", name)
    assert code == 0
    monkeypatch.setattr(sys, "stdin", _Stdin(text.encode("utf-8")))
    code, out, _ = run(capsys, "--db", str(tmp_path / "a.sqlite"), "--json", "ingest", "-", *fmt)
    piped = json.loads(out)
    ext = "tdb" if name == "software" else "jsonl"
    code, out, _ = run(capsys, "--db", str(tmp_path / "b.sqlite"), "--json", "ingest", str(ROOT / "examples" / f"{name}.{ext}"))
    direct = json.loads(out)
    assert piped["sources"] == ["<stdin>"]
    assert {k: piped[k] for k in ("facts", "units", "rules", "declarations")} == \
        {k: direct[k] for k in ("facts", "units", "rules", "declarations")}
    assert piped["facts"] + piped["units"] > 0


def test_license_and_metadata():
    license_text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert license_text.startswith("MIT License")
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["license"] == {"text": "MIT"}
    assert "License :: OSI Approved :: MIT License" in meta["project"]["classifiers"]
    assert "data/examples/*" in meta["tool"]["setuptools"]["package-data"]["thinkingdb"]


def test_eval_warns_about_case_ids_not_in_the_store(tmp_path, capsys):
    units = tmp_path / "u.jsonl"
    units.write_text(json.dumps({"id": "kiln-k4", "claim": "Rule KLN-4: kilns stop at 1280 degrees."}) + "\n",
                     encoding="utf-8")
    db = str(tmp_path / "kb.sqlite")
    assert main(["--db", db, "-q", "ingest", str(units)]) == 0
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "c1", "query": "KLN-4", "required": ["kiln-k4", "kiln-k5"],
                                 "forbidden": ["kiln-zz"]}) + "\n", encoding="utf-8")
    capsys.readouterr()
    _, _, err = run(capsys, "--db", db, "eval", str(cases), "--profiles", "kb-fast")
    assert "2 unit id(s) named by the cases are not in the store: kiln-k5, kiln-zz" in err
    cases.write_text(json.dumps({"id": "c1", "query": "KLN-4", "required": ["kiln-k4"]}) + "\n", encoding="utf-8")
    _, _, err = run(capsys, "--db", db, "eval", str(cases), "--profiles", "kb-fast")
    assert "not in the store" not in err


def test_lint_and_normalize_read_standard_input(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", _Stdin(b"nginx uses OpenSSL.\nnginx uses openssl.\n"))
    code, out, _ = run(capsys, "--json", "lint", "-")
    findings = json.loads(out)["findings"]
    assert code == 1 and {(f["source"], f["line"], f["code"]) for f in findings} >= {("<stdin>", 2, "duplicate-fact")}
    monkeypatch.setattr(sys, "stdin", _Stdin(b"B\tdependsOn\tA\nb\tdepends_on\ta\t0.5\n"))
    code, out, _ = run(capsys, "normalize", "-", "--format", "tsv")
    assert (code, out) == (0, "b\tdepends_on\ta\n")
    code, _, err = run(capsys, "normalize", "-", "-i")
    assert code == 2 and "in place" in err


def test_ingest_of_a_wrong_type_is_a_thinkingdb_error(tmp_path):
    from thinkingdb import ValidationError, open_kb
    with open_kb(str(tmp_path / "kb.sqlite")) as kb:
        for bad in (5, [1, 2], None, b"x.tdb"):
            with pytest.raises(ValidationError, match="ingest takes"):
                kb.ingest(bad)


def test_help_imports_neither_the_engine_nor_the_retrieval_pipeline():
    import subprocess
    from thinkingdb.cli.search import BUILTIN_PROFILES
    from thinkingdb.retrieval.profiles import profile_names
    assert BUILTIN_PROFILES == tuple(profile_names())
    code = ("import sys; from thinkingdb.cli.main import build_parser; build_parser(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'networkx', 'lexical', 'hdc') "
            "or m.startswith(('thinkingdb.engine', 'thinkingdb.retrieval', 'thinkingdb.api'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
