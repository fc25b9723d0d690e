"""The HTTP API through Starlette's ASGI test client: every endpoint, keys, bad input, and the access
rules of the search pipeline applied to every endpoint (query and why included)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("starlette", reason="the serve extra is not installed (pip install -e '.[serve]')")
pytest.importorskip("httpx", reason="the serve extra is not installed (pip install -e '.[serve]')")

from starlette.testclient import TestClient  # noqa: E402

from thinkingdb.cli.main import main as cli  # noqa: E402
from thinkingdb.serve import Service  # noqa: E402
from thinkingdb.serve.app import create_app  # noqa: E402
from thinkingdb.store.keys import add_key, revoke_key  # noqa: E402
from thinkingdb.store.sqlite import Store  # noqa: E402

from serve_kb import AS_OF, HIDDEN_FROM_CLERK, SECRETS, build  # noqa: E402

ENDPOINTS = [("post", "/search", {"text": "basement flooding"}), ("post", "/query", {"query": "? a r ?x"}),
             ("post", "/why", {"fact": "nginx depends_on libc"}), ("post", "/provenance", {"facts": ["a r b"]}),
             ("post", "/ingest", {"files": [{"name": "x.tdb", "text": "x r y."}]}), ("get", "/stats", None), ("get", "/whoami", None),
             ("get", "/units/ide-profile", None), ("get", "/symbols/nginx", None)]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    db, tokens = build(tmp_path_factory.mktemp("serve"))
    service = Service(db)
    with TestClient(create_app(service)) as client:
        yield db, client, tokens
    service.close()


def call(client, method, path, body=None, token=None, **kw):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if method == "get":
        return client.get(path, headers=headers, **kw)
    return client.post(path, json=body, headers=headers, **kw)


def run_cli(capsys, *argv) -> dict:
    capsys.readouterr()
    cli(list(argv))
    return json.loads(capsys.readouterr().out)


# -- keys -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method,path,body", ENDPOINTS)
def test_every_endpoint_refuses_a_missing_bad_or_revoked_key(served, method, path, body):
    db, client, tokens = served
    for token in (None, "tdb_00000000_" + "x" * 43, tokens["clerk"][:-1] + "Z", "Bearer", tokens["revoked"]):
        r = call(client, method, path, body, token)
        assert r.status_code == 401, (token, r.text)
        assert r.json()["error"]["type"] == "Unauthorized"
        assert r.headers["www-authenticate"] == "Bearer"


def test_health_needs_no_key_and_says_the_generation(served):
    db, client, _ = served
    with Store(db, create=False, readonly=True) as st:
        gen = st.current_generation()
    assert client.get("/health").json() == {"status": "ok", "generation": gen}


def test_the_key_may_come_as_x_api_key_and_whoami_names_its_caller(served):
    _, client, tokens = served
    r = client.get("/whoami", headers={"X-API-Key": tokens["clerk"]})
    assert r.status_code == 200
    assert {k: v for k, v in r.json().items() if k != "key"} == {"name": "clerk", "tags": ["claims:west"],
                                                                 "region": "west", "writer": False}
    assert tokens["clerk"] not in r.text


# -- shapes are the CLI's --json shapes -----------------------------------------------------------------------
def _no_timings(value):
    """The trace without its timings (every key ``ms`` or ending in ``_ms`` measures this run)."""
    if isinstance(value, dict):
        return {k: _no_timings(v) for k, v in value.items()
                if not (k == "ms" or k.endswith("_ms")) or k == "timeout_ms"}
    if isinstance(value, list):
        return [_no_timings(v) for v in value]
    return value


@pytest.mark.parametrize("profile", ["kb-fast", "kb-balanced", "kb-thinkingdb"])
def test_search_answers_what_the_cli_prints(served, capsys, profile):
    db, client, tokens = served
    text = "why is AchillesIDE relevant for secure execution"
    got = call(client, "post", "/search", {"text": text, "profile": profile, "as_of": AS_OF}, tokens["auditor"]).json()
    want = run_cli(capsys, "--db", db, "--json", "search", text, "--profile", profile, "--caller-tags",
                   "claims:west,audit:gold", "--region", "WEST", "--as-of", AS_OF)
    assert got["results"] == want["results"] and got["results"]
    assert _no_timings(got["trace"]) == _no_timings(want["trace"])


def test_query_and_why_answer_what_the_cli_prints(served, capsys):
    db, client, tokens = served
    got = call(client, "post", "/query", {"query": "? nginx depends_on+ ?x."}, tokens["public"]).json()
    assert got == run_cli(capsys, "--db", db, "--json", "query", "? nginx depends_on+ ?x.")
    assert sorted(a["bindings"]["x"] for a in got["answers"]) == ["libc", "openssl"]
    got = call(client, "post", "/why", {"fact": "nginx depends_on libc"}, tokens["public"]).json()
    assert got == run_cli(capsys, "--db", db, "--json", "why", "nginx depends_on libc")
    assert got["proof"]["rule"] is not None and set(got["provenance"]) == {"nginx depends_on openssl",
                                                                            "openssl depends_on libc"}


def test_stats_counts_what_each_caller_may_see(served, capsys):
    db, client, tokens = served
    full = run_cli(capsys, "--db", db, "--json", "stats")
    # public: the 2 deps.tdb facts, plus the 2 facts of the 2 region-free public units (by hand from serve_kb)
    pub = call(client, "get", "/stats", token=tokens["public"], params={"as_of": AS_OF}).json()
    assert (pub["facts"], pub["units"], pub["provenance"]) == (4, 2, 4)
    assert pub["relations"] == 3 and pub["symbols"] == 7 and pub["rules"] == full["rules"]
    # the auditor also sees flood-rule-v3 (1 fact) and gold-override (2 facts); flood-rule-v2 has expired
    aud = call(client, "get", "/stats", token=tokens["auditor"], params={"as_of": AS_OF}).json()
    assert (aud["facts"], aud["units"], aud["provenance"]) == (7, 4, 7)
    assert set(aud) == set(full) | {"generation"}
    assert full["facts"] >= aud["facts"]


# -- the access rules through every endpoint ------------------------------------------------------------------
def _answers(client, token) -> dict:
    def post(path, body):
        return call(client, "post", path, {**body, "as_of": AS_OF}, token)

    def get(path):
        return call(client, "get", path, token=token, params={"as_of": AS_OF})

    out = {
        "search": post("/search", {"text": "GLD-9 gold tier override", "profile": "kb-thinkingdb", "labels": True}),
        "search closure": post("/search", {"text": "why is AchillesIDE relevant for secure execution",
                                           "profile": "kb-thinkingdb", "labels": True}),
        "query": post("/query", {"query": "? ?s exempt_from ?o", "labels": True}),
        "query via rules": post("/query", {"query": "? achilleside relevant_for ?goal", "labels": True}),
        "why": post("/why", {"fact": "AchillesIDE relevant_for secure_execution", "labels": True}),
        "stats": get("/stats"),
        "symbol": get("/symbols/quarkbox"),
        "provenance": post("/provenance", {"facts": ["gold_tier exempt_from flooding_deductible",
                                                     "quarkbox provides process_isolation"]}),
    }
    for uid in sorted(HIDDEN_FROM_CLERK):
        out[f"unit {uid}"] = get(f"/units/{uid}")
    out["symbol gold_tier"] = get("/symbols/gold_tier")
    return out


def test_no_endpoint_shows_the_clerk_what_only_hidden_units_say(served):
    _, client, tokens = served
    clerk, auditor = _answers(client, tokens["clerk"]), _answers(client, tokens["auditor"])
    # answers that do not echo the request: no secret at all
    plain = ["search", "search closure", "query", "query via rules", "why", "stats", "symbol"]
    text = "\n".join(clerk[k].text for k in plain).casefold()
    for secret in SECRETS:
        assert secret.casefold() not in text, secret
    assert clerk["why"].json() == {"proof": None} and clerk["query"].json()["answers"] == []
    assert clerk["query via rules"].json()["answers"] == []
    assert list(clerk["provenance"].json()["provenance"].values()) == [[], []]
    assert [clerk[k].status_code for k in ("unit east-rule", "unit gold-override", "symbol gold_tier")] == [404] * 3
    # the control: the auditor, who may see gold-override, gets each secret through the same calls
    seen = "\n".join(auditor[k].text for k in plain).casefold()
    for secret in SECRETS:
        assert secret.casefold() in seen, secret
    assert auditor["why"].json()["proof"] is not None
    assert [len(v) for v in auditor["provenance"].json()["provenance"].values()] == [1, 1]
    assert [auditor[k].status_code for k in ("unit gold-override", "symbol gold_tier")] == [200, 200]
    assert auditor["unit east-rule"].status_code == 404   # region EAST: hidden from the auditor too


def test_a_symbol_page_lists_only_visible_units(served):
    _, client, tokens = served
    r = call(client, "get", "/symbols/quarkbox", token=tokens["clerk"], params={"as_of": AS_OF}).json()
    assert [(f["subject"], f["relation"], f["units"]) for f in r["in"]] == [("achilleside", "uses", ["ide-profile"])]
    assert r["out"] == [] and r["truncated"] is False
    r = call(client, "get", "/symbols/quarkbox", token=tokens["auditor"], params={"as_of": AS_OF}).json()
    assert [(f["relation"], f["object"], f["units"]) for f in r["out"]] == [
        ("provides", "process_isolation", ["gold-override"])]


def test_a_unit_page_shows_the_unit_and_its_facts(served):
    _, client, tokens = served
    r = call(client, "get", "/units/ide-profile", token=tokens["clerk"]).json()
    assert r["unit"]["claim"] == "AchillesIDE runs cells inside Quarkbox."
    assert [(f["subject"], f["relation"], f["object"]) for f in r["facts"]] == [("achilleside", "uses", "quarkbox")]
    assert r["labels"]["achilleside"] == "AchillesIDE"


def test_a_key_may_look_as_a_narrower_caller_never_a_wider_one(served):
    _, client, tokens = served
    body = {"text": "GLD-9 gold tier override", "profile": "kb-fast", "as_of": AS_OF}
    narrowed = call(client, "post", "/search", {**body, "caller": {"tags": ["claims:west"], "region": "WEST"}},
                    tokens["auditor"]).json()
    clerk = call(client, "post", "/search", body, tokens["clerk"]).json()
    assert narrowed["results"] == clerk["results"]
    assert [r["unit_id"] for r in call(client, "post", "/search", body, tokens["auditor"]).json()["results"]][:1] == [
        "gold-override"]
    for caller in ({"tags": ["audit:gold"]}, {"tags": [], "region": "EAST"}):
        r = call(client, "post", "/search", {**body, "caller": caller}, tokens["clerk"])
        assert r.status_code == 403 and r.json()["error"]["type"] == "Forbidden"
    r = client.get("/stats", params={"tags": "audit:gold"}, headers={"Authorization": f"Bearer {tokens['clerk']}"})
    assert r.status_code == 403


# -- bad input ------------------------------------------------------------------------------------------------
BAD = [
    (b"{", "not valid JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
    (b"", "the request body is empty"),
    (b"[1, 2]", "the request body must be a JSON object, got an array"),
    (b'{"text": 5}', "field 'text': expected a string, got an integer"),
    (b'{"text": "x", "profile": "kb-slow"}', "field 'profile': 'kb-slow' is not one of"),
    (b'{"text": "x", "colour": 1}', "unknown field 'colour'"),
    (b'{}', "missing field 'text'"),
    (b'{"text": "x", "as_of": "27/05/2026"}', "as-of date must be YYYY-MM-DD"),
    (b'{"text": "x", "caller": {"tags": "a"}}', "field 'caller'.tags: expected an array, got a string"),
    (b'{"text": "   "}', "search text is empty"),
    (b'\xff\xfe{}', "not UTF-8"),
]


@pytest.mark.parametrize("raw,message", BAD)
def test_bad_requests_are_400_with_a_message_never_a_traceback(served, raw, message):
    _, client, tokens = served
    r = client.post("/search", content=raw, headers={"Authorization": f"Bearer {tokens['clerk']}",
                                                     "Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    assert message in r.json()["error"]["message"]
    assert "Traceback" not in r.text and 'File "' not in r.text


# every POST endpoint: the required field each needs, and a value of the wrong type for it
POSTS = [("/search", "text", 5, "expected a string, got an integer"),
         ("/query", "query", ["? a r ?x"], "expected a string, got an array"),
         ("/why", "fact", {"s": 1}, "expected a string, got an object"),
         ("/provenance", "facts", "a r b", "expected an array, got a string"),
         ("/ingest", "files", 3, "expected an array, got an integer")]


@pytest.mark.parametrize("path,field,wrong,type_message", POSTS)
def test_every_post_endpoint_answers_bad_json_with_400_and_a_message(served, path, field, wrong, type_message):
    db, client, tokens = served
    gen = client.get("/health").json()["generation"]
    cases = [(b"{", "not valid JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
             (b"[1, 2]", "the request body must be a JSON object, got an array"),
             (b"{}", f"missing field {field!r}"),
             (json.dumps({field: wrong}).encode(), f"field {field!r}: {type_message}"),
             (json.dumps({field: wrong, "colour": 1}).encode(), "unknown field 'colour'"),
             (b"\xff\xfe{}", "not UTF-8")]
    for token in ("clerk", "writer"):         # a writer's ingest is refused for its body too
        for raw, message in cases:
            r = client.post(path, content=raw, headers={"Authorization": f"Bearer {tokens[token]}",
                                                        "Content-Type": "application/json"})
            assert r.status_code == 400, (path, raw, r.text)
            assert message in r.json()["error"]["message"], (path, raw, r.json())
            assert "Traceback" not in r.text and 'File "' not in r.text
    assert client.get("/health").json()["generation"] == gen     # nothing was written


def test_query_and_why_errors_name_the_place(served):
    _, client, tokens = served
    r = call(client, "post", "/query", {"query": "? nginx depends_on ("}, tokens["clerk"])
    assert r.status_code == 400 and r.json()["error"]["type"] == "ParseError"
    assert "<query>:1:" in r.json()["error"]["message"] or ":1:" in r.json()["error"]["message"]
    r = call(client, "post", "/query", {"query": "? a r ?x", "timeout_ms": 10 ** 9}, tokens["clerk"])
    assert r.status_code == 400 and "at most 30,000 on this server" in r.json()["error"]["message"]
    r = call(client, "post", "/why", {"fact": "only two"}, tokens["clerk"])
    assert r.status_code == 400


def test_too_large_bodies_unknown_paths_and_methods(served, tmp_path):
    db, client, tokens = served
    auth = {"Authorization": f"Bearer {tokens['clerk']}"}
    small = Service(db)
    try:
        with TestClient(create_app(small, max_body=64)) as c:
            r = c.post("/search", json={"text": "x" * 100}, headers=auth)
            assert r.status_code == 413 and "over the limit of 64" in r.json()["error"]["message"]
    finally:
        small.close()
    r = client.get("/nowhere", headers=auth)
    assert r.status_code == 404 and r.json()["error"]["type"] == "NotFound"
    r = client.get("/search", headers=auth)
    assert r.status_code == 405 and r.json()["error"]["type"] == "MethodNotAllowed"
    r = client.get("/stats", params={"colour": "red"}, headers=auth)
    assert r.status_code == 400 and "unknown query parameter 'colour'" in r.text


def test_an_internal_error_is_500_without_its_traceback(served, monkeypatch):
    db, client, tokens = served
    svc = Service(db)
    monkeypatch.setattr(svc, "stats", lambda *a: 1 / 0)
    try:
        with TestClient(create_app(svc), raise_server_exceptions=False) as c:
            r = c.get("/stats", headers={"Authorization": f"Bearer {tokens['clerk']}"})
    finally:
        svc.close()
    assert r.status_code == 500 and r.json() == {
        "error": {"type": "InternalError", "message": "internal error; the server log has the details"}}


def test_revoking_takes_effect_on_the_next_request(served):
    db, client, _ = served
    with Store(db, create=False) as st:
        info, token = add_key(st, "temp")
    assert call(client, "get", "/stats", token=token).status_code == 200
    with Store(db, create=False) as st:
        revoke_key(st, info.id)
    assert call(client, "get", "/stats", token=token).status_code == 401


# -- writes ---------------------------------------------------------------------------------------------------
def test_ingest_is_for_writers_and_readers_see_the_write_at_once(tmp_path):
    db, tokens = build(tmp_path)
    service = Service(db)
    try:
        with TestClient(create_app(service)) as client:
            body = {"files": [{"name": "chain.tdb", "text": "p1 chain p2. p2 chain p3.\n"}]}
            r = call(client, "post", "/ingest", body, tokens["clerk"])
            assert r.status_code == 403 and "may not write" in r.json()["error"]["message"]
            before = client.get("/health").json()["generation"]
            r = call(client, "post", "/ingest", body, tokens["writer"])
            assert r.status_code == 200, r.text
            got = r.json()
            assert (got["facts"], got["units"], got["rejected"]) == (2, 0, 0)
            assert got["generation"] == before + 1 == client.get("/health").json()["generation"]
            answers = call(client, "post", "/query", {"query": "? p1 chain+ ?x"}, tokens["public"]).json()["answers"]
            assert sorted(a["bindings"]["x"] for a in answers) == ["p2", "p3"]
            # sending the same name again replaces what it contributed, as ingesting a file again does
            body = {"files": [{"name": "chain.tdb", "text": "p1 chain p9.\n"}]}
            assert call(client, "post", "/ingest", body, tokens["writer"]).status_code == 200
            answers = call(client, "post", "/query", {"query": "? p1 chain+ ?x"}, tokens["public"]).json()["answers"]
            assert [a["bindings"]["x"] for a in answers] == ["p9"]
    finally:
        service.close()


@pytest.mark.parametrize("files,message", [
    ([{"name": "bad.tdb", "text": "p1 chain.\n"}], "bad.tdb:1:"),
    ([{"name": "../up.tdb", "text": "a r b."}], "file name '../up.tdb'"),
    ([{"name": ".hidden.tdb", "text": "a r b."}], "file name '.hidden.tdb'"),
    ([{"name": "x.exe", "text": "a r b."}], "unsupported file type '.exe'"),
    ([{"name": "a.tdb", "text": "a r b."}, {"name": "a.tdb", "text": "c r d."}], "appears twice"),
    ([], "at least one file"),
])
def test_a_refused_ingest_changes_nothing(tmp_path, files, message):
    db, tokens = build(tmp_path)
    service = Service(db)
    try:
        with TestClient(create_app(service)) as client:
            before = call(client, "get", "/stats", token=tokens["writer"]).json()
            r = call(client, "post", "/ingest", {"files": files}, tokens["writer"])
            assert r.status_code == 400 and message in r.json()["error"]["message"], r.text
            assert call(client, "get", "/stats", token=tokens["writer"]).json() == before
    finally:
        service.close()
    spool = tmp_path / "kb.sqlite.uploads"
    assert not spool.exists() or sorted(p.name for p in spool.iterdir()) == []


def test_readers_see_the_old_state_or_the_new_never_a_mix(tmp_path):
    """Four readers query a chain while a writer replaces it, one version after another; each version
    has a different length, so an answer mixing two versions would have a length no version has."""
    import threading
    db, tokens = build(tmp_path)
    service = Service(db, poll_seconds=0.0)
    lengths, errors = [], []
    stop = threading.Event()
    answered = threading.Semaphore(0)   # one release per reader, after its first answer
    with TestClient(create_app(service)) as client:
        def chain(n: int) -> str:
            return "".join(f"c{i} link c{i + 1}.\n" for i in range(n))

        def read():
            first = True
            while not stop.is_set():
                r = call(client, "post", "/query", {"query": "? c0 link+ ?x"}, tokens["public"])
                if r.status_code != 200:
                    errors.append(r.text)
                else:
                    lengths.append(len(r.json()["answers"]))
                if first:
                    first = False
                    answered.release()

        readers = [threading.Thread(target=read) for _ in range(4)]
        for t in readers:
            t.start()
        try:
            # the writes start once every reader has been served: a snapshot that has served no
            # question has no prepared view to derive the next one from, and is read whole instead
            for _ in readers:
                assert answered.acquire(timeout=60), "a reader was never served"
            for n in (3, 7, 12, 20):
                r = call(client, "post", "/ingest", {"files": [{"name": "chain.tdb", "text": chain(n)}]}, tokens["writer"])
                assert r.status_code == 200, r.text
        finally:
            stop.set()
            for t in readers:
                t.join()
        final = call(client, "post", "/query", {"query": "? c0 link+ ?x"}, tokens["public"]).json()
    service.close()
    assert service.refreshes == {"incremental": 4, "full": 0}   # each new state derived from the last one
    assert errors == []
    assert set(lengths) <= {0, 3, 7, 12, 20} and len(lengths) > 8
    assert len(final["answers"]) == 20


def test_a_write_by_another_process_is_served_after_the_next_poll(tmp_path):
    import time
    from thinkingdb.api import KnowledgeBase
    from thinkingdb.serve import ANONYMOUS
    db, _ = build(tmp_path)
    service = Service(db, poll_seconds=0.0)
    try:
        body = {"query": "? q1 next ?x"}
        assert service.query(ANONYMOUS, dict(body))["answers"] == []
        src = tmp_path / "late.tdb"
        src.write_text("q1 next q2.\n", encoding="utf-8")
        with KnowledgeBase(db, create=False) as kb:   # another writer, as `thinkingdb ingest` would be
            kb.ingest([str(src)])
        deadline = time.monotonic() + 30
        while not service.query(ANONYMOUS, dict(body))["answers"]:
            assert time.monotonic() < deadline, "the new generation was never served"
            time.sleep(0.05)
        assert [a["bindings"]["x"] for a in service.query(ANONYMOUS, dict(body))["answers"]] == ["q2"]
        assert service.refreshes == {"incremental": 1, "full": 0}   # derived from the old snapshot, not read whole
    finally:
        service.close()


def test_warm_builds_the_views_of_every_active_key_before_the_first_request(tmp_path, monkeypatch):
    """``serve --warm PROFILE``: anonymous callers and the caller of each active key (the clerk and the
    auditor here; the revoked key's caller is the clerk's too) are built before serving, so a keyed
    caller's first question builds no graph of its own."""
    from thinkingdb.retrieval.lanes import Lanes
    from thinkingdb.serve import Principal
    from thinkingdb.store.access import Caller
    db, _ = build(tmp_path)
    svc = Service(db, warm=("kb-thinkingdb",))
    try:
        warmed = {caller for caller, _ in svc._hot}
        assert warmed == {Caller(), Caller(("claims:west",), "WEST"), Caller(("claims:west", "audit:gold"), "WEST")}
        built = []
        real = Lanes._graph_build
        monkeypatch.setattr(Lanes, "_graph_build", lambda self, view: built.append(view) or real(self, view))
        clerk = Principal("k", "clerk", Caller(("claims:west",), "WEST"))
        got = svc.query(clerk, {"query": "? basement_flooding covered_by ?x"})
        assert [a["bindings"]["x"] for a in got["answers"]] == ["rule_fld_31"]
        assert built == []
    finally:
        svc.close()
    cold = Service(db)      # without --warm the clerk's first question builds the clerk's graph
    try:
        built.clear()
        cold.query(clerk, {"query": "? basement_flooding covered_by ?x"})
        assert built
    finally:
        cold.close()


