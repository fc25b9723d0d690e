"""The compiled parser of :mod:`grammar.parser`: the grammar (``thinkingdb.lark``, package data) as an
LALR parser whose tree builder (:class:`grammar.builder.Builder`) runs during parsing, built once per
process and its tables kept on disk between processes; :func:`run` parses a text and returns the
builder's errors with the tree.
"""

from __future__ import annotations

from functools import lru_cache

from lark import Lark

from .builder import Builder, state

__all__ = ["cache_path", "lark_parser", "run"]


def cache_path() -> str:
    """Where the analysed grammar is kept between processes: the user's own cache folder, named by
    the grammar's, lark's and Python's versions (building the LALR tables takes ~0.3 s, loading ~3 ms)."""
    import hashlib
    import os
    import sys

    import lark
    with open(os.path.join(os.path.dirname(__file__), "thinkingdb.lark"), "rb") as fh:
        text = fh.read()
    digest = hashlib.sha256(text + lark.__version__.encode() + sys.version.encode()).hexdigest()[:20]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "thinkingdb", f"grammar-{digest}.lark")


@lru_cache(maxsize=None)
def lark_parser() -> Lark:
    """The LALR parser, its tables loaded from :func:`cache_path` (else built and saved there)."""
    import os
    try:
        path = cache_path()
        with open(path, "rb") as fh:
            return Lark.__new__(Lark)._load(fh, transformer=Builder())
    except Exception:  # noqa: BLE001 (no cache, or an unreadable one: build the tables)
        pass
    parser = Lark.open_from_package("grammar", "thinkingdb.lark", ("",), parser="lalr", lexer="contextual",
                                    transformer=Builder(), maybe_placeholders=True, cache=False)
    try:   # written whole under a private name, then renamed: a reader never sees half a file
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:   # without the builder: it is given on load, and pickled it names its module
            parser.save(fh, exclude_options=("transformer",))
        os.replace(tmp, path)
    except Exception:  # noqa: BLE001 (a read-only home: no cache, nothing else changes)
        pass
    return parser


def run(text: str, line_offset: int = 0):
    """The statements of ``text`` and the errors the builder recorded (lines shifted by ``line_offset``)."""
    state.errors = []
    state.line_offset = line_offset
    try:
        result = lark_parser().parse(text)
    finally:
        errors, state.errors = state.errors, []
        state.line_offset = 0
    return result, errors
