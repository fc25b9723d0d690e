"""A cheap pre-scan of nested brackets in Turtle, TriG and JSON-LD files, before the parser sees them.

pyoxigraph's Turtle parser takes time quadratic in the nesting of collections and blank-node property
lists: a 10 MB file of ``(`` took 417 s and 3.7 GB (1M: 4.7 s / 0.6 GB, 2M: 22 s / 1.1 GB). Real data
nests a few levels, so a file nesting deeper than :data:`MAX_NESTING` is refused with the line and
column where it goes past the limit, before it is parsed.

The scan reads the file in blocks of :data:`BLOCK` bytes; brackets inside string literals, IRIs and
comments (found by one regular expression per block) do not count. A literal or IRI split by a block
boundary is scanned as if it ended there (at worst a few brackets of one literal are counted).
"""

from __future__ import annotations

import re

import numpy as np

MAX_NESTING = 1000
"""Deepest nesting of ``(``/``[`` (Turtle, TriG) or ``[``/``{`` (JSON-LD) read; deeper is refused."""
BLOCK = 1 << 23

_TURTLE_SKIP = re.compile(rb'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\r\n]|\\.)*"|\'(?:[^\'\\\r\n]|\\.)*\''
                          rb"|<[^<>\"{}|^`\\\x00-\x20]*>|#[^\r\n]*")
_JSON_SKIP = re.compile(rb'"(?:[^"\\]|\\.)*"')
_KINDS = {"TURTLE": (b"([", b")]", _TURTLE_SKIP), "TRIG": (b"([", b")]", _TURTLE_SKIP),
          "JSON_LD": (b"[{", b"]}", _JSON_SKIP)}


def too_deep(path: str, fmt: str, limit: int = MAX_NESTING) -> tuple[int, int] | None:
    """``(line, column)`` where the file at ``path`` first nests deeper than ``limit``, or None (also
    for formats without nesting).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x.ttl")
    >>> _ = open(p, "w").write('<a> <b> ("(((" (1)) .\\n<a> <b> ((((2)))) .\\n')
    >>> too_deep(p, "TURTLE", 3), too_deep(p, "TURTLE", 4)
    ((2, 12), None)
    """
    kind = _KINDS.get(fmt)
    if kind is None:
        return None
    opens, closes, skip = kind
    step = np.zeros(256, dtype=np.int8)
    step[list(opens)] = 1
    step[list(closes)] = -1
    depth, line, col0 = 0, 1, 0   # col0: bytes of the current line before this block
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(BLOCK), b""):
            if depth + block.count(opens[:1]) + block.count(opens[1:]) > limit:   # else it cannot go past
                delta = step[np.frombuffer(block, dtype=np.uint8)].astype(np.int32)
                for m in skip.finditer(block):
                    delta[m.start():m.end()] = 0
                run = np.cumsum(delta, dtype=np.int32) + depth
                over = np.flatnonzero(run > limit)
                if len(over):
                    at = int(over[0])
                    nl = block.rfind(b"\n", 0, at)
                    return line + block.count(b"\n", 0, at), (at - nl if nl >= 0 else col0 + at + 1)
                depth = int(run[-1])
            else:
                depth += block.count(opens[:1]) + block.count(opens[1:]) - block.count(closes[:1]) - \
                    block.count(closes[1:])   # an upper bound: brackets in literals count here
                depth = max(depth, 0)
            line += block.count(b"\n")
            nl = block.rfind(b"\n")
            col0 = len(block) - nl - 1 if nl >= 0 else col0 + len(block)
    return None
