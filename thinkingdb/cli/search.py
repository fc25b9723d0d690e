"""The ``search``, ``index`` and ``eval`` commands (registered by :mod:`thinkingdb.cli.main`).

Exit codes: ``search`` 0 with results, 1 when nothing is returned; ``eval`` 0 when every gate passes,
1 when a gate fails; 2 for bad input (raised as ThinkingDB errors, reported by :func:`thinkingdb.cli.main.main`).
"""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import ValidationError

__all__ = ["register"]


def _caller(args):
    from ..store.access import Caller
    return Caller(tags=tuple(args.caller_tags or ()), region=args.region or "")


def _profile(args):
    from ..retrieval.profiles import get_profile, load_profile_file
    if getattr(args, "profile_file", None):
        return load_profile_file(args.profile_file)
    return get_profile(args.profile)


def _features(path):
    """Alignment evidence from a JSON file: ``{"unit id": {"quality": 0.9, ...} or [ {...}, ... ]}``."""
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise ValidationError(f"{path}: cannot read features file: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = f":{exc.lineno}:{exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise ValidationError(f"{path}{where}: not valid JSON: {getattr(exc, 'msg', exc)}") from None
    if not isinstance(data, dict):
        raise ValidationError(f"{path}: features must be a JSON object mapping unit ids to feature values")
    return data


BUILTIN_PROFILES = ("kb-balanced", "kb-fast", "kb-thinkingdb")
"""The built-in profile names, spelled here so that building the parser (``--help``) does not import the
retrieval pipeline; a test checks them against :func:`thinkingdb.retrieval.profiles.profile_names`."""


def _builtin_profiles() -> list[str]:
    return list(BUILTIN_PROFILES)


def tag_list(text: str) -> list[str]:
    """``--caller-tags a,b``: one option value, so the query text after it is never taken for a tag.

    >>> tag_list("support:eu, sales")
    ['support:eu', 'sales']
    """
    return [t.strip() for t in text.split(",") if t.strip()]


def cmd_search(args) -> int:
    from ..api import KnowledgeBase
    from ..retrieval.pipeline import search
    profile = _profile(args)
    with KnowledgeBase(args.db, create=False) as kb:
        res = search(kb, args.text, profile=profile, caller=_caller(args), as_of=args.as_of,
                     decompose=True if args.decompose else None,
                     alignment=True if args.align or args.features else None, features=_features(args.features))
        if args.budget_tokens is not None:
            from ..retrieval.pipeline import fold_result
            res = fold_result(kb, res, args.budget_tokens, diversity_bias=args.diversity_bias)
        labels = {}
        if args.proofs and not args.json:   # the labels of the symbols the printed proofs show, only those
            keys = set().union(*(r.proof.symbols() for r in res.results if r.proof is not None))
            labels = kb.labels(caller=_caller(args), as_of=args.as_of, keys=keys) if keys else {}
    if args.json:
        sys.stdout.write(json.dumps(res.to_json(), ensure_ascii=False) + "\n")
        return 0 if res.results else 1
    out = []
    for i, r in enumerate(res.results, 1):
        lanes = " · ".join(f"{lane} #{v['rank']} {v['score']:.3f}" for lane, v in r.lanes.items())
        mark = "  (states the answer)" if r.pinned else ""
        align = f"  RSI {r.alignment['rsi']:+.3f} {r.alignment['band']}" if r.alignment else ""
        out.append(f"{i}. {r.unit_id}  score {r.score:.3f}{align}  [{lanes}]{mark}")
        if r.proof is not None and args.proofs:
            out.extend("     " + line for line in r.proof.to_text(labels).rstrip("\n").split("\n"))
    if not res.results:
        out.append("no results")
    if not args.quiet:
        t = res.trace
        hdc = t["lanes"].get("hdc", {})
        out.append(f"-- profile {t['profile']['name']}, {t['view']['units']} visible units, "
                   f"hdc {'ran' if hdc.get('ran') else 'skipped'}, {t['timings_ms']['total']:.1f} ms")
    sys.stdout.write("\n".join(out) + "\n")
    return 0 if res.results else 1


def cmd_index(args) -> int:
    from ..store.access import parse_date
    from ..api import KnowledgeBase
    from ..retrieval.lanes import lanes_for
    profile = _profile(args)
    with KnowledgeBase(args.db, create=False) as kb:
        lanes = lanes_for(kb)
        view = lanes.access.view(_caller(args), parse_date(args.as_of))
        report = lanes.prepare(view, profile.lanes)
    if args.json:
        sys.stdout.write(json.dumps({"profile": profile.name, "units": len(lanes.units), "visible": view.count,
                                     "parts": report}) + "\n")
        return 0
    lines = [f"{name:<16} {v['state']:<8} {v['seconds']:8.2f} s" for name, v in report.items()]
    if not args.quiet:
        lines.append(f"-- profile {profile.name}: {view.count:,} of {len(lanes.units):,} units visible to this caller")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def unknown_case_ids(kb, cases) -> list[str]:
    """The required and forbidden unit ids of ``cases`` that the store does not hold, sorted."""
    named = {u for c in cases for u in (*c.required, *c.forbidden)}
    return sorted(u for u in named if kb.store.unit(u) is None)


def cmd_eval(args) -> int:
    from ..api import KnowledgeBase
    from ..retrieval.evaluate import evaluate, load_cases
    from ..retrieval.profiles import load_profile_file
    cases = load_cases(args.cases)
    profiles = list(args.profiles) + [load_profile_file(f) for f in args.profile_file or ()]
    if args.k < 1:
        raise ValidationError(f"--k must be a positive integer, got {args.k}")
    if args.min_recall is not None and not 0.0 <= args.min_recall <= 1.0:  # also refuses nan
        raise ValidationError(f"--min-recall must be a number in [0, 1], got {args.min_recall}")
    with KnowledgeBase(args.db, create=False) as kb:
        unknown = unknown_case_ids(kb, cases)
        if unknown:  # a typo in a case file would otherwise read as a retrieval failure
            sys.stderr.write(f"thinkingdb: warning: {len(unknown)} unit id(s) named by the cases are not in the store: "
                             + ", ".join(unknown[:10]) + (" ..." if len(unknown) > 10 else "") + "\n")
        report = evaluate(kb, cases, profiles, k=args.k, min_recall=args.min_recall)
    if args.json:
        sys.stdout.write(json.dumps(report.to_json(), ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(report.to_text() + "\n")
    return 0 if report.passed else 1


def register(sub, common) -> None:
    """Add ``search``, ``index`` and ``eval`` to the ``thinkingdb`` command."""
    profile_names = _builtin_profiles

    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("search", parents=[common], formatter_class=fmt,
                       help="retrieve knowledge units for free text through a profile",
                       description="Retrieve the units a caller may see, through kb-fast, kb-balanced "
                                   "(default) or kb-thinkingdb, with per-lane ranks, scores and proofs.",
                       epilog="example:\n  thinkingdb --db kb.sqlite search 'why is AchillesIDE relevant for "
                              "secure execution' --profile kb-thinkingdb --caller-tags support:eu --region EU "
                              "--as-of 2026-05-27\n"
                              "  thinkingdb --db kb.sqlite search 'refurbished laptop replacement policy EU' "
                              "--decompose\n"
                              "  thinkingdb --db kb.sqlite search 'laptop policy' --align --features features.json\n\n"
                              "--features: a JSON object {\"unit id\": {\"quality\": 0.9, \"risk_penalty\": 0.2}, ...};\n"
                              "features are quality, freshness, authority, risk_penalty, coherence_penalty, each in [0, 1].")
    p.add_argument("text", metavar="TEXT")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--profile", default="kb-balanced", choices=profile_names(), help="built-in profile")
    g.add_argument("--profile-file", metavar="F.toml", help="a custom profile in TOML")
    p.add_argument("--caller-tags", type=tag_list, action="extend", metavar="TAG[,TAG...]",
                   help="the caller's acl tags, comma-separated or the option repeated")
    p.add_argument("--region", metavar="R", help="the caller's region")
    p.add_argument("--as-of", metavar="DATE", help="validity date YYYY-MM-DD (default today)")
    p.add_argument("--budget-tokens", type=int, metavar="N",
                   help="keep the results that fit N tokens (greedy knapsack, diversity penalty)")
    p.add_argument("--diversity-bias", type=float, default=0.3, metavar="B",
                   help="penalty in [0, 1] for repeated roles or sources under --budget-tokens (default 0.3)")
    p.add_argument("--decompose", action="store_true",
                   help="split a query of 4+ content words into sub-queries with an intersection bonus")
    p.add_argument("--align", action="store_true",
                   help="order results by the alignment index (RSI) of their features, then by score")
    p.add_argument("--features", metavar="F.json", help="alignment evidence per unit id (implies --align)")
    p.add_argument("--no-proofs", dest="proofs", action="store_false", help="do not print closure proofs")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("index", parents=[common], formatter_class=fmt,
                       help="build the search indexes now instead of on the first search",
                       description="Load or build what a profile's searches need (BM25 index of the caller's "
                                   "view, HDC index, fact graphs, symbol matcher) and say which were built. "
                                   "Indexes are kept in the store; any write makes them stale.",
                       epilog="example:\n  thinkingdb --db kb.sqlite index --profile kb-thinkingdb "
                              "--caller-tags support:eu --region EU")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--profile", default="kb-thinkingdb", choices=profile_names(),
                   help="prepare the lanes of this profile (default kb-thinkingdb: all of them)")
    g.add_argument("--profile-file", metavar="F.toml", help="a custom profile in TOML")
    p.add_argument("--caller-tags", type=tag_list, action="extend", metavar="TAG[,TAG...]",
                   help="the caller's acl tags (whose BM25 view to build), comma-separated or repeated")
    p.add_argument("--region", metavar="R", help="the caller's region")
    p.add_argument("--as-of", metavar="DATE", help="validity date YYYY-MM-DD (default today)")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("eval", parents=[common], formatter_class=fmt,
                       help="Recall@k per profile, safety gates and abstention over a JSONL case file",
                       description="Run every case through every profile; exit 1 when a gate fails.",
                       epilog="example:\n  thinkingdb --db kb.sqlite eval cases.jsonl --profiles kb-fast "
                              "kb-thinkingdb --k 10")
    p.add_argument("cases", metavar="CASES.jsonl")
    p.add_argument("--profiles", nargs="+", default=profile_names(), choices=profile_names(), metavar="NAME",
                   help="built-in profiles to evaluate (default: all three)")
    p.add_argument("--profile-file", action="append", metavar="F.toml", help="also evaluate a TOML profile")
    p.add_argument("--k", type=int, default=10, help="cut-off of Recall@k (default 10)")
    p.add_argument("--min-recall", type=float, metavar="R", help="fail when a profile's Recall@k is below R")
    p.set_defaults(func=cmd_eval)
