"""Retrieval profiles: one pipeline, different settings (SPEC §7).

A :class:`Profile` is a frozen value validated in one place (``__post_init__``). The three built-in
profiles are the table of SPEC §7 and the seed "retrieval strategies":

=============  ===================================  ====================  ===  =====  ====
profile        lanes                                expansion             max  min    gap
=============  ===================================  ====================  ===  =====  ====
kb-fast        BM25                                 none                  3    0.30   0.50
kb-balanced    BM25, HDC when BM25 returns < 4      none                  7    0.15   0.35
kb-thinkingdb  BM25 (+HDC escalation) seeds         bounded closure, d=3  8    0.12   0.25
=============  ===================================  ====================  ===  =====  ====

Fusion weights: bm25 1.0, hdc 0.7, closure 0.85, agreement bonus 0.15; ``fusion = "rrf"`` switches to
reciprocal rank fusion with ``rrf_k = 60``.

Custom profiles come from a TOML file (stdlib :mod:`tomllib`): top-level keys override a ``base``
profile (default ``kb-balanced``); ``[weights]`` and ``[closure]`` are tables. Unknown keys, wrong
types, out-of-range or non-finite numbers are refused with a :class:`~thinkingdb.errors.ProfileError`
that names the key::

    name = "policy-strict"
    base = "kb-fast"
    max_results = 2
    gap = 0.6
    [weights]
    bm25 = 1.0

>>> get_profile("kb-fast").max_results, get_profile("kb-fast").hdc
(3, 'off')
>>> profile_from_toml('name = "x"\\nmin_score = 2.0').min_score
Traceback (most recent call last):
...
thinkingdb.errors.ProfileError: <toml>: key 'min_score': must be in [0, 1], got 2.0
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Mapping

from ..errors import ProfileError

__all__ = ["Profile", "Weights", "ClosureBounds", "BUILTIN", "get_profile", "profile_from_toml",
           "load_profile_file", "profile_names"]

HDC_MODES = ("off", "escalate", "always")
FUSIONS = ("weighted", "rrf")


def _number(key: str, value: Any, low: float, high: float, *, integer: bool = False,
            low_open: bool = False) -> float | int:
    """Check one number from outside; the error names the key.

    >>> _number("gap", 0.5, 0, 1)
    0.5
    >>> _number("gap", float("nan"), 0, 1)
    Traceback (most recent call last):
    ...
    thinkingdb.errors.ProfileError: key 'gap': must be a finite number, got nan
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProfileError(f"key {key!r}: must be {'an integer' if integer else 'a number'}, got {value!r}")
    if integer and not isinstance(value, int):
        raise ProfileError(f"key {key!r}: must be an integer, got {value!r}")
    if not math.isfinite(value):
        raise ProfileError(f"key {key!r}: must be a finite number, got {value!r}")
    if value < low or value > high or (low_open and value == low):
        lo = "(" if low_open else "["
        raise ProfileError(f"key {key!r}: must be in {lo}{low:g}, {high:g}], got {value!r}")
    return value


@dataclass(frozen=True, kw_only=True)
class Weights:
    """Fusion weights: ``fused = bm25·b + hdc·h + closure·c + agreement`` (when ≥ 2 lanes found it)."""

    bm25: float = 1.0
    hdc: float = 0.7
    closure: float = 0.85
    agreement: float = 0.15

    def __post_init__(self) -> None:
        for f in fields(self):
            _number(f"weights.{f.name}", getattr(self, f.name), 0.0, 10.0)


@dataclass(frozen=True, kw_only=True)
class ClosureBounds:
    """Bounds of the closure that kb-thinkingdb runs from the seeds (see :class:`~thinkingdb.model.Limits`).

    ``seed_units``: how many of the best lane units contribute their facts as seeds;
    ``partial_weight``: the factor on a proof that reaches the query from the seeds without answering it
    (an answering chain always outranks a partial one of the same score).
    """

    max_nodes: int = 256
    max_derived: int = 20_000
    timeout_ms: float = 200.0
    seed_units: int = 5
    partial_weight: float = 0.5

    def __post_init__(self) -> None:
        _number("closure.max_nodes", self.max_nodes, 1, 10**9, integer=True)
        _number("closure.max_derived", self.max_derived, 0, 10**9, integer=True)
        _number("closure.timeout_ms", self.timeout_ms, 0.0, 3_600_000.0, low_open=True)
        _number("closure.seed_units", self.seed_units, 0, 10_000, integer=True)
        _number("closure.partial_weight", self.partial_weight, 0.0, 1.0)


