"""A user rule whose ``not`` cycles with the default rule library (thinkingdb/data/default_rules.tdb) is
refused where it is written — by ``ingest`` (atomically) and by ``lint`` — with ``cyclic_negation`` at its
file:line, as a cycle among the user's own rules is. Before, it was stored, and then every question that
applies the library failed with no file or line."""

import json

import pytest

from thinkingdb.cli.main import main
from thinkingdb.errors import ParseError
from thinkingdb.language import compile_source
from thinkingdb.engine.rules import library_rules

# depends_on needs not has_capability (rule x); the library's capability_through_dependency makes
# has_capability need depends_on: no stratum order exists once the library applies.
BAD = "p uses q.\nrule x: ?a uses ?b, not ?a has_capability ?b => ?a depends_on ?b.\n"
CYCLE = ("depends_on needs not has_capability (rule x), has_capability needs depends_on "
         "(rule capability_through_dependency)")


def test_the_compiler_refuses_it_with_the_library_and_accepts_it_alone():
    with pytest.raises(ParseError) as info:
        compile_source(BAD, "bad.tdb", library=library_rules)
    [d] = info.value.diagnostics
    assert (d.source, d.line, d.column, d.code) == ("bad.tdb", 2, 1, "cyclic_negation")
    assert CYCLE in d.reason and "default rule library" in d.reason
    assert len(compile_source(BAD, "bad.tdb").rules) == 1   # alone (no library) there is no cycle


def test_a_cycle_of_the_file_alone_does_not_blame_the_library():
    own = "rule y: ?a h ?b, not ?a c ?b => ?a b ?b.\nrule z: ?a b ?b => ?a c ?b.\n"
    with pytest.raises(ParseError) as info:
        compile_source(own, "own.tdb", library=library_rules)
    assert "default rule library" not in info.value.diagnostics[0].reason


@pytest.fixture
def store(tmp_path):
    (tmp_path / "base.tdb").write_text("a uses b.\nb provides c.\n")
    db = str(tmp_path / "s.sqlite")
    assert main(["--db", db, "--quiet", "ingest", str(tmp_path / "base.tdb")]) == 0
    return db


def _dump(db, capsys):
    capsys.readouterr()
    main(["--db", db, "export", "--format", "jsonl"])
    facts = capsys.readouterr()[0]
    main(["--db", db, "--json", "stats"])
    return facts, json.loads(capsys.readouterr()[0])


def test_ingest_refuses_it_and_changes_nothing(store, tmp_path, capsys):
    bad = tmp_path / "bad.tdb"
    bad.write_text("m uses n.\n" + BAD)   # a good fact beside it: not stored either (atomic)
    before = _dump(store, capsys)
    assert main(["--db", store, "ingest", str(bad)]) == 2
    err = capsys.readouterr()[1]
    assert f"{bad}:3:1:" in err and CYCLE in err
    assert _dump(store, capsys) == before
    # questions with the default rules still work (a uses b, b provides c => a has_capability c @0.95)
    assert main(["--db", store, "--json", "query", "? ?x has_capability ?y."]) == 0
    got = json.loads(capsys.readouterr()[0])["answers"]
    assert [(a["bindings"], a["score"]) for a in got] == [({"x": "a", "y": "c"}, 0.95)]


def test_lint_reports_it_at_the_rule(tmp_path, capsys):
    bad = tmp_path / "bad.tdb"
    bad.write_text(BAD)
    assert main(["lint", str(bad), "--json"]) == 1
    [f] = json.loads(capsys.readouterr()[0])["findings"]
    # lint files every compile error under "syntax" (as it does a cycle of the file's own rules)
    assert (f["source"], f["line"], f["column"], f["code"]) == (str(bad), 2, 1, "syntax")
    assert CYCLE in f["message"]


def test_a_not_that_does_not_cycle_with_the_library_is_ingested_and_answers(store, tmp_path, capsys):
    ok = tmp_path / "ok.tdb"
    ok.write_text("p uses q.\nrule lack: ?a uses ?b, not ?a has_capability ?b => ?a lacks ?b.\n")
    assert main(["--db", store, "--quiet", "ingest", str(ok)]) == 0
    capsys.readouterr()
    assert main(["--db", store, "--json", "query", "? ?a lacks ?b."]) == 0
    got = json.loads(capsys.readouterr()[0])["answers"]
    # a uses b and p uses q; neither a has_capability b (a's capability is c) nor p has_capability q
    assert sorted((a["bindings"]["a"], a["bindings"]["b"]) for a in got) == [("a", "b"), ("p", "q")]


@pytest.mark.parametrize("order", ["not first", "not second"])
def test_a_cycle_through_two_files_and_the_library_is_refused_at_the_stored_rule(store, tmp_path, capsys, order):
    # x: foo needs not has_capability; y: depends_on needs foo; the library: has_capability needs
    # depends_on. Neither file cycles with the library alone (each passes read_tdb's check); together
    # they do, so the second ingest is refused at its rule, whichever comes first, and changes nothing
    x = tmp_path / "x.tdb"
    x.write_text("rule x: ?a uses ?b, not ?a has_capability ?b => ?a foo ?b.\n")
    y = tmp_path / "y.tdb"
    y.write_text("p uses q.\nrule y: ?a foo ?b => ?a depends_on ?b.\n")
    first, second = (x, y) if order == "not first" else (y, x)
    assert main(["--db", store, "--quiet", "ingest", str(first)]) == 0
    before = _dump(store, capsys)
    assert main(["--db", store, "ingest", str(second)]) == 2
    err = capsys.readouterr()[1]
    where = f"{y}:2:1:" if second is y else f"{x}:1:1:"   # the cycle's rule this ingest wrote
    assert where in err and "foo needs not has_capability (rule x)" in err and "(rule y)" in err
    assert "default rule library" in err
    assert _dump(store, capsys) == before
    assert main(["--db", store, "--json", "query", "? ?x has_capability ?y."]) == 0   # questions still work
    capsys.readouterr()
