"""The HTTP API and the explorer, as one Starlette application over a :class:`Service`.

=======  =====================  ===================================================================
method   path                   answer (the JSON of the CLI's ``--json`` output where there is one)
=======  =====================  ===================================================================
POST     ``/search``            ``thinkingdb search --json``
POST     ``/query``             ``thinkingdb query --json``
POST     ``/why``               ``thinkingdb why --json``
POST     ``/provenance``        the visible sources of each of ``facts`` (leaves of a proof)
POST     ``/ingest``            ``thinkingdb ingest --json`` plus ``generation`` (writer keys only)
GET      ``/stats``             ``thinkingdb stats --json``, counted over what the caller may see
GET      ``/units/{id}``        a visible unit and the facts it asserts
GET      ``/symbols/{key}``     the visible facts around a symbol, with their units
GET      ``/whoami``            the key's name, tags, region and writer flag
GET      ``/health``            ``{"status": "ok", "generation": N}`` (no key needed)
GET      ``/explorer/``         the browser explorer (static files; it asks for a key)
=======  =====================  ===================================================================

Every path but ``/health`` and the explorer's files needs ``Authorization: Bearer <key>`` (or
``X-API-Key``): no key or a bad one is 401. Errors are ``{"error": {"type": ..., "message": ...}}``:
400 bad input (bad JSON, unknown field, parse error), 401, 403 (not a writer; a wider caller than the
key's), 404 (also for hidden units: existence is not revealed), 405, 413 (body over ``max_body``), 503
(store unavailable), 500 only for a bug, with no traceback in the answer. GET endpoints take
``as_of``, ``tags`` (comma-separated) and ``region`` as query parameters to look as a narrower caller.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..errors import StoreError, ThinkingDBError
from .service import Forbidden, NotFound, Service, Unauthorized

__all__ = ["create_app", "MAX_BODY", "STATIC"]

MAX_BODY = 16 * 2**20          # bytes of one request body
STATIC = Path(__file__).resolve().parent / "static"
log = logging.getLogger("thinkingdb.serve")


class _BadRequest(ThinkingDBError, ValueError):
    pass


class _TooLarge(ThinkingDBError, ValueError):
    pass


_STATUS = [(Unauthorized, 401), (Forbidden, 403), (NotFound, 404), (_TooLarge, 413), (StoreError, 503),
           (ThinkingDBError, 400)]


def _error(status: int, kind: str, message: str) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error": {"type": kind, "message": message}}, status_code=status, headers=headers)


def _from_exception(exc: BaseException) -> JSONResponse:
    for cls, status in _STATUS:
        if isinstance(exc, cls):
            kind = "BadRequest" if isinstance(exc, _BadRequest) else type(exc).__name__
            return _error(status, kind, str(exc))
    log.exception("internal error", exc_info=exc)
    return _error(500, "InternalError", "internal error; the server log has the details")


def create_app(service: Service, *, max_body: int = MAX_BODY, threads: int = 8) -> Starlette:
    """The ASGI application; readers run in a pool of ``threads`` worker threads.

    >>> import tempfile, os
    >>> from thinkingdb.api import open_kb
    >>> d = tempfile.mkdtemp(); db = os.path.join(d, "kb.sqlite")
    >>> _ = open(os.path.join(d, "a.tdb"), "w").write("a r b.")
    >>> with open_kb(db) as kb: _ = kb.ingest([os.path.join(d, "a.tdb")])
    >>> from starlette.testclient import TestClient
    >>> svc = Service(db)
    >>> with TestClient(create_app(svc)) as client:
    ...     client.get("/health").json()["status"], client.post("/search", json={"text": "a"}).status_code
    ('ok', 401)
    >>> svc.close()
    """
    limiter = anyio.CapacityLimiter(threads)

    def principal(request: Request):
        auth = request.headers.get("authorization", "")
        token = auth[7:].strip() if auth[:7].lower() == "bearer " else request.headers.get("x-api-key")
        return service.authenticate(token)

    async def body_of(request: Request) -> object:
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > max_body:
            raise _TooLarge(f"request body of {int(length):,} bytes is over the limit of {max_body:,}")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_body:
                raise _TooLarge(f"request body is over the limit of {max_body:,} bytes")
            chunks.append(chunk)
        raw = b"".join(chunks)
        if not raw.strip():
            raise _BadRequest("the request body is empty; send a JSON object")
        try:
            return json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise _BadRequest(f"the request body is not UTF-8 (byte {exc.start})") from None
        except json.JSONDecodeError as exc:
            raise _BadRequest(f"the request body is not valid JSON: {exc.msg} at line {exc.lineno} "
                              f"column {exc.colno}") from None

    def query_body(request: Request) -> dict:
        params = request.query_params
        unknown = sorted(set(params) - {"as_of", "tags", "region"})
        if unknown:
            raise _BadRequest(f"unknown query parameter {unknown[0]!r} (expected as_of, tags, region)")
        body: dict = {}
        if "as_of" in params:
            body["as_of"] = params["as_of"]
        if "tags" in params or "region" in params:
            body["caller"] = {"tags": [t for t in params.get("tags", "").split(",") if t.strip()],
                              "region": params.get("region", "")}
        return body

    def post(operation: str):
        async def endpoint(request: Request) -> Response:
            try:
                who = principal(request)
                body = await body_of(request)
                result = await anyio.to_thread.run_sync(getattr(service, operation), who, body, limiter=limiter)
                return JSONResponse(result)
            except Exception as exc:  # noqa: BLE001 - every error becomes one JSON answer
                return _from_exception(exc)
        return endpoint

    def get(operation: str, param: str | None = None):
        async def endpoint(request: Request) -> Response:
            try:
                who = principal(request)
                args = (request.path_params[param],) if param else ()
                body = query_body(request)
                result = await anyio.to_thread.run_sync(lambda: getattr(service, operation)(who, *args, body),
                                                        limiter=limiter)
                return JSONResponse(result)
            except Exception as exc:  # noqa: BLE001
                return _from_exception(exc)
        return endpoint

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "generation": service.generation})

    async def root(request: Request) -> Response:
        return RedirectResponse("/explorer/")

    async def http_error(request: Request, exc: HTTPException) -> Response:
        kind = {404: "NotFound", 405: "MethodNotAllowed"}.get(exc.status_code, "HTTPError")
        return _error(exc.status_code, kind, str(exc.detail))

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/stats", get("stats"), methods=["GET"]),
        Route("/whoami", get("whoami"), methods=["GET"]),
        Route("/units/{unit_id:path}", get("unit", "unit_id"), methods=["GET"]),
        Route("/symbols/{key:path}", get("symbol", "key"), methods=["GET"]),
        *[Route(f"/{op}", post(op), methods=["POST"]) for op in ("search", "query", "why", "provenance", "ingest")],
        Route("/", root, methods=["GET"]),
        Mount("/explorer", StaticFiles(directory=STATIC, html=True), name="explorer"),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: http_error})
