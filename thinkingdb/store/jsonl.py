"""The JSON Lines reader: one knowledge unit per line, its fields checked, its triples facts."""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

from ..errors import ValidationError
from ..model import Evidence, Fact, check_unit_float
from ..normalize import Vocabulary
from .fields import access_misspelling, check_region, check_tags
from .records import CHUNK, Batch, _check_date, _decode, _reject
from .sqlite import Unit

_TEXT_FIELDS = ("role", "topic", "claim", "condition", "procedure", "utility_note", "source", "chunk", "region")
_DATE_FIELDS = ("effective_from", "effective_to")


def _str_list(value, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationError(f"field {name!r} must be a list of strings")
    return tuple(value)


def _check_features(value: Any) -> None:
    """Alignment evidence stored on a unit: a mapping of features in [0, 1], or a list of them."""
    items = value if isinstance(value, list) else [value]
    for i, item in enumerate(items):
        where = "features" if not isinstance(value, list) else f"features[{i}]"
        if not isinstance(item, dict):
            raise ValidationError(f"field {where!r} must be an object of feature values")
        try:
            Evidence.from_mapping(item, where)
        except ValueError as exc:
            raise ValidationError(f"field {exc}") from None


def parse_unit(obj: dict, source: str, vocab: Vocabulary) -> tuple[Unit, list[Fact], dict[str, str]]:
    """Validate one knowledge unit object; return the unit, its facts and their labels."""
    if not isinstance(obj, dict):
        raise ValidationError("a knowledge unit must be a JSON object")
    uid = obj.get("id", obj.get("unit_id"))
    if not isinstance(uid, str) or not uid.strip():
        raise ValidationError("a knowledge unit needs a non-empty string field 'id'")
    values = {}
    for name in _TEXT_FIELDS:
        v = obj.get(name, "")
        if v is None:
            v = ""
        if not isinstance(v, str):
            raise ValidationError(f"field {name!r} must be a string, got {type(v).__name__}")
        values[name] = v
    acts = _str_list(obj.get("utility_acts", obj.get("utilityActs")), "utility_acts")
    for key in obj:
        meant = access_misspelling(key) if isinstance(key, str) else None
        if meant is not None:
            raise ValidationError(f"field {key!r} is not understood; did you mean {meant!r}? (a misspelled access "
                                  "field would leave the unit public)")
    acl = check_tags(obj.get("acl"), "field 'acl'")
    values["region"] = check_region(values["region"], "field 'region'")
    eff_from, eff_to = (_check_date(obj.get(n), n) for n in _DATE_FIELDS)
    if eff_from and eff_to and eff_to < eff_from:
        raise ValidationError(f"effective_to {eff_to} is before effective_from {eff_from}")
    facts, labels = [], {}
    triples = obj.get("triples", obj.get("facts", [])) or []
    if not isinstance(triples, list):
        raise ValidationError("field 'triples' must be a list")
    for i, t in enumerate(triples):
        if isinstance(t, dict):
            t = [t.get("subject"), t.get("relation"), t.get("object")] + (
                [t["confidence"]] if "confidence" in t else [])
        if not isinstance(t, list) or len(t) not in (3, 4) or not all(isinstance(x, str) for x in t[:3]):
            raise ValidationError(f"triples[{i}] must be [subject, relation, object] or with a confidence")
        conf = check_unit_float(t[3], f"triples[{i}] confidence") if len(t) == 4 else 1.0
        s, r, o = vocab.orient(t[0], t[1], t[2])
        facts.append(Fact(s, r, o, conf))
        labels.setdefault(s, t[0].strip())
        labels.setdefault(o, t[2].strip())
    known = set(_TEXT_FIELDS) | {"id", "unit_id", "utility_acts", "utilityActs", "acl", "triples", "facts", *_DATE_FIELDS}
    extra = {k: v for k, v in obj.items() if k not in known}
    if "features" in extra:
        _check_features(extra["features"])
    unit = Unit(uid.strip(), utility_acts=acts, acl=acl, effective_from=eff_from, effective_to=eff_to,
                extra=json.dumps(extra, sort_keys=True), **{**values, "source": values["source"] or source})
    return unit, facts, labels


# only a \uD800-\uDFFF escape can put a lone surrogate into a parsed JSON string
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _lone_surrogate(value: Any, where: str = "") -> str | None:
    """Where a parsed JSON value holds a string with a lone surrogate (an unpaired ``\\uD800`` escape).

    >>> _lone_surrogate({"id": "u", "triples": [["a", "r", "b\\ud800"]]})
    "field 'triples'[0][2]"
    >>> _lone_surrogate({"id": "ok"}) is None
    True
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where or "the value"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = _lone_surrogate(key, f"a key of {where or 'the object'}") or _lone_surrogate(
                item, f"{where}[{key!r}]" if where else f"field {key!r}")
            if found:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _lone_surrogate(item, f"{where}[{i}]")
            if found:
                return found
    return None


def read_jsonl(path: str, source: str, vocab: Vocabulary) -> Iterator[Batch]:
    """One knowledge unit per line (JSON Lines)."""
    batch = Batch(source)
    seen_ids: dict[str, int] = {}
    any_line = False
    with open(path, "rb") as fh:
        for line_no, raw in enumerate(fh, 1):
            batch.size += len(raw)
            text, bad = _decode(raw, source, line_no)
            if bad is not None:
                batch.rejects.append(bad)
                continue
            if not text.strip():
                continue
            any_line = True
            try:
                obj = json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(
                    ValidationError(f"{c} is not a finite number")))
            except json.JSONDecodeError as exc:
                batch.rejects.append(_reject(source, line_no, exc.colno, f"invalid JSON: {exc.msg}", text.rstrip()))
                continue
            except ValidationError as exc:
                batch.rejects.append(_reject(source, line_no, 1, str(exc), text.rstrip()))
                continue
            except RecursionError:
                batch.rejects.append(_reject(source, line_no, 1, "JSON nested too deeply to read", text[:200]))
                continue
            except ValueError as exc:   # e.g. an integer of more than 4,300 digits
                batch.rejects.append(_reject(source, line_no, 1, f"invalid JSON: {exc}", text[:200]))
                continue
            where = _lone_surrogate(obj) if _SURROGATE_ESCAPE.search(text) else None
            if where is not None:
                batch.rejects.append(_reject(source, line_no, 1, f"{where} is not valid Unicode: a lone surrogate "
                                             "(an unpaired \\uD800-\\uDFFF escape)", text.rstrip()))
                continue
            try:
                unit, facts, labels = parse_unit(obj, source, vocab)
            except ValidationError as exc:
                batch.rejects.append(_reject(source, line_no, 1, str(exc), text.rstrip()))
                continue
            if unit.id in seen_ids:
                batch.rejects.append(_reject(source, line_no, 1, f"unit id {unit.id!r} already appears on line "
                                             f"{seen_ids[unit.id]}", text.rstrip()))
                continue
            seen_ids[unit.id] = line_no
            batch.units.append((unit, line_no))
            for f in facts:
                batch.add_fact(f, line_no, unit.id)
            for k, v in labels.items():
                batch.labels.setdefault(k, v)
            if len(batch.units) >= CHUNK:
                yield batch
                batch = Batch(source)
    if not any_line and not batch.rejects:
        batch.rejects.append(_reject(source, 1, 1, "the file holds no knowledge units", ""))
    yield batch
