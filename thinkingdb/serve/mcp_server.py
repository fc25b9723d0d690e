"""An MCP server on standard input and output: ``search``, ``query``, ``why`` and ``stats`` as tools.

Built on the official ``mcp`` SDK's low-level :class:`mcp.server.lowlevel.Server`, so each tool's
``inputSchema`` is exactly the request schema of the HTTP API (:data:`thinkingdb.serve.schemas.SCHEMAS`)
and each result is the same JSON, as text and as ``structuredContent``. A tool error (bad arguments, a
query that does not parse, a wider caller than allowed) comes back as a tool result with ``isError``
and the message, so the agent can correct itself; nothing else ends the session.

The server acts as one caller for its whole life: the caller of an API key (``--key`` or
``$THINKINGDB_API_KEY``), or the tags and region given on the command line (none: public units
only). A tool call may look as a narrower caller, never a wider one, as over HTTP.

>>> sorted(t.name for t in tools())
['query', 'search', 'stats', 'why']
"""

from __future__ import annotations

import json
import os

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

from ..errors import ThinkingDBError, ValidationError
from ..store.access import Caller
from .schemas import SCHEMAS
from .service import Principal, Service

__all__ = ["build_server", "run", "tools", "DESCRIPTIONS"]

DESCRIPTIONS = {
    "search": "Retrieve the knowledge units that best answer free text, through a retrieval profile "
              "(kb-fast, kb-balanced, kb-thinkingdb); results carry per-lane ranks and scores and, for "
              "kb-thinkingdb, the proof that ties a unit to the question.",
    "query": "Answer a ThinkingDB query over asserted and derived facts, e.g. '? nginx depends_on+ ?x.' or "
             "'? ?tool relevant_for secure_execution.'; each answer has its bindings, score and proof.",
    "why": "The proof of one fact (asserted or derived by rules), e.g. 'AchillesIDE relevant_for "
           "secure_execution', with the sources and units of the asserted facts it rests on; proof is null "
           "when the fact does not follow.",
    "stats": "Counts of the facts, units, symbols, relations and rules this caller may see.",
}


def tools() -> list[types.Tool]:
    """The tools, with the HTTP API's request schemas as their input schemas."""
    return [types.Tool(name=name, description=text, input_schema=SCHEMAS[name]) for name, text in DESCRIPTIONS.items()]


def build_server(service: Service, principal: Principal) -> Server:
    """An MCP server whose tools call ``service`` as ``principal``."""
    listed = tools()

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        name, args = params.name, params.arguments or {}
        if name not in DESCRIPTIONS:
            return _failure(f"unknown tool {name!r}; the tools are {', '.join(DESCRIPTIONS)}")
        try:
            result = await anyio.to_thread.run_sync(lambda: getattr(service, name)(principal, args))
        except ThinkingDBError as exc:
            return _failure(f"{type(exc).__name__}: {exc}")
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(result, ensure_ascii=False))],
                                    structured_content=result)

    return Server("thinkingdb", version=_version(), instructions=DESCRIPTIONS["search"],
                  on_list_tools=list_tools, on_call_tool=call_tool)


def _failure(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def _version() -> str:
    from importlib import metadata
    try:
        return metadata.version("thinkingdb")
    except metadata.PackageNotFoundError:
        return "0"


def run(db: str, *, key: str | None = None, tags: tuple[str, ...] = (), region: str = "",
        default_rules: bool = True) -> None:
    """Serve ``db`` over standard input and output until the client closes it."""
    from mcp.server.stdio import stdio_server
    key = key or os.environ.get("THINKINGDB_API_KEY") or None
    if key and (tags or region):
        raise ValidationError("give either --key or --caller-tags/--region, not both")
    service = Service(db, default_rules=default_rules)
    try:
        principal = service.authenticate(key) if key else Principal("-", "local", Caller(tags=tags, region=region))
        server = build_server(service, principal)

        async def main() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(main)
    finally:
        service.close()
