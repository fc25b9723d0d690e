"""The ``serve``, ``mcp`` and ``keys`` commands (registered by :mod:`thinkingdb.cli.main`).

``keys`` needs nothing beyond the core install; ``serve`` and ``mcp`` need the ``serve`` extra and say
so in one line when it is missing. Binding ``serve`` to an address other than loopback needs
``--allow-remote``: the API answers anyone who can reach it and holds a key.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import ThinkingDBError, ValidationError
from .commands import add_command

__all__ = ["register", "is_loopback"]


class MissingExtra(ThinkingDBError, ImportError):
    """The ``serve`` extra is not installed."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` only reaches this machine.

    >>> [is_loopback(h) for h in ("127.0.0.1", "::1", "localhost", "0.0.0.0", "10.0.0.5", "example.org")]
    [True, True, True, False, False, False]
    """
    if host == "localhost":
        return True
    try:
        import ipaddress   # only when serve checks its host
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _need_extra() -> None:
    try:
        import mcp  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise MissingExtra(f"{exc.name} is not installed; install the serve extra: "
                           "pip install 'thinkingdb[serve]'") from None


def _print(args, payload, text: str) -> None:
    if args.json:
        sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")
    elif not args.quiet:
        sys.stdout.write(text.rstrip("\n") + "\n")


def cmd_keys(args) -> int:
    from ..store.keys import add_key, list_keys, revoke_key
    from ..store.sqlite import Store
    with Store(args.db, create=False) as store:
        if args.action == "add":
            info, token = add_key(store, args.name, tags=args.tags or (), region=args.region or "", writer=args.writer)
            payload = {**info.to_json(), "key": token}
            if args.json:
                sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")
            else:  # the key itself goes to stdout even with --quiet: it is shown only this once
                sys.stdout.write(token + "\n")
                if not args.quiet:
                    sys.stderr.write(f"key {info.id} ({info.name}): tags {', '.join(info.tags) or '(none)'}, region "
                                     f"{info.region or '(none)'}{', writer' if info.writer else ''}; "
                                     "store it now, it is not shown again\n")
        elif args.action == "list":
            keys = list_keys(store)
            lines = [f"{k.id}  {k.name:<16} tags={','.join(k.tags) or '-'} region={k.region or '-'}"
                     f"{' writer' if k.writer else ''}  created {k.created_at}"
                     + (f"  REVOKED {k.revoked_at}" if k.revoked_at else "") for k in keys]
            _print(args, {"keys": [k.to_json() for k in keys]}, "\n".join(lines) or "no keys")
        else:
            info = revoke_key(store, args.key)
            _print(args, info.to_json(), f"revoked key {info.id} ({info.name})")
    return 0


def cmd_serve(args) -> int:
    if not is_loopback(args.host) and not args.allow_remote:
        raise ValidationError(f"--host {args.host} is not a loopback address; anyone who can reach it could call "
                              "the API: add --allow-remote to bind it anyway")
    if args.threads < 1 or args.max_body_mb <= 0:
        raise ValidationError("--threads and --max-body-mb must be positive")
    _need_extra()
    import uvicorn
    from ..serve import Service
    from ..serve.app import create_app
    if args.timeout_ms is not None and args.timeout_ms < 1:
        raise ValidationError("--timeout-ms must be positive")
    from dataclasses import replace
    from ..api import DEFAULT_LIMITS
    caps = DEFAULT_LIMITS if args.timeout_ms is None else replace(DEFAULT_LIMITS, timeout_ms=args.timeout_ms)
    service = Service(args.db, default_rules=not args.no_default_rules, warm=tuple(args.warm or ()), max_limits=caps)
    try:
        app = create_app(service, max_body=int(args.max_body_mb * 2**20), threads=args.threads)
        if not args.quiet:
            sys.stderr.write(f"thinkingdb: serving {args.db} (generation {service.generation}) on "
                             f"http://{args.host}:{args.port}/ — explorer at /explorer/\n")
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning" if args.quiet else "info",
                    access_log=not args.quiet)
    finally:
        service.close()
    return 0


def cmd_mcp(args) -> int:
    _need_extra()
    from ..serve.mcp_server import run
    run(args.db, key=args.key, tags=tuple(args.caller_tags or ()), region=args.region or "",
        default_rules=not args.no_default_rules)
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser | None = None) -> None:
    """Add ``serve``, ``mcp`` and ``keys`` to the subparsers of the main parser."""
    parents = [common] if common is not None else []

    p = add_command(sub, parents, "serve", "serve the knowledge base: JSON HTTP API and browser explorer",
                    "thinkingdb --db kb.sqlite serve --port 8080   (then: thinkingdb --db kb.sqlite keys add me)",
                    cmd_serve)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    p.add_argument("--allow-remote", action="store_true", help="allow a --host that is not loopback")
    p.add_argument("--threads", type=int, default=8, help="requests run at once (default 8)")
    p.add_argument("--max-body-mb", type=float, default=16, help="largest request body in MiB (default 16)")
    p.add_argument("--warm", nargs="*", metavar="PROFILE",
                   help="build what these profiles need before serving, for anonymous callers and the caller of "
                        "every active API key (a caller's first request otherwise pays for it)")
    p.add_argument("--timeout-ms", type=int, metavar="MS",
                   help="the most time one query or why may reason (default 30000, the CLI's); a request may ask "
                        "for less, asking for more is refused, and an answer cut by it says truncated: time")
    p.add_argument("--no-default-rules", action="store_true", help="do not apply the shipped rule library")

    p = add_command(sub, parents, "mcp", "serve search, query, why and stats as MCP tools on standard input/output",
                    "thinkingdb --db kb.sqlite mcp --caller-tags support:eu --region EU", cmd_mcp)
    p.add_argument("--key", metavar="KEY", help="act as the caller of this API key (or $THINKINGDB_API_KEY)")
    p.add_argument("--caller-tags", nargs="*", metavar="TAG", help="the caller's acl tags (without --key)")
    p.add_argument("--region", metavar="R", help="the caller's region (without --key)")
    p.add_argument("--no-default-rules", action="store_true", help="do not apply the shipped rule library")

    p = add_command(sub, parents, "keys", "make, list and revoke the API keys of `serve` (stored hashed)",
                    "thinkingdb --db kb.sqlite keys add luna --tags support:eu --region EU", cmd_keys)
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=sub._parser_class)
    a = actions.add_parser("add", help="make a key; prints it once", parents=parents)
    a.add_argument("name", help="who the key is for")
    a.add_argument("--tags", nargs="*", metavar="TAG", help="the caller's acl tags")
    a.add_argument("--region", metavar="R", help="the caller's region")
    a.add_argument("--writer", action="store_true", help="may POST /ingest")
    actions.add_parser("list", help="every key, active and revoked (never the secrets)", parents=parents)
    r = actions.add_parser("revoke", help="revoke a key by id or name", parents=parents)
    r.add_argument("key", metavar="ID|NAME")
