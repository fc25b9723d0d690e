"""``query --limit N``: the JSON document says whether answers were left out (``more``), as the text
output does on stderr, in both the sorted and the streamed (--stream) form."""

import json

import pytest

from thinkingdb.cli.main import main

KB = """
nginx depends_on openssl.
openssl depends_on libc @0.5.
relation depends_on transitive.
"""   # nginx depends_on+ ?x: openssl (1.0), libc (0.5 by the transitive rule): two answers


@pytest.fixture
def db(tmp_path):
    src = tmp_path / "kb.tdb"
    src.write_text(KB)
    path = str(tmp_path / "kb.sqlite")
    assert main(["--db", path, "--quiet", "ingest", str(src)]) == 0
    return path


@pytest.mark.parametrize("limit, keys, more", [
    (None, ["openssl", "libc"], False),
    ("3", ["openssl", "libc"], False),
    ("2", ["openssl", "libc"], False),   # exactly as many as there are: nothing left out
    ("1", ["openssl"], True),
])
def test_json_says_when_the_limit_left_answers_out(db, capsys, limit, keys, more):
    argv = ["--db", db, "query", "? nginx depends_on+ ?x.", "--json"] + ([] if limit is None else ["--limit", limit])
    assert main(argv) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert [a["bindings"]["x"] for a in doc["answers"]] == keys
    assert doc["more"] is more and doc["truncated"] is None
    # the text output says the same, on stderr
    assert main(argv[:-1] if limit is None else argv[:4] + argv[5:]) == 0
    _, err = capsys.readouterr()
    assert ("there are more answers" in err) is more


def test_the_stream_and_the_sorted_form_agree_on_more(db, capsys):
    main(["--db", db, "query", "? nginx depends_on+ ?x.", "--stream", "--limit", "1"])
    _, err = capsys.readouterr()
    assert "stopped at --limit 1; there are more answers" in err
    main(["--db", db, "query", "? nginx depends_on+ ?x.", "--limit", "1", "--json"])
    assert json.loads(capsys.readouterr()[0])["more"] is True
