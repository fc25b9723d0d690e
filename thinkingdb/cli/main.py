"""The ``thinkingdb`` command: a thin shell over :mod:`thinkingdb.api`.

Each command is one library call. Errors become one line on standard error and an exit code:
0 success, 1 a query or why-question has no answer, 2 bad input or usage.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import ThinkingDBError, translate
from .commands import HelpFormatter, add_command
from ..model import Limits
from ..store.sqlite import DEFAULT_PATH

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:
    from typing import Sequence

EXIT_OK, EXIT_NO_ANSWER, EXIT_BAD_INPUT = 0, 1, 2


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print usage and exit; we report one line
        raise _UsageError(f"{self.prog}: {message}")


def _dumps(value, **options) -> str:
    import json   # only output in JSON loads it: a text answer does not (~1.5 ms of a cold question)
    return json.dumps(value, **options)


def _emit(args, payload: dict, text: str | None = None) -> None:
    if getattr(args, "json", False):
        sys.stdout.write(_dumps(payload, ensure_ascii=False, sort_keys=False) + "\n")
    elif text is not None:
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")


def _open(args, create: bool = False):
    """The knowledge base of ``--db``; only a writing command creates a missing store."""
    from ..api import KnowledgeBase
    return KnowledgeBase(args.db, create=create, default_rules=not getattr(args, "no_default_rules", False))


def _who(args) -> dict:
    """The caller options of a command as keyword arguments (no options: an anonymous caller)."""
    from ..store.access import Caller
    return {"caller": Caller(tags=tuple(args.caller_tags or ()), region=args.region or ""), "as_of": args.as_of}


def _add_caller(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("caller (what the answer may draw on; none given: public facts only, docs/access.md)")
    g.add_argument("--caller-tags", nargs="*", metavar="TAG", help="the caller's acl tags")
    g.add_argument("--region", metavar="R", help="the caller's region")
    g.add_argument("--as-of", metavar="DATE", help="validity date YYYY-MM-DD (default today)")


def _limits(args) -> Limits:
    from ..api import DEFAULT_LIMITS
    return Limits(max_depth=args.max_depth, max_nodes=args.max_nodes,
                  max_derived=args.max_derived if args.max_derived is not None else DEFAULT_LIMITS.max_derived,
                  timeout_ms=args.timeout_ms if args.timeout_ms is not None else DEFAULT_LIMITS.timeout_ms,
                  max_rows=DEFAULT_LIMITS.max_rows if getattr(args, "max_rows", None) is None else args.max_rows)


# -- commands -------------------------------------------------------------------------------------------
def cmd_ingest(args) -> int:
    with _open(args, create=True) as kb:
        if args.symbols:
            kb.store.set_symbol_mode(args.symbols)
        rejects = args.rejects or (args.db + ".rejects.jsonl" if args.skip_invalid else None)
        report = kb.ingest(args.files, skip_invalid=args.skip_invalid, rejects_path=rejects,
                           progress=None if not args.quiet else False, format=args.format,
                           delimiter=_delimiter(args.delimiter), columns=args.columns, header=args.header,
                           literals=args.literals)
    text = (f"ingested {report.facts:,} facts, {report.units:,} units, {report.rules} rules, "
            f"{report.declarations} declarations, {report.aliases} aliases from {len(report.sources)} file(s)")
    if report.rejected:
        text += f"; {report.rejected} rejected record(s) written to {report.rejects_path}"
    if report.notes:
        text += "; " + ", ".join(f"{what}: {n:,}" for what, n in report.notes)
    _emit(args, report.to_json(), None if args.quiet else text)
    return EXIT_OK


def _delimiter(text: str | None) -> str | None:
    """``--delimiter``: one character, or a name for the ones a shell makes awkward."""
    names = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|", "space": " "}
    return None if text is None else names.get(text.lower(), text)


def _display(kb, labels: dict, key: str) -> str:
    return labels.get(key, key)


def cmd_query(args) -> int:
    if args.limit is not None and args.limit < 0:
        raise _UsageError(f"query: --limit must be a non-negative integer, got {args.limit}")
    if (args.stream or args.format == "jsonl") and not args.json:
        return _stream_query(args)
    with _open(args) as kb:
        for path in args.rules or ():
            kb.add_rules_file(path)
        result = kb.query(args.query, limits=_limits(args), aggregate=args.aggregate, k=args.k,
                          max_answers=args.limit, **_who(args))
        q = kb.parse_query(args.query)
        variables = [v.name for v in q.variables()]
        keys = result.answers.keys() if hasattr(result.answers, "keys") else \
            {k for a in result.answers for k in a.bindings.values()}
        labels = kb.labels(keys=keys, **_who(args)) if args.format == "text" and not args.json else {}
        fmt = "json" if args.json else args.format
        if fmt == "json":
            payload = {"answers": [a.to_json() if hasattr(a, "to_json") else
                                   {"bindings": a.bindings, "score": a.score, "proof": _proof_json(a.proof)}
                                   for a in result.answers],
                       "truncated": result.truncated, "more": bool(getattr(result, "more", False)),
                       "variables": variables}
            sys.stdout.write(_dumps(payload, ensure_ascii=False) + "\n")
        elif fmt == "tsv":
            out = sys.stdout
            if not args.no_header:
                out.write("\t".join(variables + ["score"]) + "\n")
            cols = _key_columns(result.answers, variables)
            if cols is not None:   # held as arrays: lines made column by column, no Answer made
                out.writelines(_bulk_lines(cols, result.answers.scores, variables, lambda v, k: k, "\t",
                                           lambda sc: f"\t{sc!r}\n"))
            else:
                for a in result.answers:
                    out.write("\t".join([a.bindings[v] for v in variables] + [repr(a.score)]) + "\n")
        else:
            cols = _key_columns(result.answers, variables) if variables else None
            if cols is not None:
                sys.stdout.writelines(_bulk_lines(cols, result.answers.scores, variables,
                                                  lambda v, k: f"?{v} = {labels.get(k, k)}", "  ",
                                                  lambda sc: f"  (score {sc:.6g})\n"))
            else:
                for a in result.answers:
                    shown = "  ".join(f"?{v} = {_display(kb, labels, a.bindings[v])}" for v in variables) or "yes"
                    sys.stdout.write(f"{shown}  (score {a.score:.6g})\n")
            if not result.answers:
                sys.stdout.write("no answers\n")
        if getattr(result, "more", False):
            sys.stderr.write(f"thinkingdb: note: stopped at --limit {args.limit}; there are more answers\n")
        if result.truncated:
            sys.stderr.write(f"thinkingdb: note: closure stopped at its {result.truncated} bound; answers may be "
                             "incomplete (raise --max-depth/--max-nodes/--max-derived/--timeout-ms/--max-rows)\n")
    return EXIT_OK if result.answers else EXIT_NO_ANSWER


def _key_columns(answers, variables: list[str]) -> list[list[str]] | None:
    """The answers' keys, one column per variable, when they are held as arrays (else None)."""
    if getattr(answers, "var", None) is not None:
        return [answers.keys()] if variables == [answers.var] else None
    if hasattr(answers, "columns") and list(answers.names) == variables:
        return answers.columns()
    return None


