"""The request bodies of the server's operations, as JSON schemas, and the one checker for them.

The same schemas are the HTTP API's contract and the MCP tools' ``inputSchema``. :func:`check` reads
the small subset of JSON Schema used here (``type``, ``properties``, ``required``,
``additionalProperties: false``, ``items``, ``enum``, ``minimum``, ``maximum``, ``maxLength``,
``maxItems``) and raises :class:`~thinkingdb.errors.ValidationError` naming the field, so a bad request
is one clear message, never a traceback.

>>> check("why", {"fact": "nginx depends_on openssl", "alternatives": 2})["alternatives"]
2
>>> check("why", {"fact": "a r b", "alternatives": "2"})
Traceback (most recent call last):
...
thinkingdb.errors.ValidationError: field 'alternatives': expected an integer, got a string
>>> check("search", {"txt": "x"})
Traceback (most recent call last):
...
thinkingdb.errors.ValidationError: unknown field 'txt' (expected one of: align, as_of, budget_tokens, caller, decompose, diversity_bias, features, labels, profile, text)
"""

from __future__ import annotations

from typing import Any

from ..errors import ValidationError
from ..retrieval.profiles import profile_names

__all__ = ["SCHEMAS", "check", "MAX_TEXT", "MAX_FACTS"]

MAX_TEXT = 10_000          # characters of a search text, query or fact
MAX_FACTS = 1_000          # facts per provenance request

_DATE = {"type": "string", "maxLength": 10, "description": "validity date YYYY-MM-DD (default today)"}
_CALLER = {
    "type": "object", "additionalProperties": False,
    "description": "look as a narrower caller than the API key's: tags a subset of the key's tags, region "
                   "the key's region or none",
    "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 200}, "maxItems": 100},
                   "region": {"type": "string", "maxLength": 200}},
}
_BOUNDS = {
    "max_depth": {"type": "integer", "minimum": 0, "description": "longest derivation chain"},
    "max_nodes": {"type": "integer", "minimum": 1, "description": "distinct symbols the closure may touch"},
    "max_derived": {"type": "integer", "minimum": 0, "description": "derived facts kept"},
    "timeout_ms": {"type": "number", "minimum": 1, "description": "time budget in ms"},
    "max_rows": {"type": "integer", "minimum": 1, "description": "rows a query's join may hold at each pattern"},
}
_LABELS = {"type": "boolean", "description": "add a 'labels' map of the symbols in the answer"}

SCHEMAS: dict[str, dict] = {
    "search": {
        "type": "object", "additionalProperties": False, "required": ["text"],
        "properties": {
            "text": {"type": "string", "maxLength": MAX_TEXT, "description": "free text to search for"},
            "profile": {"type": "string", "enum": profile_names(), "description": "retrieval profile"},
            "caller": _CALLER, "as_of": _DATE,
            "decompose": {"type": "boolean", "description": "split a long query into sub-queries"},
            "align": {"type": "boolean", "description": "order results by their alignment index (RSI)"},
            "features": {"type": "object", "description": "alignment evidence per unit id"},
            "budget_tokens": {"type": "integer", "minimum": 1, "description": "keep the results that fit"},
            "diversity_bias": {"type": "number", "minimum": 0, "maximum": 1},
            "labels": _LABELS,
        },
    },
    "query": {
        "type": "object", "additionalProperties": False, "required": ["query"],
        "properties": {
            "query": {"type": "string", "maxLength": MAX_TEXT,
                      "description": "a ThinkingDB query, e.g. '? nginx depends_on+ ?x.'"},
            "aggregate": {"type": "string", "enum": ["best", "noisy-or"]},
            "k": {"type": "integer", "minimum": 1, "maximum": 100, "description": "proofs combined by noisy-or"},
            "limit": {"type": "integer", "minimum": 1, "description": "at most this many answers"},
            "caller": _CALLER, "as_of": _DATE, "labels": _LABELS, **_BOUNDS,
        },
    },
    "why": {
        "type": "object", "additionalProperties": False, "required": ["fact"],
        "properties": {
            "fact": {"type": "string", "maxLength": MAX_TEXT, "description": "a fact, e.g. 'nginx depends_on libc'"},
            "alternatives": {"type": "integer", "minimum": 0, "maximum": 20, "description": "other proofs kept"},
            "caller": _CALLER, "as_of": _DATE, "labels": _LABELS, **_BOUNDS,
        },
    },
    "provenance": {
        "type": "object", "additionalProperties": False, "required": ["facts"],
        "properties": {
            "facts": {"type": "array", "maxItems": MAX_FACTS, "items": {"type": "string", "maxLength": MAX_TEXT}},
            "caller": _CALLER, "as_of": _DATE,
        },
    },
    "stats": {"type": "object", "additionalProperties": False,
              "properties": {"caller": _CALLER, "as_of": _DATE}},
    "ingest": {
        "type": "object", "additionalProperties": False, "required": ["files"],
        "properties": {
            "files": {"type": "array", "maxItems": 100, "items": {
                "type": "object", "additionalProperties": False, "required": ["name", "text"],
                "properties": {"name": {"type": "string", "maxLength": 128,
                                        "description": "file name; its extension picks the reader"},
                               "text": {"type": "string"}}}},
            "skip_invalid": {"type": "boolean"},
        },
    },
}

