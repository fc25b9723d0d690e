"""API keys of the server, kept hashed in the store: each maps to a caller (acl tags, region) and a
writer flag.

A key reads ``tdb_<id>_<secret>``: ``id`` (8 hex digits) names the key in listings and logs, ``secret``
is 32 random bytes (URL-safe base64) shown once, when the key is made. The store keeps the SHA-256 of
the secret, never the secret; a random 256-bit secret needs no slow hash (nothing to guess), and the
comparison is constant-time. Revoking keeps the row (with ``revoked_at``) so listings show the history.

Keys live in their own table, ``api_keys``, written outside :meth:`Store.transaction`: a key change is
not knowledge, so it does not bump the store generation and no cached graph or index goes stale.

>>> import tempfile, os
>>> from thinkingdb.store.sqlite import Store
>>> with Store(os.path.join(tempfile.mkdtemp(), "kb.sqlite")) as st:
...     info, token = add_key(st, "luna", tags=["support:eu"], region="EU")
...     verify_key(st, token) == info, verify_key(st, token + "x"), info.tags, info.region
...     _ = revoke_key(st, info.id)
...     verify_key(st, token)
(True, None, ('support:eu',), 'eu')
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import json
import re
import secrets
import sqlite3
from dataclasses import dataclass
from typing import Sequence

from ..errors import StoreError, ValidationError
from .access import Caller

__all__ = ["ApiKey", "add_key", "list_keys", "revoke_key", "verify_key", "KEY_PATTERN"]

KEY_PATTERN = re.compile(r"tdb_([0-9a-f]{8})_([A-Za-z0-9_-]{20,100})")
_TABLE = ("CREATE TABLE IF NOT EXISTS api_keys (id TEXT PRIMARY KEY, name TEXT NOT NULL, secret_sha256 TEXT NOT NULL, "
          "tags TEXT NOT NULL, region TEXT NOT NULL, writer INTEGER NOT NULL, created_at TEXT NOT NULL, "
          "revoked_at TEXT)")
_COLUMNS = "id, name, secret_sha256, tags, region, writer, created_at, revoked_at"


@dataclass(frozen=True)
class ApiKey:
    """One key as listed: never its secret."""

    id: str
    name: str
    tags: tuple[str, ...]
    region: str
    writer: bool
    created_at: str
    revoked_at: str | None = None

    @property
    def caller(self) -> Caller:
        """The caller this key searches as."""
        return Caller(tags=self.tags, region=self.region)

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def to_json(self) -> dict:
        return {"id": self.id, "name": self.name, "tags": list(self.tags), "region": self.region,
                "writer": self.writer, "created_at": self.created_at, "revoked_at": self.revoked_at}


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def _row(row) -> tuple[ApiKey, str]:
    kid, name, digest, tags, region, writer, created, revoked = row
    return ApiKey(kid, name, tuple(json.loads(tags)), region, bool(writer), created, revoked), digest


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _write(store, sql: str, params: Sequence) -> int:
    conn = store.conn
    with store._txn:   # (no other thread of this handle reads or writes meanwhile: sqlite._Reading)
        store.check_before_write()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreError(f"{store.path}: cannot write: {exc}") from None
        try:
            conn.execute(_TABLE)
            n = conn.execute(sql, params).rowcount
            conn.execute("COMMIT")
            return n
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


def _rows(store, where: str = "", params: Sequence = ()) -> list[tuple[ApiKey, str]]:
    try:
        return [_row(r) for r in store.conn.execute(f"SELECT {_COLUMNS} FROM api_keys {where}", params)]
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise StoreError(f"{store.path}: cannot read keys: {exc}") from None


def add_key(store, name: str, *, tags: Sequence[str] = (), region: str = "", writer: bool = False) -> tuple[ApiKey, str]:
    """Make a key; returns its record and the key text (shown once: only its hash is stored)."""
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise ValidationError("a key needs a name of 1 to 200 characters")
    caller = Caller(tags=tuple(tags), region=region or "")
    kid, secret = secrets.token_hex(4), secrets.token_urlsafe(32)
    info = ApiKey(kid, name.strip(), caller.tags, caller.region, bool(writer), _now())
    _write(store, "INSERT INTO api_keys VALUES (?, ?, ?, ?, ?, ?, ?, NULL)",
           (kid, info.name, _digest(secret), json.dumps(list(info.tags)), info.region, int(info.writer),
            info.created_at))
    return info, f"tdb_{kid}_{secret}"


def list_keys(store) -> list[ApiKey]:
    """Every key ever made, active and revoked, oldest first."""
    return [k for k, _ in _rows(store, "ORDER BY created_at, id")]


def revoke_key(store, key: str) -> ApiKey:
    """Revoke a key by id or by name (a name must be unique among active keys)."""
    found = [k for k in list_keys(store) if k.active and key in (k.id, k.name)]
    if not found:
        raise ValidationError(f"no active key with id or name {key!r}")
    if len(found) > 1:
        raise ValidationError(f"{len(found)} active keys are named {key!r}; revoke one by id: "
                              + ", ".join(k.id for k in found))
    when = _now()
    _write(store, "UPDATE api_keys SET revoked_at = ? WHERE id = ?", (when, found[0].id))
    k = found[0]
    return ApiKey(k.id, k.name, k.tags, k.region, k.writer, k.created_at, when)


def verify_key(store, token: str | None) -> ApiKey | None:
    """The active key ``token`` is, or None (malformed, unknown, wrong secret or revoked)."""
    m = KEY_PATTERN.fullmatch(token or "")
    if m is None:
        return None
    rows = _rows(store, "WHERE id = ?", (m.group(1),))
    if not rows:
        return None
    info, digest = rows[0]
    if not hmac.compare_digest(digest, _digest(m.group(2))) or not info.active:
        return None
    return info
