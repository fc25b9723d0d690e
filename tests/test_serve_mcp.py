"""``thinkingdb mcp``: a real MCP client (the official SDK) starts the server over stdio, lists the tools
with their schemas, and calls each; answers equal the HTTP API's, and the caller's access rules hold."""

from __future__ import annotations

import json
import sys

import pytest

pytest.importorskip("mcp", reason="the serve extra is not installed (pip install -e '.[serve]')")

import anyio  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from thinkingdb.serve import Service  # noqa: E402
from thinkingdb.serve.schemas import SCHEMAS  # noqa: E402

from serve_kb import AS_OF, SECRETS, build  # noqa: E402

LAUNCH = "import sys; from thinkingdb.cli.main import main; sys.exit(main())"


def session_calls(db: str, args: list[str], calls: list[tuple[str, dict]], env: dict | None = None):
    """Start ``thinkingdb mcp``, list its tools, make ``calls``; returns (tools, results)."""
    params = StdioServerParameters(command=sys.executable, args=["-c", LAUNCH, "--db", db, "mcp", *args], env=env)

    async def go():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                listed = (await session.list_tools()).tools
                results = [await session.call_tool(name, body) for name, body in calls]
                return listed, results

    return anyio.run(go)


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    return build(tmp_path_factory.mktemp("mcp"))


def test_the_tools_and_their_schemas(kb):
    db, _ = kb
    listed, _ = session_calls(db, [], [])
    assert {t.name: t.input_schema for t in listed} == {name: SCHEMAS[name] for name in ("search", "query", "why", "stats")}
    assert all(t.description for t in listed)


def test_each_tool_answers_as_the_api_does_for_the_same_caller(kb):
    db, tokens = kb
    calls = [("query", {"query": "? achilleside relevant_for ?goal", "as_of": AS_OF}),
             ("why", {"fact": "AchillesIDE relevant_for secure_execution", "as_of": AS_OF}),
             ("stats", {"as_of": AS_OF}),
             ("search", {"text": "gold tier override", "profile": "kb-fast", "as_of": AS_OF})]
    _, results = session_calls(db, ["--caller-tags", "claims:west", "audit:gold", "--region", "WEST"], calls)
    service = Service(db)
    try:
        who = service.authenticate(tokens["auditor"])
        for (name, body), res in zip(calls, results):
            assert not res.is_error, res.content
            want = getattr(service, name)(who, dict(body))
            got = json.loads(res.content[0].text)
            if name == "search":  # timings differ between runs
                got["trace"].pop("timings_ms"), want["trace"].pop("timings_ms")
            assert got == want and res.structured_content == json.loads(res.content[0].text), name
    finally:
        service.close()
    assert json.loads(results[1].content[0].text)["proof"] is not None
    assert json.loads(results[3].content[0].text)["results"][0]["unit_id"] == "gold-override"


def test_the_mcp_caller_sees_only_what_its_key_may(kb):
    db, tokens = kb
    calls = [("query", {"query": "? ?s exempt_from ?o", "as_of": AS_OF}),
             ("why", {"fact": "AchillesIDE relevant_for secure_execution", "as_of": AS_OF}),
             ("search", {"text": "gold tier override", "profile": "kb-thinkingdb", "as_of": AS_OF}),
             ("search", {"text": "x", "caller": {"tags": ["audit:gold"]}})]
    _, results = session_calls(db, [], calls, env={"THINKINGDB_API_KEY": tokens["clerk"]})
    text = "\n".join(r.content[0].text for r in results[:3]).casefold()
    for secret in SECRETS:
        assert secret.casefold() not in text, secret
    assert json.loads(results[1].content[0].text) == {"proof": None}
    assert results[3].is_error and "Forbidden" in results[3].content[0].text


def test_bad_arguments_are_tool_errors_with_a_message(kb):
    db, _ = kb
    calls = [("query", {"query": "? a r ("}), ("why", {}), ("search", {"text": 3}), ("stats", {"colour": 1}),
             ("drop", {})]
    _, results = session_calls(db, [], calls)
    messages = [r.content[0].text for r in results]
    assert all(r.is_error for r in results)
    assert messages[0].startswith("ParseError: ") and "missing field 'fact'" in messages[1]
    assert "field 'text': expected a string" in messages[2] and "unknown field 'colour'" in messages[3]
    assert "unknown tool 'drop'" in messages[4]


def test_a_bad_key_stops_the_server_with_a_message(kb, tmp_path):
    import subprocess
    db, _ = kb
    proc = subprocess.run([sys.executable, "-c", LAUNCH, "--db", db, "mcp", "--key", "tdb_00000000_" + "a" * 43],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "a valid API key is required" in proc.stderr
