"""Who is calling the server: a :class:`Principal` (an API key's id and name, its caller, whether it may
write), the narrower caller a request may ask to look as, and the errors of authentication and
authorization::

    ThinkingDBError
    ├── Unauthorized (PermissionError)   no key, or an unknown or revoked one
    ├── Forbidden (PermissionError)      a valid key that may not do this
    └── NotFound (LookupError)           no such unit or symbol for this caller

:data:`ANONYMOUS` is the principal of a server without keys.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ThinkingDBError
from ..store.access import Caller

__all__ = ["ANONYMOUS", "Forbidden", "NotFound", "Principal", "Unauthorized"]


class Unauthorized(ThinkingDBError, PermissionError):
    """No API key, or one that is unknown or revoked."""


class Forbidden(ThinkingDBError, PermissionError):
    """A valid key that may not do this (write without the writer flag, look as a wider caller)."""


class NotFound(ThinkingDBError, LookupError):
    """No such unit or symbol for this caller (a hidden one is not found either)."""


@dataclass(frozen=True)
class Principal:
    """Who is calling: the key's id and name, its caller, and whether it may write."""

    key_id: str
    name: str
    caller: Caller
    writer: bool = False

    def narrow(self, data: object) -> Caller:
        """The caller a request asks to look as: the key's own, or a narrower one (a subset of its tags;
        its region or none). A wider caller is refused.

        >>> p = Principal("k", "luna", Caller(tags=("a", "b"), region="eu"))
        >>> p.narrow({"tags": ["a"]})
        Caller(tags=('a',), region='')
        >>> p.narrow({"tags": ["c"]})
        Traceback (most recent call last):
        ...
        thinkingdb.serve.principal.Forbidden: the key 'luna' may not look as a caller with tag(s) c
        """
        if data is None:
            return self.caller
        want = Caller.from_json(data)
        extra = sorted(set(want.tags) - set(self.caller.tags))
        if extra:
            raise Forbidden(f"the key {self.name!r} may not look as a caller with tag(s) {', '.join(extra)}")
        if want.region not in ("", self.caller.region):
            raise Forbidden(f"the key {self.name!r} may not look as a caller of region {want.region!r}")
        return want


ANONYMOUS = Principal("-", "anonymous", Caller())
