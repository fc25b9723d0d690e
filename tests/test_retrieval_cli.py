"""``thinkingdb search`` and ``thinkingdb eval``: JSON shape, exit codes, gates."""

from __future__ import annotations

import json

import pytest

from thinkingdb import cli
from thinkingdb.api import KnowledgeBase

UNITS = [
    {"id": "kiln-k4", "role": "policy", "topic": "Kiln firing limits",
     "claim": "Rule KLN-4: stoneware kilns stop at 1280 degrees.", "acl": ["studio:staff"]},
    {"id": "kiln-k4-old", "role": "policy", "topic": "Kiln firing limits",
     "claim": "Rule KLN-4: stoneware kilns stop at 1300 degrees.", "acl": ["studio:staff"],
     "effective_to": "2025-06-30"},
    {"id": "glaze-secret", "role": "policy", "topic": "Glaze recipes",
     "claim": "Recipe GLZ-8: the celadon glaze uses iron oxide.", "acl": ["studio:owner"]},
    {"id": "clay-note", "topic": "Clay storage", "claim": "Wet clay is stored in sealed bins.",
     "triples": [["wet clay", "stored_in", "sealed bins"]]},
]


@pytest.fixture
def db(tmp_path, monkeypatch):
    src = tmp_path / "units.jsonl"
    src.write_text("".join(json.dumps(u) + "\n" for u in UNITS), encoding="utf-8")
    path = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(path) as kb:
        kb.ingest([str(src)])
    return path


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


STAFF = ["--caller-tags", "studio:staff", "--as-of", "2026-01-15"]


def test_search_json_shape_and_exit_codes(db, capsys):
    code, out, err = run(capsys, "--db", db, "search", "KLN-4", "--profile", "kb-fast", *STAFF, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert [r["unit_id"] for r in doc["results"]] == ["kiln-k4"]
    r = doc["results"][0]
    assert set(r) >= {"unit_id", "score", "lanes", "proof"} and r["lanes"]["bm25"]["rank"] == 1
    t = doc["trace"]
    assert t["profile"]["name"] == "kb-fast" and t["index_versions"]["bm25"].startswith("bm25:")
    assert {"total", "bm25", "access"} <= set(t["timings_ms"])
    code, out, _ = run(capsys, "--db", db, "search", "GLZ-8", *STAFF, "--json")
    assert code == 1 and json.loads(out)["results"] == []


def test_search_text_output_and_proofs(db, capsys):
    code, out, _ = run(capsys, "--db", db, "search", "where is wet clay stored in", "--profile", "kb-thinkingdb",
                       "--as-of", "2026-01-15")
    assert code == 0 and out.startswith("1. clay-note")
    assert "     wet clay stored_in sealed bins  [score 1, asserted]" in out.splitlines()   # labels, not keys


def test_search_reads_the_labels_of_the_printed_proofs_only(db, capsys, monkeypatch):
    asked = []
    real = KnowledgeBase.labels

    def labels(self, **kw):
        asked.append(kw.get("keys"))
        return real(self, **kw)

    monkeypatch.setattr(KnowledgeBase, "labels", labels)
    code, out, _ = run(capsys, "--db", db, "search", "where is wet clay stored in", "--profile", "kb-thinkingdb",
                       "--as-of", "2026-01-15")
    assert code == 0 and asked == [{"wet_clay", "sealed_bins"}]
    asked.clear()
    code, out, _ = run(capsys, "--db", db, "search", "where is wet clay stored in", "--profile", "kb-thinkingdb",
                       "--as-of", "2026-01-15", "--no-proofs")
    assert code == 0 and asked == [] and "stored_in" not in out


def test_search_profile_file_and_bad_inputs(db, tmp_path, capsys):
    f = tmp_path / "narrow.toml"
    f.write_text('base = "kb-fast"\nmax_results = 1\n', encoding="utf-8")
    code, out, _ = run(capsys, "--db", db, "search", "kiln firing", "--profile-file", str(f), *STAFF, "--json")
    assert code == 0 and json.loads(out)["trace"]["profile"]["name"] == "narrow"
    f.write_text("gap = 7\n", encoding="utf-8")
    code, _, err = run(capsys, "--db", db, "search", "kiln", "--profile-file", str(f))
    assert code == 2 and "'gap'" in err and "Traceback" not in err
    code, _, err = run(capsys, "--db", db, "search", "kiln", "--as-of", "15/01/2026")
    assert code == 2 and "YYYY-MM-DD" in err
    code, _, err = run(capsys, "--db", db, "search", "   ")
    assert code == 2 and "empty" in err
    code, _, err = run(capsys, "--db", str(tmp_path / "absent.sqlite"), "search", "kiln")
    assert code == 2 and "no such store" in err


def _cases(tmp_path, extra=()):
    staff = {"tags": ["studio:staff"]}
    cases = [
        {"id": "code", "query": "KLN-4", "caller": staff, "as_of": "2026-01-15", "required": ["kiln-k4"],
         "forbidden": ["kiln-k4-old"]},
        {"id": "hidden-code", "query": "GLZ-8 celadon glaze", "caller": staff, "as_of": "2026-01-15",
         "must_abstain": True, "forbidden": ["glaze-secret"]},
        {"id": "clay", "query": "wet clay storage", "as_of": "2026-01-15", "required": ["clay-note"]},
        *extra,
    ]
    f = tmp_path / "cases.jsonl"
    f.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return str(f)


def test_eval_passes_gates_and_reports_recall(db, tmp_path, capsys):
    code, out, err = run(capsys, "--db", db, "eval", _cases(tmp_path), "--json")
    assert code == 0, out + err
    doc = json.loads(out)
    assert doc["passed"] is True and set(doc["profiles"]) == {"kb-fast", "kb-balanced", "kb-thinkingdb"}
    for s in doc["profiles"].values():
        assert s["recall"] == 1.0 and s["forbidden_failures"] == s["visibility_failures"] == 0
    code, out, _ = run(capsys, "--db", db, "eval", _cases(tmp_path), "--profiles", "kb-fast", "--k", "1")
    assert code == 0 and "kb-fast" in out and "all gates passed" in out


def test_eval_fails_when_a_gate_fails(db, tmp_path, capsys):
    # an abstention case that cannot abstain, and a forbidden id that is the right answer
    bad = [{"id": "wrong-abstain", "query": "KLN-4", "caller": {"tags": ["studio:staff"]}, "as_of": "2026-01-15",
            "must_abstain": True},
           {"id": "wrong-forbid", "query": "wet clay", "as_of": "2026-01-15", "forbidden": ["clay-note"]}]
    code, out, _ = run(capsys, "--db", db, "eval", _cases(tmp_path, bad), "--profiles", "kb-balanced")
    assert code == 1
    assert "FAIL kb-balanced wrong-abstain" in out and "FAIL kb-balanced wrong-forbid" in out
    code, out, _ = run(capsys, "--db", db, "eval", _cases(tmp_path), "--min-recall", "1.01")
    assert code == 2


def test_eval_bad_case_file(db, tmp_path, capsys):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"query": "x"}\n{"query": 3}\nnot json\n{"query": "y", "requird": []}\n', encoding="utf-8")
    code, _, err = run(capsys, "--db", db, "eval", str(f))
    assert code == 2
    assert ":2:1: field 'query'" in err and ":3:" in err and ":4:1: unknown field(s) requird" in err