@dataclass(frozen=True, kw_only=True)
class Profile:
    """The settings of one run of the retrieval pipeline.

    ``hdc``: ``off``, ``escalate`` (HDC runs only when BM25 returns fewer than ``min_acceptable``
    candidates whose normalized score reaches ``min_score``) or ``always``. ``expansion_depth``: 0 skips
    the closure; otherwise the closure's ``max_depth``. ``candidates``: hits taken from each lane.
    ``decompose``: split a query of at least ``decompose_threshold`` content words into sub-queries
    for the BM25 lane, with ``intersection_bonus`` for units several sub-queries find (see
    :mod:`thinkingdb.retrieval.decompose`). ``alignment``: order the returned units by the SSM-Search RSI
    first and the classical score second (see :mod:`thinkingdb.retrieval.alignment`); scores are unchanged.

    >>> Profile(name="p", max_results=0)
    Traceback (most recent call last):
    ...
    thinkingdb.errors.ProfileError: key 'max_results': must be in [1, 10000], got 0
    """

    name: str
    bm25: bool = True
    hdc: str = "escalate"
    min_acceptable: int = 4
    expansion_depth: int = 0
    max_results: int = 7
    min_score: float = 0.15
    gap: float = 0.35
    candidates: int = 50
    fusion: str = "weighted"
    rrf_k: int = 60
    decompose: bool = False
    decompose_threshold: int = 4
    intersection_bonus: float = 0.25
    alignment: bool = False
    weights: Weights = field(default_factory=Weights)
    closure: ClosureBounds = field(default_factory=ClosureBounds)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ProfileError(f"key 'name': must be a non-empty string, got {self.name!r}")
        for key in ("bm25", "decompose", "alignment"):
            if not isinstance(getattr(self, key), bool):
                raise ProfileError(f"key {key!r}: must be true or false, got {getattr(self, key)!r}")
        if self.hdc not in HDC_MODES:
            raise ProfileError(f"key 'hdc': must be one of {', '.join(HDC_MODES)}, got {self.hdc!r}")
        if self.fusion not in FUSIONS:
            raise ProfileError(f"key 'fusion': must be one of {', '.join(FUSIONS)}, got {self.fusion!r}")
        _number("min_acceptable", self.min_acceptable, 0, 10_000, integer=True)
        _number("expansion_depth", self.expansion_depth, 0, 16, integer=True)
        _number("max_results", self.max_results, 1, 10_000, integer=True)
        _number("min_score", self.min_score, 0.0, 1.0)
        _number("gap", self.gap, 0.0, 1.0)
        _number("candidates", self.candidates, 1, 100_000, integer=True)
        _number("rrf_k", self.rrf_k, 1, 100_000, integer=True)
        _number("decompose_threshold", self.decompose_threshold, 2, 64, integer=True)
        _number("intersection_bonus", self.intersection_bonus, 0.0, 10.0)
        if not self.bm25 and self.hdc == "off":
            raise ProfileError("key 'hdc': a profile with bm25 = false needs hdc = \"always\"")
        if not self.bm25 and self.hdc == "escalate":
            raise ProfileError("key 'hdc': \"escalate\" means after BM25, so it needs bm25 = true")
        if not isinstance(self.weights, Weights) or not isinstance(self.closure, ClosureBounds):
            raise ProfileError("keys 'weights' and 'closure' must be tables")

    @property
    def lanes(self) -> tuple[str, ...]:
        """The lanes this profile may run, in pipeline order.

        >>> BUILTIN["kb-thinkingdb"].lanes
        ('bm25', 'hdc', 'closure')
        """
        out = (("bm25",) if self.bm25 else ()) + (("hdc",) if self.hdc != "off" else ())
        return out + (("closure",) if self.expansion_depth > 0 else ())

    def to_json(self) -> dict:
        """Every parameter as JSON (recorded in each search trace).

        >>> BUILTIN["kb-fast"].to_json()["gap"]
        0.5
        """
        return asdict(self)


