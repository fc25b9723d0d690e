"""Standard input as a source: ``-`` is copied to a temporary file named by its type, and recorded as
the source ``<stdin>``."""

from __future__ import annotations

import os
import sys

STDIN = "<stdin>"
"""The source name of what ``-`` read."""


def spool_stdin(ext: str | None = None) -> str:
    """Standard input copied to a temporary file (the readers seek, count bytes and read twice) whose
    extension is the type to read it as: ``ext``, or without one what :func:`sniff` tells."""
    import shutil   # (with tempfile: only when standard input is read, not for every command's import)
    import tempfile
    fd, path = tempfile.mkstemp(prefix="thinkingdb-stdin-")
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out)
    with open(path, "rb") as fh:
        ext = ext or sniff(fh.read(1 << 16))
    os.replace(path, path + ext)
    return path + ext


def sniff(head: bytes) -> str:
    r"""The file type of text without a name, from its first line that is not blank or a comment.

    >>> [sniff(t) for t in (b"# deps\nnginx depends_on openssl.", b"a\tr\tb\n", b'{"id": "u1"}',
    ...                     b'{"@context": {}}', b"@prefix ex: <http://e.org/> .", b"<http://e.org/a> <p> <o> .")]
    ['.tdb', '.tsv', '.jsonl', '.jsonld', '.ttl', '.nt']
    """
    for raw in head.lstrip(b"\xef\xbb\xbf").split(b"\n"):
        line = raw.strip()
        if not line or line.startswith(b"#"):
            continue
        if line.startswith((b"{", b"[")):
            return ".jsonld" if b'"@context"' in head or b'"@id"' in head else ".jsonl"
        if line[:7].lower() in (b"@prefix", b"prefix ") or line[:5].lower() in (b"@base", b"base "):
            return ".ttl"
        if line.startswith((b"<", b"_:")):
            return ".nt"
        return ".tsv" if b"\t" in line else ".tdb"
    return ".tdb"
