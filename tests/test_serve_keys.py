"""``thinkingdb keys``: keys are shown once, stored as SHA-256 of their secret, listed without it, revoked by
id or name; a key change is not a knowledge change (the store generation stays)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3

import pytest

from thinkingdb.cli.main import main as cli
from thinkingdb.store.keys import KEY_PATTERN, verify_key
from thinkingdb.store.sqlite import Store


@pytest.fixture
def db(tmp_path):
    src = tmp_path / "a.tdb"
    src.write_text("a r b.\n", encoding="utf-8")
    path = str(tmp_path / "kb.sqlite")
    assert cli(["--db", path, "-q", "ingest", str(src)]) == 0
    return path


def run(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_a_key_is_shown_once_and_stored_only_as_its_hash(db, capsys):
    rc, out, err = run(capsys, "--db", db, "keys", "add", "luna", "--tags", "Support:EU", "--region", "EU")
    token = out.strip()
    assert rc == 0 and KEY_PATTERN.fullmatch(token) and "not shown again" in err
    kid, secret = KEY_PATTERN.fullmatch(token).groups()
    rows = sqlite3.connect(db).execute("SELECT id, secret_sha256, tags, region, writer FROM api_keys").fetchall()
    assert rows == [(kid, hashlib.sha256(secret.encode()).hexdigest(), '["support:eu"]', "eu", 0)]
    raw = b"".join(open(p, "rb").read() for p in (db, db + "-wal") if os.path.exists(p))
    assert secret.encode() not in raw
    rc, out, _ = run(capsys, "--db", db, "--json", "keys", "list")
    listed = json.loads(out)["keys"]
    assert [(k["id"], k["name"], k["tags"], k["region"], k["writer"], k["revoked_at"]) for k in listed] == [
        (kid, "luna", ["support:eu"], "eu", False, None)]
    assert secret not in out and rows[0][1] not in out


def test_revoke_by_id_or_name_and_an_ambiguous_name_is_refused(db, capsys):
    tokens = [run(capsys, "--db", db, "keys", "add", "ops", "--writer")[1].strip() for _ in range(2)]
    with Store(db, create=False) as st:
        assert [verify_key(st, t).writer for t in tokens] == [True, True]
    rc, _, err = run(capsys, "--db", db, "keys", "revoke", "ops")
    assert rc == 2 and "2 active keys are named 'ops'" in err
    first = KEY_PATTERN.fullmatch(tokens[0]).group(1)
    assert run(capsys, "--db", db, "keys", "revoke", first)[0] == 0
    assert run(capsys, "--db", db, "keys", "revoke", "ops")[0] == 0   # now one active 'ops' is left
    with Store(db, create=False) as st:
        assert [verify_key(st, t) for t in tokens] == [None, None]
    rc, _, err = run(capsys, "--db", db, "keys", "revoke", "ops")
    assert rc == 2 and "no active key" in err


def test_keys_do_not_change_the_store_generation(db, capsys):
    with Store(db, create=False) as st:
        before = st.current_generation()
    run(capsys, "--db", db, "keys", "add", "x")
    run(capsys, "--db", db, "keys", "revoke", "x")
    with Store(db, create=False) as st:
        assert st.current_generation() == before


@pytest.mark.parametrize("token", [None, "", "tdb_", "tdb_zzzzzzzz_" + "a" * 43, "Bearer tdb_00000000_" + "a" * 43])
def test_malformed_keys_are_not_keys(db, token):
    with Store(db, create=False) as st:
        assert verify_key(st, token) is None


def test_keys_need_an_existing_store_and_a_name(tmp_path, db, capsys):
    rc, _, err = run(capsys, "--db", str(tmp_path / "none.sqlite"), "keys", "list")
    assert rc == 2 and "no such store" in err
    rc, _, err = run(capsys, "--db", db, "keys", "add", " ")
    assert rc == 2 and "a key needs a name" in err


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.4", "::", "example.org"])
def test_serve_binds_beyond_loopback_only_when_told(db, capsys, host):
    rc, _, err = run(capsys, "--db", db, "serve", "--host", host)
    assert rc == 2 and "--allow-remote" in err
