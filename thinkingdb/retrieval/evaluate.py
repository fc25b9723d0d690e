"""Retrieval evaluation: Recall@k per profile, safety gates and abstention (``thinkingdb eval``).

A case file is JSON Lines, one case per line::

    {"id": "exact-code", "query": "RPL-14", "caller": {"tags": ["support:eu"], "region": "EU"},
     "as_of": "2026-05-27", "required": ["eu-refurb-v2"], "forbidden": ["eu-refurb-v1", "merchant-vip"]}
    {"id": "hidden-code", "query": "VIP-RPL-1", "caller": {"tags": ["support:eu"], "region": "EU"},
     "must_abstain": true}

Per profile the report gives Recall@k (mean over the cases with required ids of the share of required
ids among the first ``k`` results) and three gates, each of which fails the run:

* **forbidden** — a case's forbidden id (a restricted or superseded unit) was returned;
* **visibility** — a returned unit is not visible to the case's caller on its date (checked
  independently of the pipeline with :func:`thinkingdb.store.access.unit_visible`, so it needs no labels);
* **abstention** — a ``must_abstain`` case returned something.

``min_recall`` (optional) adds a fourth gate: every profile's Recall@k must reach it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ..store.access import Caller, parse_date, unit_visible
from ..errors import Diagnostic, ValidationError
from .profiles import Profile, get_profile

__all__ = ["EvalCase", "EvalReport", "load_cases", "evaluate"]

_KEYS = {"id", "query", "caller", "as_of", "required", "forbidden", "must_abstain"}


@dataclass(frozen=True)
class EvalCase:
    """One query with its caller, date and the ids it must (not) return."""

    id: str
    query: str
    caller: Caller = Caller()
    as_of: str | None = None
    required: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()
    must_abstain: bool = False


def _ids(obj: dict, key: str) -> tuple[str, ...]:
    v = obj.get(key, [])
    if isinstance(v, str) or not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ValidationError(f"field {key!r} must be a list of unit ids")
    return tuple(v)


def parse_case(obj: object, n: int) -> EvalCase:
    """Validate one case object (``n``: its line, for the default id).

    >>> parse_case({"query": "RPL-14", "required": ["a"]}, 3).id
    'case-3'
    >>> parse_case({"query": "x", "must_abstain": True, "required": ["a"]}, 1)
    Traceback (most recent call last):
    ...
    thinkingdb.errors.ValidationError: a must_abstain case cannot require ids
    """
    if not isinstance(obj, dict):
        raise ValidationError("a case must be a JSON object")
    unknown = set(obj) - _KEYS
    if unknown:
        raise ValidationError(f"unknown field(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(_KEYS))}")
    q = obj.get("query")
    if not isinstance(q, str) or not q.strip():
        raise ValidationError("field 'query' must be a non-empty string")
    abstain = obj.get("must_abstain", False)
    if not isinstance(abstain, bool):
        raise ValidationError("field 'must_abstain' must be true or false")
    as_of = obj.get("as_of")
    if as_of is not None:
        as_of = parse_date(as_of).isoformat()
    case = EvalCase(str(obj.get("id", f"case-{n}")), q, Caller.from_json(obj.get("caller")), as_of,
                    _ids(obj, "required"), _ids(obj, "forbidden"), abstain)
    if abstain and case.required:
        raise ValidationError("a must_abstain case cannot require ids")
    return case


def load_cases(path: str) -> list[EvalCase]:
    """Read a case file; every bad line is reported (source, line, reason) in one ValidationError."""
    cases, errors = [], []
    try:
        fh = open(path, encoding="utf-8")
    except OSError as exc:
        raise ValidationError(f"{path}: cannot read cases: {exc.strerror or exc}") from None
    with fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                cases.append(parse_case(json.loads(line), n))
            except json.JSONDecodeError as exc:
                errors.append(Diagnostic(path, n, exc.colno, f"invalid JSON: {exc.msg}"))
            except ValidationError as exc:
                errors.append(Diagnostic(path, n, 1, str(exc)))
    if errors:
        raise ValidationError("\n".join(d.render() for d in errors))
    if not cases:
        raise ValidationError(f"{path}: no cases")
    return cases


@dataclass(frozen=True)
class CaseOutcome:
    case: str
    profile: str
    returned: tuple[str, ...]
    recall: float | None
    forbidden: tuple[str, ...]
    invisible: tuple[str, ...]
    abstention_failed: bool

    def to_json(self) -> dict:
        return {"case": self.case, "profile": self.profile, "returned": list(self.returned), "recall": self.recall,
                "forbidden_returned": list(self.forbidden), "invisible_returned": list(self.invisible),
                "abstention_failed": self.abstention_failed}


@dataclass(frozen=True)
class EvalReport:
    """Outcomes per case and profile, the summary per profile and whether every gate passed."""

    k: int
    outcomes: tuple[CaseOutcome, ...]
    summary: dict = field(default_factory=dict)
    passed: bool = True

    def to_json(self) -> dict:
        return {"k": self.k, "passed": self.passed, "profiles": self.summary,
                "cases": [o.to_json() for o in self.outcomes]}

    def to_text(self) -> str:
        lines = [f"{'profile':<16} {'Recall@' + str(self.k):>9} {'cases':>6} {'forbidden':>10} "
                 f"{'visibility':>11} {'abstention':>11}"]
        for name, s in self.summary.items():
            recall = "-" if s["recall"] is None else f"{s['recall']:.3f}"
            lines.append(f"{name:<16} {recall:>9} {s['cases']:>6} {_gate(s['forbidden_failures']):>10} "
                         f"{_gate(s['visibility_failures']):>11} {_gate(s['abstention_failures']):>11}")
        for o in self.outcomes:
            for what, ids in (("returned forbidden", o.forbidden), ("returned invisible", o.invisible)):
                if ids:
                    lines.append(f"FAIL {o.profile} {o.case}: {what} {', '.join(ids)}")
            if o.abstention_failed:
                lines.append(f"FAIL {o.profile} {o.case}: must abstain, returned {', '.join(o.returned)}")
        for name, s in self.summary.items():
            if s.get("recall_gate") is False:
                lines.append(f"FAIL {name}: Recall@{self.k} {s['recall']:.3f} below {s['min_recall']}")
        lines.append("all gates passed" if self.passed else "GATES FAILED")
        return "\n".join(lines)


def _gate(failures: int) -> str:
    return "pass" if failures == 0 else f"FAIL({failures})"


def evaluate(kb, cases: Sequence[EvalCase], profiles: Iterable[str | Profile] = ("kb-fast", "kb-balanced",
             "kb-thinkingdb"), *, k: int = 10, min_recall: float | None = None) -> EvalReport:
    """Run every case through every profile and check the gates (see the module docstring)."""
    from .pipeline import search
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValidationError(f"k must be a positive integer, got {k!r}")
    units = kb.store.unit
    outcomes, summary, passed = [], {}, True
    for prof in [get_profile(p) for p in profiles]:
        recalls, fails = [], {"forbidden": 0, "visibility": 0, "abstention": 0}
        for case in cases:
            day = parse_date(case.as_of)
            got = tuple(search(kb, case.query, profile=prof, caller=case.caller, as_of=day).ids())
            recall = None
            if case.required:
                recall = len(set(case.required) & set(got[:k])) / len(set(case.required))
                recalls.append(recall)
            forbidden = tuple(u for u in got if u in set(case.forbidden))
            invisible = tuple(u for u in got if (unit := units(u)) is None or not unit_visible(unit, case.caller, day))
            abstain_bad = case.must_abstain and bool(got)
            fails["forbidden"] += bool(forbidden)
            fails["visibility"] += bool(invisible)
            fails["abstention"] += abstain_bad
            outcomes.append(CaseOutcome(case.id, prof.name, got, recall, forbidden, invisible, abstain_bad))
        mean = sum(recalls) / len(recalls) if recalls else None
        s = {"recall": mean, "cases": len(cases), "cases_with_required": len(recalls),
             **{f"{g}_failures": n for g, n in fails.items()}}
        if min_recall is not None:
            s["min_recall"] = min_recall
            s["recall_gate"] = mean is None or mean >= min_recall
            passed &= s["recall_gate"]
        passed &= not any(fails.values())
        summary[prof.name] = s
    return EvalReport(k, tuple(outcomes), summary, passed)