def test_a_server_cap_below_the_cli_default_is_the_default_and_more_is_refused(tmp_path, capsys):
    """``serve --timeout-ms`` (here the same path with the derived-fact cap, which is deterministic): a
    request that names no bound gets the server's cap, one asking for more is refused with a 400-class
    error naming the field, and the CLI refuses a bound that is not positive."""
    from dataclasses import replace

    from thinkingdb.api import DEFAULT_LIMITS
    from thinkingdb.errors import ValidationError
    from thinkingdb.serve import Principal
    from thinkingdb.store.access import Caller
    db, _ = build(tmp_path)
    chain = tmp_path / "chain.tdb"
    chain.write_text("c1 depends_on c2. c2 depends_on c3. c3 depends_on c4.\n", encoding="utf-8")
    assert cli(["--db", db, "-q", "ingest", str(chain)]) == 0
    anyone = Principal("k", "public", Caller())
    svc = Service(db, max_limits=replace(DEFAULT_LIMITS, max_derived=1))
    try:
        got = svc.query(anyone, {"query": "? c1 depends_on ?x"})      # c2 asserted; c3 and c4 derived
        assert got["truncated"] == "derived"
        with pytest.raises(ValidationError, match="max_derived.*at most 1"):
            svc.query(anyone, {"query": "? c1 depends_on ?x", "max_derived": 2})
    finally:
        svc.close()
    full = Service(db)
    try:
        got = full.query(anyone, {"query": "? c1 depends_on ?x"})
        assert sorted(a["bindings"]["x"] for a in got["answers"]) == ["c2", "c3", "c4"] and got["truncated"] is None
    finally:
        full.close()
    assert cli(["--db", db, "serve", "--timeout-ms", "0"]) == 2
    assert "--timeout-ms must be positive" in capsys.readouterr().err
