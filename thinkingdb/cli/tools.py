"""Command-line tools for sources: ``lint``, ``normalize``, ``retract``, ``sources`` and ``example``.

:func:`register` adds them to the main parser (``thinkingdb.cli.main`` calls it). Each handler takes the
parsed arguments (with ``db``, ``json`` and ``quiet``) and returns the exit code; with ``--json`` it prints
one JSON document. Bad input raises a :class:`~thinkingdb.errors.ThinkingDBError`, which the main program
turns into one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import contextmanager

from .commands import add_command
from ..errors import IngestError, StoreError
from ..normalize import Vocabulary
from ..store.sqlite import Store
from ..store.stdin import STDIN

__all__ = ["cmd_example", "cmd_lint", "cmd_normalize", "cmd_retract", "cmd_sources", "register"]


def _print(args, payload: dict, text: str | None) -> None:
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, sort_keys=True) + "\n")
    elif text and not getattr(args, "quiet", False):
        sys.stdout.write(text + ("" if text.endswith("\n") else "\n"))


def _vocabulary(paths) -> Vocabulary | None:
    """Aliases and inverse declarations of ``--vocab`` files."""
    if not paths:
        return None
    from ..language import compile_source
    vocab = Vocabulary()
    for p in paths:
        try:
            with open(p, encoding="utf-8") as fh:
                compile_source(fh.read(), p, vocab)
        except OSError as exc:
            raise IngestError(f"{p}: {exc.strerror or exc}") from None
    return vocab


@contextmanager
def _stdin_as_file(files: list[str], fmt: str | None):
    """``-`` among ``files`` read into a temporary file (its type from ``fmt`` or its first line)."""
    from ..store.stdin import spool_stdin
    spooled = spool_stdin("." + fmt.lstrip(".") if fmt else None) if "-" in files else None
    try:
        yield [spooled if f == "-" else f for f in files], spooled
    finally:
        if spooled:
            os.remove(spooled)


def cmd_lint(args) -> int:
    """``lint FILE...``: 0 when clean, 1 when there are findings, 2 when a file cannot be read."""
    missing = [p for p in args.files if p != "-" and not os.path.isfile(p)]
    if missing:
        raise IngestError(f"{missing[0]}: {'no such file' if not os.path.exists(missing[0]) else 'not a regular file'}")
    from ..store.lint import lint_files
    with _stdin_as_file(args.files, args.format) as (files, spooled):
        findings = lint_files(files, _vocabulary(args.vocab))
    if spooled:
        from dataclasses import replace
        findings = [replace(f, source=STDIN) if f.source == os.path.normpath(spooled) else f for f in findings]
    text = "\n".join(f.render() for f in findings)
    if not findings:
        text = f"{len(args.files)} file(s): no findings"
    else:
        text += f"\n{len(findings)} finding(s)"
    _print(args, {"findings": [f.to_json() for f in findings], "count": len(findings),
                  "files": list(args.files)}, text)
    return 1 if findings else 0


def cmd_normalize(args) -> int:
    """``normalize FILE [-o OUT | -i]``: the canonical form on stdout, into OUT, or in place with ``-i``."""
    if args.in_place and args.output:
        raise IngestError("normalize: -i (rewrite FILE) and -o (write OUT) exclude each other")
    out = args.output or (None if args.in_place else "-")
    if args.file == "-" and args.in_place:
        raise IngestError("normalize: standard input cannot be rewritten in place (-i)")
    from ..store.canonical import normalize_file
    with _stdin_as_file([args.file], args.format) as (files, _):
        text = normalize_file(files[0], out, _vocabulary(args.vocab))
    if out == "-" and not getattr(args, "json", False):
        sys.stdout.write(text)
        return 0
    lines = text.count("\n")
    _print(args, {"file": args.file, "output": out or args.file, "lines": lines,
                  **({"text": text} if out == "-" else {})},
           f"normalized {args.file} -> {out or args.file} ({lines} lines)")
    return 0


def cmd_retract(args) -> int:
    """``retract SOURCE...``: remove what the sources contributed, in one transaction."""
    if not os.path.exists(args.db):
        raise StoreError(f"{args.db}: no such store")
    from ..store.ingest import check_dropped_inverses
    with Store(args.db, create=False) as store:
        known = {s["source"] for s in store.sources()}
        missing = [s for s in args.sources if os.path.normpath(s) not in known and s not in known]
        if missing:
            raise IngestError(f"not an ingested source: {', '.join(missing)} (see `thinkingdb stats` / sources)")
        totals = {"facts": 0, "units": 0, "provenance": 0}
        with store.transaction():
            inverses = store.vocabulary().inverses   # b -> c: facts of b are stored as c, turned
            for s in args.sources:
                name = s if s in known else os.path.normpath(s)
                for k, v in store.retract_source(name).items():
                    totals[k] += v
            check_dropped_inverses(store, inverses, f"cannot retract {', '.join(args.sources)}")
    _print(args, {"sources": list(args.sources), **totals},
           f"retracted {len(args.sources)} source(s): {totals['facts']:,} facts removed, "
           f"{totals['provenance']:,} provenance rows, {totals['units']:,} units")
    return 0


def cmd_sources(args) -> int:
    """``sources``: every ingested source with its kind, time and record count."""
    if not os.path.exists(args.db):
        raise StoreError(f"{args.db}: no such store; run `thinkingdb ingest` first")
    with Store(args.db, create=False, readonly=True) as store:
        rows = store.sources()
    text = "\n".join(f"{r['source']}\t{r['kind']}\t{r['records']}\t{r['ingested_at']}" for r in rows)
    if not args.no_header and rows:
        text = "source\tkind\trecords\tingested_at\n" + text
    _print(args, {"sources": rows}, text or "no sources")
    return 0


EXAMPLES = ("software", "units")
"""The examples shipped inside the package (``thinkingdb/data/examples``)."""


def example_text(name: str) -> str:
    """The text of a shipped example (``software`` is ``.tdb``, ``units`` is ``.jsonl``).

    >>> example_text("software").startswith("#")
    True
    """
    from importlib.resources import files
    folder = files("thinkingdb") / "data" / "examples"
    for entry in folder.iterdir():
        if entry.name.rsplit(".", 1)[0] == name:
            return entry.read_text(encoding="utf-8")
    raise IngestError(f"no example {name!r}; the examples are: {', '.join(EXAMPLES)}")


def cmd_example(args) -> int:
    """``example [NAME]``: print a shipped example (to pipe into ``ingest -``), or list them."""
    if not args.name:
        _print(args, {"examples": list(EXAMPLES)}, "\n".join(f"{n}\tthinkingdb example {n} | thinkingdb ingest - "
                                                               f"--format {'tdb' if n == 'software' else 'jsonl'}"
                                                               for n in EXAMPLES))
        return 0
    sys.stdout.write(example_text(args.name))
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser | None = None) -> None:
    """Add ``lint``, ``normalize`` and ``retract`` to the subparsers of the main parser."""
    parents = [common] if common is not None else []

    def command(name: str, help: str, example: str, func) -> argparse.ArgumentParser:
        return add_command(sub, parents, name, help, example, func)

    p = command("lint", "check .tdb, .tsv, .jsonl, .md and .txt files without writing (exit 1 on findings)",
                "thinkingdb lint facts.tdb edges.tsv --json", cmd_lint)
    p.add_argument("files", nargs="+", metavar="FILE", help="a file, or - for standard input")
    p.add_argument("--format", metavar="TYPE", help="the type of - (tdb, tsv, jsonl, ...; default: told from its first line)")
    p.add_argument("--vocab", action="append", metavar="TDB", help="also apply the aliases and declarations of TDB")

    p = command("normalize", "print a .tdb or .tsv file in canonical sorted form (keys, aliases, merged duplicates)",
                "thinkingdb normalize facts.tdb -o facts.canonical.tdb   (or -i to rewrite facts.tdb)", cmd_normalize)
    p.add_argument("file", metavar="FILE", help="a file, or - for standard input")
    p.add_argument("--format", choices=("tdb", "tsv"), help="the type of - (default: told from its first line)")
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT instead of standard output ('-': stdout)")
    p.add_argument("-i", "--in-place", action="store_true", help="rewrite FILE itself")
    p.add_argument("--vocab", action="append", metavar="TDB", help="also apply the aliases and declarations of TDB")

    p = command("retract", "remove everything a source file contributed (facts, units, rules), atomically",
                "thinkingdb --db kb.sqlite retract notes/security.md", cmd_retract)
    p.add_argument("sources", nargs="+", metavar="SOURCE", help="the file name as it was ingested")

    p = command("sources", "list the ingested sources (name, kind, records, time) as TSV with a header",
                "thinkingdb --db kb.sqlite sources --json", cmd_sources)
    p.add_argument("--no-header", action="store_true", help="TSV without its header row")

    p = command("example", "print a shipped example (or list them), e.g. to pipe into ingest",
                "thinkingdb example software | thinkingdb ingest - --format tdb", cmd_example)
    p.add_argument("name", nargs="?", choices=EXAMPLES, metavar="NAME", help=f"one of {', '.join(EXAMPLES)}")
