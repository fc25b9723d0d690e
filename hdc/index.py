"""The HDC index: unit field vectors in packed matrices, scored against a query by Hamming scans.

The query text is encoded once with :func:`hdc.encode_text` (compared with topic and claim) and once
as a bag of tokens (compared with acts); the role term counts only when the caller names a role. The
scores and their weights are :mod:`hdc.scores`'.
"""

from __future__ import annotations

import hashlib
import json
from typing import IO, Collection, Iterable, Iterator, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from .builder import add_pairs, fork_index
from .encoders import TokenizerFn, UnitEncoder, UnitVectors, default_tokenizer, encode_role
from .errors import FieldError, IndexFormatError, ParamsError, UnknownUnitError
from .ops import batch_hamming, similarity
from .params import HDCParams
from .persist import PathOrFile, read_index_file, write_index_file
from .scores import FIELD_WEIGHTS, field_score, field_scores, final_score

__all__ = ["HDCIndex", "FIELD_WEIGHTS", "field_score", "final_score", "tokenizer_name"]

_MATRIX_FIELDS = ("topic", "claim", "acts")


def tokenizer_name(tokenizer: TokenizerFn | None) -> str:
    """The name recorded with a saved index to tell tokenizers apart.

    The qualified name of the tokenizer's function or class, followed by ``:`` and a digest of its
    settings when it has them: a ``fingerprint`` string, or a ``params()`` method returning a
    JSON-able record (as ``lexical.Tokenizer`` has).

    >>> tokenizer_name(None)
    'hdc.encoders.default_tokenizer'
    """
    tok = tokenizer or default_tokenizer
    kind = tok if hasattr(tok, "__qualname__") else type(tok)
    name = f"{kind.__module__}.{kind.__qualname__}"
    settings = getattr(tok, "fingerprint", None)
    if settings is None and callable(getattr(tok, "params", None)):
        settings = json.dumps(tok.params(), sort_keys=True, default=str)  # type: ignore[attr-defined]
    if settings is None:
        return name
    return f"{name}:{hashlib.blake2b(str(settings).encode('utf-8'), digest_size=8).hexdigest()}"


