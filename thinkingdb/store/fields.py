"""The access fields of a knowledge unit, checked the same way by every reader.

An access field that is misspelled or ill-formed must never turn a restricted unit into a public one,
so the readers refuse, rather than ignore or keep as metadata:

* a key that looks like an access field but is not spelled exactly (``ACL``, ``acl_tags``, ``Region``,
  ``valid_to``, ``access``): :func:`access_misspelling` names the field meant;
* an ``acl`` tag that is empty, all blanks, or holds quotes, brackets, commas or blanks (``" "``,
  ``'"hr:secret"'``): :func:`check_tags`;
* a ``region`` that is not a plain string without blanks inside: :func:`check_region`.

>>> access_misspelling("acl_tags"), access_misspelling("acl"), access_misspelling("title")
('acl', None, None)
>>> check_tags(["hr:secret", " Support:EU "], "acl")
('hr:secret', 'Support:EU')
>>> check_tags([" "], "acl")
Traceback (most recent call last):
...
thinkingdb.errors.ValidationError: acl: an empty tag (a unit with no tags is public; leave the field out for that)
"""

from __future__ import annotations

import re

from ..errors import ValidationError

__all__ = ["ACCESS_FIELDS", "access_misspelling", "check_region", "check_tags"]

ACCESS_FIELDS = ("acl", "region", "effective_from", "effective_to")

# Spellings (case-folded, without "_", "-", blanks) that mean an access field but are not its name.
_MEANT = {
    **dict.fromkeys(["acl", "acls", "acltag", "acltags", "access", "accesstags", "accesscontrol", "accesslist",
                     "allow", "allowed", "permissions", "visibility", "restricted", "audience",
                     "readers"], "acl"),
    **dict.fromkeys(["region", "regions", "jurisdiction"], "region"),
    **dict.fromkeys(["effectivefrom", "validfrom", "effectivestart", "validsince"], "effective_from"),
    **dict.fromkeys(["effectiveto", "validto", "validuntil", "effectiveuntil", "effectiveend", "expires",
                     "expiry", "expiration"], "effective_to"),
}
_BAD_TAG = re.compile(r"[\s\"'`,;\[\]{}()<>\\]|[\x00-\x1f\x7f]")


def access_misspelling(key: str) -> str | None:
    """The access field ``key`` most likely means when it is not exactly that field's name, else None."""
    meant = _MEANT.get(re.sub(r"[\W_]+", "", key.casefold()))
    return None if meant is None or meant == key else meant


def check_tags(value: object, name: str = "acl") -> tuple[str, ...]:
    """Acl tags as a tuple of trimmed strings; refuses empty, blank or ill-formed tags.

    >>> check_tags("hr:secret", "acl")
    ('hr:secret',)
    >>> check_tags(['"hr:secret"'], "acl")
    Traceback (most recent call last):
    ...
    thinkingdb.errors.ValidationError: acl: tag '"hr:secret"' holds a quote, bracket, comma or blank; write tags bare, e.g. hr:secret
    """
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(t, str) for t in items):
        raise ValidationError(f"{name}: must be a list of tag strings, got {value!r}")
    if not items:
        raise ValidationError(f"{name}: an empty list (a unit with no tags is public; leave the field out for that)")
    out = []
    for tag in items:
        t = tag.strip()
        if not t:
            raise ValidationError(f"{name}: an empty tag (a unit with no tags is public; leave the field out for that)")
        if _BAD_TAG.search(t):
            raise ValidationError(f"{name}: tag {tag!r} holds a quote, bracket, comma or blank; write tags bare, "
                                  "e.g. hr:secret")
        out.append(t)
    return tuple(out)


def check_region(value: object, name: str = "region") -> str:
    """A region as a trimmed string (``""``: every region); refuses non-strings and ill-formed names.

    >>> check_region(" EU "), check_region(None)
    ('EU', '')
    """
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValidationError(f"{name}: must be a string, got {type(value).__name__}")
    v = value.strip()
    if v and _BAD_TAG.search(v):
        raise ValidationError(f"{name}: {value!r} holds a quote, bracket, comma or blank; write one region, e.g. EU")
    return v