BUILTIN: Mapping[str, Profile] = {
    "kb-fast": Profile(name="kb-fast", hdc="off", max_results=3, min_score=0.30, gap=0.50),
    "kb-balanced": Profile(name="kb-balanced", hdc="escalate", min_acceptable=4, max_results=7,
                           min_score=0.15, gap=0.35),
    "kb-thinkingdb": Profile(name="kb-thinkingdb", hdc="escalate", min_acceptable=4, expansion_depth=3,
                             max_results=8, min_score=0.12, gap=0.25),
}


def profile_names() -> list[str]:
    """The built-in profile names.

    >>> profile_names()
    ['kb-balanced', 'kb-fast', 'kb-thinkingdb']
    """
    return sorted(BUILTIN)


def get_profile(profile: str | Profile) -> Profile:
    """A built-in profile by name (a :class:`Profile` is returned as is).

    >>> get_profile("kb-thinkingdb").expansion_depth
    3
    >>> get_profile("kb-slow")
    Traceback (most recent call last):
    ...
    thinkingdb.errors.ProfileError: unknown profile 'kb-slow'; built-in profiles: kb-balanced, kb-fast, kb-thinkingdb
    """
    if isinstance(profile, Profile):
        return profile
    try:
        return BUILTIN[profile]
    except (KeyError, TypeError):
        raise ProfileError(f"unknown profile {profile!r}; built-in profiles: {', '.join(profile_names())}") from None


_TOP_KEYS = {f.name for f in fields(Profile)} - {"weights", "closure"} | {"base"}
_TABLES = {"weights": Weights, "closure": ClosureBounds}


def _table(key: str, value: Any, cls: type, base: Any) -> Any:
    if not isinstance(value, dict):
        raise ProfileError(f"key {key!r}: must be a table, got {value!r}")
    known = {f.name for f in fields(cls)}
    for k in value:
        if k not in known:
            raise ProfileError(f"key '{key}.{k}': unknown key; known keys: {', '.join(sorted(known))}")
    return replace(base, **value)


def profile_from_mapping(data: Mapping[str, Any]) -> Profile:
    """Build a profile from parsed TOML; keys not given keep the ``base`` profile's values.

    >>> profile_from_mapping({"name": "strict", "base": "kb-fast", "max_results": 1}).min_score
    0.3
    """
    for k in data:
        if k not in _TOP_KEYS and k not in _TABLES:
            raise ProfileError(f"key {k!r}: unknown key; known keys: {', '.join(sorted(_TOP_KEYS | set(_TABLES)))}")
    base_name = data.get("base", "kb-balanced")
    if not isinstance(base_name, str):
        raise ProfileError(f"key 'base': must be a profile name, got {base_name!r}")
    base = get_profile(base_name)
    values = {k: v for k, v in data.items() if k != "base" and k not in _TABLES}
    for k, cls in _TABLES.items():
        if k in data:
            values[k] = _table(k, data[k], cls, getattr(base, k))
    values.setdefault("name", "custom")
    return replace(base, **values)


def profile_from_toml(text: str, source: str = "<toml>", *, default_name: str = "custom") -> Profile:
    """Parse and validate a profile written in TOML; errors name ``source`` and the key.

    >>> profile_from_toml('name = "deep"\\nbase = "kb-thinkingdb"\\n[closure]\\nmax_nodes = 64').closure.max_nodes
    64
    >>> profile_from_toml('name = "x"\\nmax_result = 3')
    Traceback (most recent call last):
    ...
    thinkingdb.errors.ProfileError: <toml>: key 'max_result': unknown key; known keys: alignment, base, bm25, candidates, closure, decompose, decompose_threshold, expansion_depth, fusion, gap, hdc, intersection_bonus, max_results, min_acceptable, min_score, name, rrf_k, weights
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{source}: not valid TOML: {exc}") from None
    data.setdefault("name", default_name)
    try:
        return profile_from_mapping(data)
    except ProfileError as exc:
        raise ProfileError(f"{source}: {exc}") from None
    except TypeError as exc:  # replace() with a value of the wrong kind
        raise ProfileError(f"{source}: {exc}") from None


def load_profile_file(path: str) -> Profile:
    """Read a TOML profile file (the ``name`` defaults to the file name without ``.toml``)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read profile: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ProfileError(f"{path}: not UTF-8 text") from None
    return profile_from_toml(text, path, default_name=os.path.splitext(os.path.basename(path))[0] or "custom")
