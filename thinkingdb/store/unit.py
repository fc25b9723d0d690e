"""A knowledge unit as the store holds it: the seed fields, provenance, access control and validity dates.

Loaded by what reads or writes units (ingest, search, access), not by a question on facts.
"""

from __future__ import annotations

from ..values import Value

UNIT_FIELDS = ("role", "topic", "claim", "condition", "procedure", "utility_acts", "utility_note",
               "source", "chunk", "acl", "region", "effective_from", "effective_to")

class Unit(Value):
    """A knowledge unit: the seed fields, provenance, access control and validity dates (a frozen
    :class:`~thinkingdb.values.Value`)."""

    __slots__ = ("id", "role", "topic", "claim", "condition", "procedure", "utility_acts", "utility_note", "source",
                 "chunk", "acl", "region", "effective_from", "effective_to", "extra")
    id: str
    role: str
    topic: str
    claim: str
    condition: str
    procedure: str
    utility_acts: tuple[str, ...]
    utility_note: str
    source: str
    chunk: str
    acl: tuple[str, ...]
    region: str
    effective_from: str
    effective_to: str
    extra: str

    def __init__(self, id: str, role: str = "", topic: str = "", claim: str = "", condition: str = "",
                 procedure: str = "", utility_acts: tuple[str, ...] = (), utility_note: str = "", source: str = "",
                 chunk: str = "", acl: tuple[str, ...] = (), region: str = "", effective_from: str = "",
                 effective_to: str = "", extra: str = "{}") -> None:
        _set = object.__setattr__
        _set(self, "id", id)
        _set(self, "role", role)
        _set(self, "topic", topic)
        _set(self, "claim", claim)
        _set(self, "condition", condition)
        _set(self, "procedure", procedure)
        _set(self, "utility_acts", utility_acts)
        _set(self, "utility_note", utility_note)
        _set(self, "source", source)
        _set(self, "chunk", chunk)
        _set(self, "acl", acl)
        _set(self, "region", region)
        _set(self, "effective_from", effective_from)
        _set(self, "effective_to", effective_to)
        _set(self, "extra", extra)

    def text_fields(self) -> dict[str, str]:
        """The searchable fields (utility_acts joined by spaces, as DS009 indexes them).

        >>> Unit("u1", topic="TLS", utility_acts=("secure", "audit")).text_fields()
        {'topic': 'TLS', 'utility_acts': 'secure audit'}
        """
        out = {"role": self.role, "topic": self.topic, "claim": self.claim, "condition": self.condition,
               "procedure": self.procedure, "utility_acts": " ".join(self.utility_acts),
               "utility_note": self.utility_note}
        return {k: v for k, v in out.items() if v}


_UNIT_COLUMNS = ("id, role, topic, claim, condition, procedure, utility_acts, utility_note, source, chunk, acl, "
                 "region, effective_from, effective_to, extra")


def _unit(row) -> Unit:
    import json
    (uid, role, topic, claim, condition, procedure, acts, note, source, chunk, acl, region, eff_from, eff_to,
     extra) = row
    return Unit(uid, role or "", topic or "", claim or "", condition or "", procedure or "",
                tuple(json.loads(acts or "[]")), note or "", source or "", chunk or "", tuple(json.loads(acl or "[]")),
                region or "", eff_from or "", eff_to or "", extra or "{}")
