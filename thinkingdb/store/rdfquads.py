"""pyoxigraph's statements of an RDF file, each with its line, for :func:`thinkingdb.store.rdf.read_rdf`.

N-Triples and N-Quads are read in blocks of whole lines (:func:`line_quads`): a bad line becomes a
reject with its line and column and reading goes on with the next line, and a block handler (the
fast path of :mod:`thinkingdb.store.ntlines`) may take the plain lines first. Turtle, TriG and
JSON-LD go through the parser whole (:func:`stream_quads`): the first syntax error ends the file.
"""

from __future__ import annotations

import re
from typing import Iterator

from .records import _reject as reject

__all__ = ["line_quads", "stream_quads"]


_IRREGULAR = re.compile(rb"(?m)^[ \t]*(?:#|\r?$)")  # a comment or blank line: line numbers need a map


def _statement_lines(data: bytes) -> list[int] | None:
    """1-based numbers of the lines holding a statement, or None when every line does."""
    if not _IRREGULAR.search(data):
        return None
    return [i for i, ln in enumerate(data.split(b"\n"), 1) if ln.strip() and not ln.lstrip().startswith(b"#")]


def _blocks(fh) -> Iterator[bytes]:
    """Whole lines, about 1 MiB at a time."""
    rest = b""
    while True:
        data = fh.read(1 << 20)
        if not data:
            if rest:
                yield rest
            return
        data = rest + data
        cut = data.rfind(b"\n") + 1
        rest = data[cut:]
        if cut:
            yield data[:cut]


def line_quads(ox, fmt, fh, source: str, simple=None) -> Iterator[tuple[object, int, object, int]]:
    """``(quad, line, None, bytes)`` per statement of an N-Triples/N-Quads stream, or
    ``(None, line, reject, bytes)`` for a bad line; reading goes on with the next line.

    ``simple(block, first line)``, when given, takes a block of whole lines and returns ``(line number,
    text)`` of the lines it did not handle (None: it handled none, the block is not UTF-8); after each
    such block ``(None, 0, None, bytes)`` marks the progress."""
    line_no = 0
    for block in _blocks(fh):
        data, base, size = block, line_no, len(block)
        line_no += block.count(b"\n") + (not block.endswith(b"\n"))
        if simple is not None:
            slow = simple(block, base + 1)
            if slow is not None:
                yield None, 0, None, size
                if slow:
                    yield from _mapped_quads(ox, fmt, [ln for _, ln in slow], [i for i, _ in slow], source)
                continue
        while data:
            stmts = _statement_lines(data)
            k, held = 0, None   # the last statement, given out once the parser is past its line
            try:
                for q in ox.parse(data, fmt):
                    if held is not None:
                        yield held + (None, size)
                        size = 0
                    held = (q, base + (stmts[k] if stmts is not None else k + 1))
                    k += 1
                if held is not None:
                    yield held + (None, size)
                    size = 0
                data = b""
            except SyntaxError as exc:
                bad, column = max(exc.lineno or 1, 1), exc.offset or 1
                lines = data.split(b"\n")
                while bad > 1 and (bad > len(lines) or not lines[bad - 1].strip()):  # an end of input: the
                    bad -= 1                                                       # statement left open
                    column = len(lines[bad - 1]) + 1
                if held is not None and held[1] != base + bad:   # a line with an error gives nothing, not
                    yield held + (None, size)                    # the statement read before the error
                    size = 0
                text = lines[bad - 1].decode("utf-8", "replace") if bad <= len(lines) else ""
                yield None, base + bad, reject(source, base + bad, column, _message(exc), text), size
                size = 0
                data = b"\n".join(lines[bad:])
                base += bad


def _mapped_quads(ox, fmt, lines: list[str], where: list[int], source: str):
    """The statements of ``lines`` (one each; ``where[k]`` is the file line of ``lines[k]``), going on
    after a bad line."""
    while lines:
        k, held = 0, None   # as in line_quads: a statement is given out once the parser is past its line
        try:
            for q in ox.parse("\n".join(lines).encode("utf-8"), fmt):
                if held is not None:
                    yield held
                held = (q, where[k], None, 0)
                k += 1
            if held is not None:
                yield held
            return
        except SyntaxError as exc:
            bad = min(max(exc.lineno or 1, 1), len(lines))
            if held is not None and held[1] != where[bad - 1]:
                yield held
            yield None, where[bad - 1], reject(source, where[bad - 1], exc.offset or 1, _message(exc),
                                               lines[bad - 1]), 0
            lines, where = lines[bad:], where[bad:]


def stream_quads(ox, fmt, fh, source: str) -> Iterator[tuple[object, int, object, int]]:
    """Turtle, TriG, JSON-LD: the whole stream through the parser; the first syntax error ends it."""
    try:
        for q in ox.parse(fh, fmt):
            yield q, 0, None, 0
    except SyntaxError as exc:
        yield None, exc.lineno or 0, reject(source, exc.lineno or 0, exc.offset or 0, _message(exc), ""), 0


def _message(exc: SyntaxError) -> str:
    msg = str(exc)
    return "invalid RDF: " + (msg.split(": ", 1)[-1] if msg.startswith("Parser error") else msg)