class HDCIndex:
    """Units as field vectors; top-k search by the final score.

    Accepted fields: ``role`` (str), ``topic``, ``claim``, ``procedure`` (merged into claim), ``acts``
    or ``utility_acts`` (str or list of str); ``condition`` and ``utility_note`` are ignored; any other
    name raises :class:`hdc.FieldError`. Re-adding an id replaces the unit.

    >>> idx = HDCIndex(HDCParams(dim=1024))
    >>> idx.add("a", {"topic": "laptop returns", "role": "policy"})
    >>> idx.add("b", {"topic": "shipping times"})
    >>> [uid for uid, _ in idx.search("laptop return", role="policy")]
    ['a']
    >>> len(idx), "b" in idx
    (2, True)
    """

    def __init__(self, params: HDCParams | None = None, tokenizer: TokenizerFn | None = None) -> None:
        if params is not None and not isinstance(params, HDCParams):
            raise ParamsError(f"params must be an HDCParams, got {type(params).__name__}")
        if tokenizer is not None and not callable(tokenizer):
            raise ParamsError(f"tokenizer must be callable, got {type(tokenizer).__name__}")
        self.params = params or HDCParams()
        self.tokenizer: TokenizerFn = tokenizer or default_tokenizer
        self._encoder = UnitEncoder(self.params, self.tokenizer)
        self._ids: list[str] = []
        self._slot: dict[str, int] = {}
        self._roles: list[str] = []
        self._role_code_of: dict[str, int] = {}
        # (allowed collection, its sorted slots, a boolean mask over the slots); see _filter
        self._filter_cache: tuple[Collection[str], npt.NDArray[np.intp], npt.NDArray[np.bool_]] | None = None
        self._alloc(16)

    # -- storage -----------------------------------------------------------------------------------

    def _alloc(self, capacity: int) -> None:
        words = self.params.words
        self._mat = {f: np.zeros((capacity, words), dtype=np.uint64) for f in _MATRIX_FIELDS}
        self._has = {f: np.zeros(capacity, dtype=bool) for f in _MATRIX_FIELDS}
        self._role = np.full(capacity, -1, dtype=np.int32)

    def _grow(self, need: int) -> None:
        capacity = self._role.shape[0]
        if need <= capacity:
            return
        n = len(self._ids)
        old_mat, old_has, old_role = self._mat, self._has, self._role
        self._alloc(max(need, 2 * capacity))
        for f in _MATRIX_FIELDS:
            self._mat[f][:n] = old_mat[f][:n]
            self._has[f][:n] = old_has[f][:n]
        self._role[:n] = old_role[:n]

    def _role_code(self, role: str | None) -> int:
        if role is None:
            return -1
        if role not in self._role_code_of:
            self._role_code_of[role] = len(self._roles)
            self._roles.append(role)
        return self._role_code_of[role]

    def _store(self, slot: int, vectors: UnitVectors) -> None:
        for f in _MATRIX_FIELDS:
            v = getattr(vectors, f)
            self._has[f][slot] = v is not None
            self._mat[f][slot] = 0 if v is None else v
        self._role[slot] = self._role_code(vectors.role)

    # -- mutation ----------------------------------------------------------------------------------

    def add(self, unit_id: str, fields: Mapping[str, str | Sequence[str]]) -> None:
        """Encode ``fields`` and store them under ``unit_id``, replacing any unit with that id.

        The unit is encoded before anything changes, so a bad field leaves the index as it was.
        """
        if not isinstance(unit_id, str):
            raise FieldError(f"unit ids are strings, got {type(unit_id).__name__}")
        if not isinstance(fields, Mapping):
            raise FieldError(f"unit fields must be a mapping, got {type(fields).__name__}")
        vectors = self._encoder.encode_unit(fields)
        slot = self._slot.get(unit_id)
        if slot is None:
            self._filter_cache = None  # a new slot: cached filters no longer cover every row
            slot = len(self._ids)
            self._grow(slot + 1)
            self._ids.append(unit_id)
            self._slot[unit_id] = slot
        self._store(slot, vectors)

    def add_many(self, units: Iterable[tuple[str, Mapping[str, str | Sequence[str]]]], *, batch_size: int = 1024) -> int:
        """:meth:`add` every ``(unit_id, fields)`` pair; the same vectors, several times faster.

        ``units`` is read lazily, ``batch_size`` pairs at a time, and each batch's texts are encoded
        together (:meth:`UnitEncoder.encode_batch`). A repeated id keeps its last fields. If any pair
        is refused (bad id or field), the index is put back as it was and the error is raised.
        Returns the number of pairs read.

        >>> idx = HDCIndex(HDCParams(dim=1024))
        >>> idx.add_many([("a", {"topic": "laptop returns"}), ("b", {"topic": "shipping times"})])
        2
        """
        return add_pairs(self, units, batch_size)

    fork = fork_index   # an independent copy to change while this one keeps serving (vectors copied)

    def update(self, unit_id: str, fields: Mapping[str, str | Sequence[str]]) -> None:
        """Replace the fields of an existing unit (all of them); unknown id: :class:`hdc.UnknownUnitError`."""
        if unit_id not in self._slot:
            raise UnknownUnitError(f"no unit {unit_id!r} in the HDC index")
        self.add(unit_id, fields)

    def remove(self, unit_id: str) -> None:
        """Remove a unit; unknown id: :class:`hdc.UnknownUnitError`. The last row fills the gap."""
        slot = self._slot.pop(unit_id, None)
        if slot is None:
            raise UnknownUnitError(f"no unit {unit_id!r} in the HDC index")
        self._filter_cache = None  # slots move
        last = len(self._ids) - 1
        if slot != last:
            moved = self._ids[last]
            self._ids[slot] = moved
            self._slot[moved] = slot
            for f in _MATRIX_FIELDS:
                self._mat[f][slot] = self._mat[f][last]
                self._has[f][slot] = self._has[f][last]
            self._role[slot] = self._role[last]
        self._ids.pop()
        for f in _MATRIX_FIELDS:
            self._has[f][last] = False
        self._role[last] = -1

    def discard(self, unit_id: str) -> bool:
        """Remove a unit if present; return whether it was."""
        if unit_id in self._slot:
            self.remove(unit_id)
            return True
        return False

    def clear(self) -> None:
        """Remove every unit (params and tokenizer stay)."""
        self._ids, self._slot, self._roles, self._role_code_of = [], {}, [], {}
        self._filter_cache = None
        self._alloc(16)

    # -- reading -----------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, unit_id: object) -> bool:
        return unit_id in self._slot

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._ids))

    def ids(self) -> list[str]:
        """The unit ids, sorted."""
        return sorted(self._ids)

    def vectors(self, unit_id: str) -> UnitVectors:
        """Copies of the stored field vectors of a unit."""
        slot = self._slot.get(unit_id)
        if slot is None:
            raise UnknownUnitError(f"no unit {unit_id!r} in the HDC index")
        got = {f: self._mat[f][slot].copy() if self._has[f][slot] else None for f in _MATRIX_FIELDS}
        code = int(self._role[slot])
        return UnitVectors(role=self._roles[code] if code >= 0 else None, **got)

    def stats(self) -> dict[str, object]:
        """Counts and sizes for traces and ``thinkingdb stats``."""
        n = len(self._ids)
        return {
            "units": n,
            "dim": self.params.dim,
            "roles": len({self._roles[c] for c in self._role[:n] if c >= 0}),
            "fields": {f: int(self._has[f][:n].sum()) for f in _MATRIX_FIELDS},
            "vector_bytes": n * self.params.words * 8 * len(_MATRIX_FIELDS),
        }

    # -- search ------------------------------------------------------------------------------------

    def _filter(self, allowed: Collection[str]) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
        """The sorted slots of the ``allowed`` ids and the same set as a mask over the slots.

        Turning ids into slots costs a dictionary lookup per id (tens of ms for 100k ids), so the
        result for an immutable collection (``frozenset``, ``tuple``) is kept and reused while the
        same object is passed again and no slot has changed; mutable collections are converted
        every time, since they may change between searches.
        """
        if isinstance(allowed, str):
            raise TypeError("allowed must be a collection of unit ids, not one string")
        cached = self._filter_cache
        if cached is not None and cached[0] is allowed:
            return cached[1], cached[2]
        slot = self._slot
        rows = np.unique(np.fromiter((slot[u] for u in allowed if u in slot), dtype=np.intp))
        mask = np.zeros(len(self._ids), dtype=bool)
        mask[rows] = True
        if isinstance(allowed, (frozenset, tuple)):
            self._filter_cache = (allowed, rows, mask)
        return rows, mask

    def _scores(self, query: str, rows: npt.NDArray[np.intp] | None, role: str | None) -> dict[str, npt.NDArray[np.float64]]:
        q = self._encoder.encode_query(query, role)
        n = len(self._ids)
        size = n if rows is None else rows.shape[0]
        sel = slice(0, n) if rows is None else rows
        dim = self.params.dim
        out: dict[str, npt.NDArray[np.float64]] = {}
        for f, vec in (("topic", q.text), ("claim", q.text), ("acts", q.bag)):
            if vec is None or not self._has[f][sel].any():
                out[f] = np.zeros(size)
                continue
            dist = batch_hamming(vec, self._mat[f][:n], rows=rows)
            out[f] = np.where(self._has[f][sel], field_scores(dist, dim), 0.0)
        role_scores = np.zeros(len(self._roles) + 1)  # the last entry serves code -1 (no role)
        if q.role is not None:
            for code, name in enumerate(self._roles):
                role_scores[code] = field_score(similarity(q.role, encode_role(name, self.params)))
        out["role"] = role_scores[self._role[sel]]
        return out

    def search(
        self,
        query: str,
        k: int = 10,
        allowed: Collection[str] | None = None,
        role: str | None = None,
        *,
        min_score: float = 0.0,
    ) -> list[tuple[str, float]]:
        """Top ``k`` units as ``(unit_id, final score in [0, 1])``, by score descending then id.

        ``allowed``: only these ids are scored (the filter comes before ranking, so a filtered unit
        can never appear or displace another). ``role``: adds the role term. Units scoring
        ``<= min_score`` (default 0) are not returned. Unrelated units score near 0 but, by chance,
        not always exactly 0 (one field's noise is ``max(0, N(0, 1/sqrt(dim)))``).
        """
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {type(query).__name__}")
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError(f"k must be an int >= 0, got {k!r}")
        if not np.isfinite(min_score):
            raise ValueError(f"min_score must be finite, got {min_score!r}")
        rows, mask = (None, None) if allowed is None else self._filter(allowed)
        if k == 0 or not self._ids or (rows is not None and rows.size == 0):
            return []
        # A filter keeping at least a quarter of the units is cheaper as a full scan and a mask than
        # as a gather of the allowed rows; a filtered unit scores 0 and cannot become a candidate.
        dense = rows is not None and rows.size * 4 >= len(self._ids)
        parts = self._scores(query, None if dense else rows, role)
        w = FIELD_WEIGHTS
        score = w["topic"] * parts["topic"] + w["claim"] * parts["claim"] + w["role"] * parts["role"] + w["acts"] * parts["acts"]
        np.minimum(score, 1.0, out=score)
        if dense:
            score[~mask] = 0.0
            rows = None
        cand = np.flatnonzero(score > max(0.0, min_score))
        if cand.size > k:
            kth = np.partition(score[cand], cand.size - k)[cand.size - k]
            cand = cand[score[cand] >= kth]  # keep ties at the cut so the id order decides
        slots = cand if rows is None else rows[cand]
        ranked = sorted(zip(score[cand].tolist(), (self._ids[s] for s in slots)), key=lambda t: (-t[0], t[1]))
        return [(uid, s) for s, uid in ranked[:k]]

    def explain(self, query: str, unit_id: str, role: str | None = None) -> dict[str, float]:
        """Field scores and final score of one unit for ``query`` (for traces).

        >>> idx = HDCIndex(HDCParams(dim=1024))
        >>> idx.add("a", {"topic": "laptop returns"})
        >>> idx.explain("laptop returns", "a")["topic"]
        1.0
        """
        slot = self._slot.get(unit_id)
        if slot is None:
            raise UnknownUnitError(f"no unit {unit_id!r} in the HDC index")
        parts = self._scores(query, np.array([slot], dtype=np.intp), role)
        got = {f: float(v[0]) for f, v in parts.items()}
        got["final"] = final_score(**got)
        return got

    # -- persistence -------------------------------------------------------------------------------

    def save(self, file: PathOrFile) -> None:
        """Write the index (numpy ``.npz``, no pickle, with a JSON params record) to a path or binary file."""
        n = len(self._ids)
        arrays = {f: self._mat[f][:n] for f in _MATRIX_FIELDS}
        arrays.update({f"has_{f}": self._has[f][:n] for f in _MATRIX_FIELDS})
        arrays["role_code"] = self._role[:n]
        record = {"params": self.params.to_dict(), "tokenizer": tokenizer_name(self.tokenizer), "roles": self._roles}
        write_index_file(file, record, self._ids, arrays)

    @classmethod
    def load(
        cls, file: PathOrFile | IO[bytes], tokenizer: TokenizerFn | None = None, params: HDCParams | None = None
    ) -> HDCIndex:
        """Read an index written by :meth:`save`.

        Refused with :class:`hdc.IndexFormatError` (the message says to rebuild) when the file is not
        an HDC index, has another format or encoder version, was built with another tokenizer than
        ``tokenizer``, or with params other than ``params`` (when given).
        """
        record, ids, arrays = read_index_file(file, _MATRIX_FIELDS)
        try:
            saved = HDCParams.from_dict(record["params"])
        except (TypeError, ValueError) as exc:
            raise IndexFormatError(f"saved HDC params are invalid ({exc}); rebuild the index") from exc
        if params is not None and params != saved:
            diff = ", ".join(
                f"{k}: saved {v!r}, expected {params.to_dict()[k]!r}"
                for k, v in saved.to_dict().items()
                if params.to_dict()[k] != v
            )
            raise IndexFormatError(f"HDC index was built with other params ({diff}); rebuild the index")
        want = tokenizer_name(tokenizer)
        if record.get("tokenizer") != want:
            raise IndexFormatError(
                f"HDC index was built with tokenizer {record.get('tokenizer')!r}, not {want!r}; rebuild the index"
            )
        roles = record.get("roles")
        n = len(ids)
        if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles) or len(set(roles)) != len(roles):
            raise IndexFormatError("HDC index role table is corrupt; rebuild the index")
        codes = arrays["role_code"]
        if codes.shape != (n,) or (n and (codes.min() < -1 or codes.max() >= len(roles))):
            raise IndexFormatError("HDC index role codes are corrupt; rebuild the index")
        for f in _MATRIX_FIELDS:
            if arrays[f].shape != (n, saved.words) or arrays[f"has_{f}"].shape != (n,):
                raise IndexFormatError(f"HDC index field {f!r} has the wrong shape; rebuild the index")
        index = cls(saved, tokenizer)
        index._grow(max(n, 16))
        for f in _MATRIX_FIELDS:
            index._mat[f][:n] = arrays[f]
            index._has[f][:n] = arrays[f"has_{f}"]
        index._role[:n] = codes
        index._ids = list(ids)
        index._slot = {u: i for i, u in enumerate(ids)}
        index._roles = list(roles)
        index._role_code_of = {r: i for i, r in enumerate(roles)}
        return index