def _bulk_lines(cols: list[list[str]], scores, variables: list[str], cell, sep: str, tail) -> list[str]:
    """Output lines of answers held as arrays: ``cell(variable, key)`` once per distinct key of a
    column, the cells joined by ``sep``, then ``tail(score)``."""
    shown = []
    for v, col in zip(variables, cols):
        memo = {k: cell(v, k) for k in set(col)}
        shown.append([memo[k] for k in col])
    rows = shown[0] if len(shown) == 1 else list(map(sep.join, zip(*shown)))
    array = hasattr(scores, "tolist")   # a numpy array, or a list (engine/smallsource.py: no numpy)
    if len(rows) and (bool((scores == scores[0]).all()) if array else all(sc == scores[0] for sc in scores)):
        end = tail(float(scores[0]))   # one score: one join
        return [end.join(rows) + end]
    return [row + tail(sc) for row, sc in zip(rows, scores.tolist() if array else scores)]


def _stream_query(args) -> int:
    """Answers printed as they are found (text, TSV or JSON Lines); --limit stops the work."""
    with _open(args) as kb:
        for path in args.rules or ():
            kb.add_rules_file(path)
        stream = kb.stream(args.query, limits=_limits(args), aggregate=args.aggregate, k=args.k,
                           limit=None if args.limit is None else args.limit + 1, **_who(args))   # +1: "more"
        variables = list(stream.variables)
        out, more, n = sys.stdout, False, 0
        pending: list = []   # text: answers whose labels are read a block at a time, for their keys only

        def write_text() -> None:
            keys = {a.bindings[v] for a in pending for v in variables}
            labels = kb.labels(keys=keys, **_who(args)) if keys else {}
            for a in pending:
                shown = "  ".join(f"?{v} = {_display(kb, labels, a.bindings[v])}" for v in variables) or "yes"
                out.write(f"{shown}  (score {a.score:.6g})\n")
            pending.clear()
        if args.format == "tsv" and not args.no_header:
            out.write("\t".join(variables + ["score"]) + "\n")
        for a in stream:
            if args.limit is not None and n >= args.limit:
                more = True
                break
            n += 1
            if args.format == "jsonl":
                row = {"bindings": a.bindings, "score": a.score}
                if args.proofs:
                    row["proof"] = _proof_json(a.proof)
                out.write(_dumps(row, ensure_ascii=False) + "\n")
            elif args.format == "tsv":
                out.write("\t".join([a.bindings[v] for v in variables] + [repr(a.score)]) + "\n")
            else:
                pending.append(a)
            if n <= 64 or not n & 1023:   # the first answers at once, then in blocks
                write_text()
                out.flush()
        write_text()
        if not n and args.format == "text":
            out.write("no answers\n")
        if more:
            sys.stderr.write(f"thinkingdb: note: stopped at --limit {args.limit}; there are more answers\n")
        if stream.truncated:
            sys.stderr.write(f"thinkingdb: note: closure stopped at its {stream.truncated} bound; answers may be "
                             "incomplete (raise --max-depth/--max-nodes/--max-derived/--timeout-ms/--max-rows)\n")
    return EXIT_OK if n else EXIT_NO_ANSWER