_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,), "object": (dict,),
          "array": (list,)}
_NAMES = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
          "object": "an object", "array": "an array"}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    for name in ("boolean", "integer", "number", "string", "array", "object"):
        if isinstance(value, _TYPES[name]) and not (name in ("integer", "number") and isinstance(value, bool)):
            return _NAMES[name]
    return type(value).__name__


def _check(schema: dict, value: Any, where: str) -> None:
    want = schema.get("type")
    if want is not None:
        ok = isinstance(value, _TYPES[want]) and not (want in ("integer", "number") and isinstance(value, bool))
        if want == "number" and ok and value != value:  # nan
            ok = False
        if not ok:
            raise ValidationError(f"{where}: expected {_NAMES[want]}, got {_kind(value)}")
    if "enum" in schema and value not in schema["enum"]:
        raise ValidationError(f"{where}: {value!r} is not one of {', '.join(map(str, schema['enum']))}")
    if "minimum" in schema and value < schema["minimum"]:
        raise ValidationError(f"{where}: must be at least {schema['minimum']}, got {value}")
    if "maximum" in schema and value > schema["maximum"]:
        raise ValidationError(f"{where}: must be at most {schema['maximum']}, got {value}")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        raise ValidationError(f"{where}: longer than its limit of {schema['maxLength']:,} characters")
    if want == "array":
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise ValidationError(f"{where}: more than its limit of {schema['maxItems']:,} items")
        for i, item in enumerate(value):
            _check(schema.get("items", {}), item, f"{where}[{i}]")
    if want == "object" and "properties" in schema:
        props = schema["properties"]
        if schema.get("additionalProperties") is False:
            unknown = sorted(set(value) - set(props))
            if unknown:
                prefix = "" if where == "body" else f"{where}: "
                raise ValidationError(f"{prefix}unknown field {unknown[0]!r} (expected one of: "
                                      f"{', '.join(sorted(props))})")
        for name in schema.get("required", ()):
            if name not in value:
                raise ValidationError(f"{'' if where == 'body' else where + ': '}missing field {name!r}")
        for name, sub in props.items():
            if name in value:
                _check(sub, value[name], f"field {name!r}" if where == "body" else f"{where}.{name}")


def check(operation: str, body: Any) -> dict:
    """``body`` checked against the schema of ``operation``; returns it (an object) unchanged."""
    if not isinstance(body, dict):
        raise ValidationError(f"the request body must be a JSON object, got {_kind(body)}")
    _check(SCHEMAS[operation], body, "body")
    return body