def test_index_builds_once_then_loads_and_goes_stale_after_a_write(tmp_path, capsys):
    import json as _json
    from thinkingdb.cli.main import main
    src = tmp_path / "u.jsonl"
    src.write_text(_json.dumps({"id": "u1", "claim": "Refurbished laptops are replaced within 14 days."}) + "\n")
    db = str(tmp_path / "kb.sqlite")
    assert main(["--db", db, "-q", "ingest", str(src)]) == 0
    capsys.readouterr()

    def index():
        assert main(["--db", db, "--json", "index", "--profile", "kb-balanced"]) == 0
        doc = _json.loads(capsys.readouterr().out)
        return {k: v["state"] for k, v in doc["parts"].items()}, doc

    states, doc = index()
    assert states == {"bm25": "built", "hdc": "built", "view ids": "computed"}
    assert (doc["units"], doc["visible"]) == (1, 1)
    assert index()[0] == {"bm25": "loaded", "hdc": "loaded", "view ids": "computed"}   # a new process would load too
    more = tmp_path / "v.jsonl"
    more.write_text(_json.dumps({"id": "u2", "claim": "Tablets ship in two days."}) + "\n")
    assert main(["--db", db, "-q", "ingest", str(more)]) == 0
    capsys.readouterr()
    states, doc = index()
    # the BM25 and HDC indexes are the saved ones with u2 added (tests/test_lexcarry.py, tests/test_hdc_carry.py)
    assert (states["bm25"], states["hdc"], doc["units"]) == ("carried", "carried", 2)


def test_lane_builds_draw_a_progress_bar_on_a_terminal(tmp_path, monkeypatch):
    import io
    import json as _json
    import sys
    from thinkingdb.api import KnowledgeBase

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    src = tmp_path / "u.jsonl"
    src.write_text("".join(_json.dumps({"id": f"u{i}", "claim": f"claim number {i}"}) + "\n" for i in range(5)))
    with KnowledgeBase(str(tmp_path / "kb.sqlite")) as kb:
        kb.ingest([str(src)])
        term = Terminal()
        monkeypatch.setattr(sys, "stderr", term)
        kb.search("claim", profile="kb-balanced", caller=None)
        kb.search("claim zebra", profile="kb-balanced")   # escalates: HDC builds
    out = term.getvalue()
    assert "building BM25 index" in out and "building HDC index" in out
    assert "100.0% 5 records" in out