def _proof_json(proof):
    if proof is None:
        return None
    if isinstance(proof, tuple):
        return [p.to_json() for p in proof]
    return proof.to_json()


def _why_not(args, kb, fact: str) -> int:
    ans = kb.why_not(fact, limits=_limits(args), **_who(args))
    if args.json or args.format == "json":
        sys.stdout.write(_dumps(ans.to_json(), ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(ans.to_text(kb.labels()).rstrip("\n") + "\n")
    return EXIT_NO_ANSWER if ans.holds else 0


def cmd_why(args) -> int:
    with _open(args) as kb:
        for path in args.rules or ():
            kb.add_rules_file(path)
        text = args.fact.strip()
        if text.startswith("not ") or text.startswith("why not "):   # why not: explain a missing fact
            return _why_not(args, kb, text.split("not ", 1)[1])
        proof = kb.why(args.fact, limits=_limits(args), alternatives=args.alternatives, **_who(args))
        fmt = "json" if args.json else args.format
        if proof is None:
            if fmt == "json":
                sys.stdout.write(_dumps({"proof": None}) + "\n")
            else:
                sys.stdout.write("does not follow from the facts and rules within the bounds\n")
            return EXIT_NO_ANSWER
        leaves = proof.leaves()
        prov = {str(t): kb.provenance(t, **_who(args)) for t in leaves}
        if fmt == "json":
            sys.stdout.write(_dumps({"proof": proof.to_json(), "provenance": prov}, ensure_ascii=False) + "\n")
        elif fmt == "dot":
            sys.stdout.write(proof.to_dot(kb.labels(keys=proof.symbols(), **_who(args))))
        else:
            sys.stdout.write(proof.to_text(kb.labels(keys=proof.symbols(), **_who(args))).rstrip("\n") + "\n")
            if args.sources:
                for fact, rows in prov.items():
                    for row in rows:
                        where = f"{row['source']}:{row['line']}" + (f" (unit {row['unit_id']})" if row["unit_id"] else "")
                        sys.stdout.write(f"  source of {fact}: {where} @{row['confidence']:g}\n")
    return EXIT_OK


def cmd_stats(args) -> int:
    with _open(args) as kb:
        stats = kb.stats()
    _emit(args, stats, "\n".join(f"{k:>14}: {v:,}" if isinstance(v, int) else f"{k:>14}: {v}"
                                 for k, v in stats.items()))
    return EXIT_OK


def cmd_export(args) -> int:
    if args.format == "parquet":   # a folder, the input layout of `materialize`
        if not args.output or args.output == "-":
            raise _UsageError("export --format parquet writes a folder: give it with -o DIR")
        from ..spark.materialize import write_facts_parquet
        with _open(args) as kb:
            n = write_facts_parquet(kb.store.fact_rows(), args.output)
        _emit(args, {"output": args.output, "format": "parquet", "facts": n}, None)
        return EXIT_OK
    with _open(args) as kb:
        text = kb.export(args.format, header=not args.no_header, **_who(args))
    if args.output and args.output != "-":
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
        _emit(args, {"output": args.output, "format": args.format}, None)
    elif args.json:
        _emit(args, {"format": args.format, "data": text})
    else:
        sys.stdout.write(text)
    return EXIT_OK


# -- parser ---------------------------------------------------------------------------------------------
def _add_bounds(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("closure bounds (each bound that cuts the closure short is reported)")
    g.add_argument("--max-depth", type=int, metavar="N", help="longest derivation chain (default: none)")
    g.add_argument("--max-nodes", type=int, metavar="N", help="distinct symbols the closure may touch")
    g.add_argument("--max-derived", type=int, metavar="N", help="derived facts kept (default 2,000,000)")
    g.add_argument("--timeout-ms", type=float, metavar="MS", help="time budget in ms (default 30,000)")
    p.add_argument("--rules", action="append", metavar="FILE", help="extra .tdb file of rules (repeatable)")
    p.add_argument("--no-default-rules", action="store_true", help="do not apply the shipped rule library")


class _Version(argparse.Action):
    """``--version``: read from the installed package's metadata only when asked."""

    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib.metadata import PackageNotFoundError, version
        try:
            text = version("thinkingdb")
        except PackageNotFoundError:  # pragma: no cover - run from a source tree without installing
            text = "unknown (not installed)"
        sys.stdout.write(f"thinkingdb {text}\n")
        raise _Exit(EXIT_OK)


class _Exit(Exception):
    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


# the commands defined in this module; another one (search, lint, serve, ...) is registered by its own module
COMMANDS = ("ingest", "query", "why", "stats", "export")


def command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs when it is one of :data:`COMMANDS` and nothing before it can be
    read two ways (only ``--db PATH``, ``--json`` and ``--quiet`` may precede it); else None.

    >>> command_of(["--db", "kb.sqlite", "query", "? a r ?x."]), command_of(["--help"]), command_of(["lint", "f"])
    ('query', None, None)
    """
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--db":
            i += 2
        elif word in ("--json", "--quiet", "-q") or word.startswith("--db="):
            i += 1
        else:
            return word if word in COMMANDS else None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or with ``only`` (one of :data:`COMMANDS`) of that one only: a
    question in a fresh process does not build and format the options of twenty others."""
    common = argparse.ArgumentParser(add_help=False, formatter_class=HelpFormatter)
    common.add_argument("--db", default=argparse.SUPPRESS, metavar="PATH",
                        help=f"the store file (default {DEFAULT_PATH}, or $THINKINGDB_DB)")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON document")
    common.add_argument("--quiet", "-q", action="store_true", default=argparse.SUPPRESS, help="no progress or summary")

    parser = _Parser(prog="thinkingdb", description="ThinkingDB: a symbolic reasoning engine for knowledge bases.",
                     formatter_class=HelpFormatter,
                     epilog="example:\n  thinkingdb --db kb.sqlite ingest examples/software.tdb\n"
                            "  thinkingdb --db kb.sqlite query '? AchillesIDE relevant_for ?goal.'")
    parser.add_argument("--db", default=os.environ.get("THINKINGDB_DB", DEFAULT_PATH), metavar="PATH",
                        help=f"the store file (default {DEFAULT_PATH}, or $THINKINGDB_DB)")
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar or summary")
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def command(name: str, help: str, example: str, func) -> argparse.ArgumentParser:
        return add_command(sub, [common], name, help, example, func)

    if only in (None, "ingest"):
        p = command("ingest", "ingest .tdb, .tsv, .csv, .jsonl, .md/.markdown, .txt and RDF (.nt, .ttl, .nq, .trig, .jsonld) files "
                    "into the store, atomically",
                    "thinkingdb --db kb.sqlite ingest examples/software.tdb units.jsonl --skip-invalid", cmd_ingest)
        p.add_argument("files", nargs="+", metavar="FILE", help="a file, or - for standard input (with --format)")
        p.add_argument("--format", metavar="TYPE", help="file type instead of the extension: tdb, tsv, csv, jsonl, md, "
                       "txt, nt, ttl, nq, trig, jsonld (needed for -)")
        p.add_argument("--delimiter", metavar="CHAR", help="CSV/TSV field delimiter (a character, or tab, comma, "
                       "semicolon, pipe, space)")
        p.add_argument("--columns", metavar="SPEC", help="CSV/TSV columns in order, e.g. s,r,o,confidence or o,-,s,r "
                       "(- skips a column)")
        p.add_argument("--header", action=argparse.BooleanOptionalAction, default=None,
                       help="the first CSV/TSV row is (or is not) a header row (default: detected)")
        p.add_argument("--literals", choices=("symbols", "skip"), default="symbols",
                       help="RDF literals become symbols (default) or are skipped and counted")
        p.add_argument("--skip-invalid", action="store_true", help="ingest the good records, write rejected ones to --rejects")
        p.add_argument("--symbols", choices=("iris", "folded", "quoted"), help="symbol mode of a new store: IRIs and CURIEs kept "
                       "exactly (iris, the default), folded like words (folded), or IRIs, CURIEs and quoted symbols kept "
                       "exactly (quoted); see docs/ingest.md")
        p.add_argument("--rejects", metavar="PATH", help="rejects file (default DB.rejects.jsonl)")

    if only in (None, "query"):
        p = command("query", "answer a query: patterns, conjunctions and property paths, with proofs",
                    "thinkingdb query '? nginx depends_on+ ?x.' --max-depth 3 --format tsv", cmd_query)
        p.add_argument("query", metavar="QUERY")
        p.add_argument("--format", choices=("text", "json", "tsv", "jsonl"), default="text",
                       help="jsonl: one JSON object per answer, streamed as found (implies --stream)")
        p.add_argument("--aggregate", choices=("best", "noisy-or"), default="best",
                       help="score an answer by its best proof, or combine up to K proofs as 1-prod(1-s)")
        p.add_argument("-k", type=int, default=5, metavar="K", help="proofs combined by --aggregate noisy-or (default 5)")
        p.add_argument("--limit", type=int, metavar="N", help="at most N answers (the N best; with --stream the "
                       "first N found, and the work stops there)")
        p.add_argument("--no-header", action="store_true", help="TSV without its header row (variables, score)")
        p.add_argument("--stream", action="store_true", help="print answers as they are found, not sorted by score")
        p.add_argument("--proofs", action="store_true", help="with --format jsonl: each answer's proof too")
        _add_bounds(p)
        p.add_argument("--max-rows", type=int, metavar="N", help="rows a conjunction's join may hold at each "
                       "pattern, answers included (default 1,000,000; 'rows' when it cuts)")
        _add_caller(p)

    if only in (None, "why"):
        p = command("why", "print the proof of one fact (asserted or derived); 'not FACT' explains a missing one",
                    "thinkingdb why 'AchillesIDE relevant_for secure_execution' --format dot; "
                    "thinkingdb why 'not harbor has_capability logging'", cmd_why)
        p.add_argument("fact", metavar="FACT")
        p.add_argument("--format", choices=("text", "json", "dot"), default="text")
        p.add_argument("--alternatives", type=int, default=0, metavar="K", help="also keep up to K other proofs")
        p.add_argument("--sources", action="store_true", help="list every file, line and unit each asserted fact came from")
        _add_bounds(p)
        _add_caller(p)

    if only in (None, "stats"):
        command("stats", "count facts, symbols, units, rules and sources", "thinkingdb --db kb.sqlite stats --json",
                cmd_stats)

    if only in (None, "export"):
        p = command("export", "export the facts as JSON Lines, TSV, Graphviz DOT or GraphML",
                    "thinkingdb export --format graphml -o kb.graphml", cmd_export)
        p.add_argument("--format", choices=("jsonl", "tsv", "nt", "ttl", "dot", "graphml", "parquet"), required=True,
                       help="parquet writes a folder for `materialize` (spark extra)")
        p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output ('-': stdout)")
        p.add_argument("--no-header", action="store_true", help="TSV without its header row")
        _add_caller(p)

    if only is None:
        from . import materialize, search as search_commands, serve as serve_commands, tools
        for register in (search_commands.register, tools.register, serve_commands.register,
                         materialize.register):  # commands beside their features
            register(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (tests call this in-process)."""
    args = None
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        parser = build_parser(command_of(argv))
        args = parser.parse_args(argv)
        if not getattr(args, "command", None):
            parser.print_help(sys.stderr)
            return EXIT_BAD_INPUT
        for name, default in (("json", False), ("quiet", False)):
            if not hasattr(args, name):
                setattr(args, name, default)
        return args.func(args)
    except _Exit as exc:
        return exc.code
    except _UsageError as exc:
        sys.stderr.write(f"{exc}\n(see thinkingdb --help)\n")
        return EXIT_BAD_INPUT
    except ThinkingDBError as exc:
        sys.stderr.write(f"thinkingdb: error: {exc}\n")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        sys.stderr.write("thinkingdb: interrupted; nothing was committed by the interrupted command\n")
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # a leaf or third-party error: translate at this one boundary
        err = translate(exc, getattr(args, "db", None))
        sys.stderr.write(f"thinkingdb: error: {err}\n")
        return EXIT_BAD_INPUT


def run(argv: Sequence[str] | None = None) -> int:
    """The ``thinkingdb`` console script: :func:`main`, then the garbage collector frozen, because the
    process ends next. The interpreter's exit collects garbage over every object alive, the ~4,000 of the
    modules a question loads among them: ~3 ms of a cold ~40 ms question, which a frozen heap skips. Only
    the command line's own process does this (tests and the API call :func:`main` or the library, and
    their collector is left alone)."""
    code = main(argv)
    import gc
    gc.freeze()
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run())
