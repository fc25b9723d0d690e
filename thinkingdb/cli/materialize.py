"""The ``materialize`` command: the closure of a folder of facts on Spark or in process, as Parquet
(registered by :mod:`thinkingdb.cli.main`; the engine lives in :mod:`thinkingdb.spark`)."""

from __future__ import annotations

import argparse
import json
import sys

from .commands import add_command


def cmd_materialize(args) -> int:
    from ..spark.materialize import load_rules, materialize, print_round

    conf = {}
    for item in args.conf or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            from ..errors import ValidationError
            raise ValidationError(f"--conf takes KEY=VALUE, got {item!r}")
        conf[key] = value
    rules, vocab = load_rules(args.rules or [], default_rules=not args.no_default_rules)
    report = materialize(args.inputs, args.out, rules, vocab, engine=args.engine, master=args.master,
                         max_depth=args.max_depth, overwrite=args.overwrite, conf=conf,
                         on_round=None if args.quiet else print_round)
    if args.json:
        sys.stdout.write(json.dumps(report.to_json()) + "\n")
    elif not args.quiet:
        cut = f"; truncated by {report.truncated}" if report.truncated else ""
        sys.stdout.write(f"{report.derived:,} derived facts in {report.rounds} rounds, {report.seconds:.1f} s "
                         f"({report.engine}) -> {report.output}{cut}\n")
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser | None = None) -> None:
    p = add_command(sub, [common] if common is not None else [], "materialize",
                    "derive the closure of a folder of facts (Parquet or TSV) and write it as Parquet, on "
                    "Apache Spark or in process",
                    "thinkingdb materialize --engine spark --master 'local[2]' --in facts/ --out closure/ "
                    "--rules rules.tdb", cmd_materialize)
    p.add_argument("--in", dest="inputs", required=True, metavar="PATH",
                   help="a folder or a glob of .parquet (s, r, o, c) or .tsv files")
    p.add_argument("--out", required=True, metavar="DIR", help="the output folder (derived facts as Parquet)")
    p.add_argument("--engine", choices=("spark", "local"), default="spark",
                   help="spark (needs the spark extra) or local (the in-process reference engine)")
    p.add_argument("--master", default="local[2]", help="Spark master URL (default local[2]; '' = what spark-submit set)")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE", help="a Spark setting (repeatable)")
    p.add_argument("--rules", action="append", metavar="FILE", help=".tdb file of rules and declarations (repeatable)")
    p.add_argument("--no-default-rules", action="store_true", help="do not apply the shipped rule library")
    p.add_argument("--max-depth", type=int, metavar="N", help="stop after N rounds (reported as truncated)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
