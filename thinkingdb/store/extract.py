"""Free-text fact extraction: split text into sentences, find one relation phrase per sentence, and
return the subject and object around it as a fact, with the sentence and its character span.

The phrases are those of SPEC §3 — uses, provides, depends on, is part of (with makes up / is
included in, and the part-whole phrases contains / consists of / is composed of / comprises /
includes / has part, read the other way), is a/an instance of, is a/an, is relevant for / helps
with / is useful for, supports / enables, mentions, is about, causes / triggered / leads to — in
their singular, plural and past forms, a few passives that flip the direction (``is used by``,
``is caused by``), plus any user-defined ``phrase -> relation`` mapping (a relation written ``^r``
flips the direction). What extraction deliberately refuses:

* questions, negated sentences (``does not use``, ``never causes``) and sentences with no phrase;
* subjects that are bare pronouns (``It uses Lark.``) — there is nothing to resolve them against;
* subjects or objects longer than :data:`MAX_WORDS` words (a long clause is not a symbol).

Leading articles and ``that`` / ``the fact that`` are dropped; the subject is the last clause before
the phrase (after a comma), and the object stops at the first comma, semicolon, colon, parenthesis or
clause word (``and``, ``which``, ``because``, ``for``, ...), so a fact never runs into the next clause.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator, Mapping

MAX_WORDS = 8
WINDOW = 240   # characters around a phrase searched for its subject and object (keeps long sentences linear)

# phrase (words separated by single spaces) -> relation; a leading "^" stores the fact reversed.
DEFAULT_PHRASES: dict[str, str] = {
    **dict.fromkeys(["uses", "use", "used", "is using", "are using", "makes use of", "make use of"], "uses"),
    **dict.fromkeys(["is used by", "are used by", "was used by", "were used by"], "^uses"),
    **dict.fromkeys(["provides", "provide", "provided", "offers", "offer"], "provides"),
    **dict.fromkeys(["is provided by", "are provided by"], "^provides"),
    **dict.fromkeys(["depends on", "depend on", "depended on", "is dependent on", "are dependent on",
                     "relies on", "rely on", "requires", "require"], "depends_on"),
    **dict.fromkeys(["is part of", "are part of", "was part of", "were part of", "is a part of",
                     "is an integral part of", "forms part of", "belongs to", "belong to",
                     "is a component of", "are components of", "is contained in", "are contained in",
                     "was contained in", "were contained in", "is included in", "are included in",
                     "makes up", "make up", "made up"], "part_of"),
    **dict.fromkeys(["contains", "contain", "contained", "consists of", "consist of", "is composed of",
                     "are composed of", "is made up of", "are made up of", "comprises", "comprise",
                     "includes", "include", "included", "has part", "have part", "has parts",
                     "have parts"], "^part_of"),
    **dict.fromkeys(["is an instance of", "is a instance of", "are instances of", "is an example of",
                     "is a kind of", "is a type of"], "instance_of"),
    **dict.fromkeys(["is a", "is an", "was a", "was an"], "is_a"),
    **dict.fromkeys(["is relevant for", "is relevant to", "are relevant for", "are relevant to", "helps with",
                     "help with", "helped with", "is useful for", "are useful for", "was useful for"],
                    "relevant_for"),
    **dict.fromkeys(["supports", "support", "supported", "enables", "enable", "enabled"], "supports"),
    **dict.fromkeys(["is supported by", "are supported by", "is enabled by", "are enabled by"], "^supports"),
    **dict.fromkeys(["mentions", "mention", "mentioned"], "mentions"),
    **dict.fromkeys(["is mentioned in", "are mentioned in", "was mentioned in"], "^mentions"),
    **dict.fromkeys(["is about", "are about", "was about", "deals with", "deal with"], "about"),
    **dict.fromkeys(["causes", "cause", "caused", "triggers", "trigger", "triggered", "leads to", "lead to",
                     "led to", "results in", "result in", "resulted in"], "causes"),
    **dict.fromkeys(["is caused by", "are caused by", "was caused by", "were caused by", "is triggered by",
                     "was triggered by", "are triggered by", "were triggered by"], "^causes"),
}

ABBREVIATIONS = frozenset("""dr mr mrs ms prof sr jr st vs etc cf fig figs no nos vol approx dept est inc ltd co
corp gen col lt sgt capt rev hon mt ave blvd al eq eqs ch sec""".split())
# Abbreviations that end a sentence when the next word is capitalised ("... and Acme Inc. It ...").
_MAY_END = frozenset({"etc", "inc", "ltd", "co", "corp", "al"})

_PRONOUNS = frozenset("the a an it this that these those they them he she we i you which who what there here one".split())
_ARTICLES = re.compile(r"^(?:(?:the\s+fact\s+that|that|the|a|an|this|these|those|also|then|thus|so|hence|therefore)\s+)+", re.I)
_NEGATION = re.compile(r"\b(?:not|never|no longer|n't|cannot|hardly)\s*$|n't\s*$", re.I)
_AUX_TAIL = re.compile(r"\s+(?:(?:also|often|usually|typically|directly|indirectly|always|mainly|mostly|still|"
                       r"can|could|may|might|will|would|should|must|does|do|did)\s*)+$", re.I)
_OBJECT_END = re.compile(r"\s*(?:[,;:()\[\]]|\s(?:and|or|but|which|who|that|because|since|when|while|if|for|"
                         r"so|unless|whereas|although|though|via|by|with|without|is|are|was|were|has|have)\s|\s[-\u2013\u2014]\s)", re.I)
_BULLET = re.compile(r"^[ \t]*(?:[-*+\u2022]|\d{1,3}[.)])[ \t]+")
_EDGE = "\"'`\u201c\u201d\u2018\u2019*_ \t\n"


@dataclass(frozen=True, order=True)
class Sentence:
    """A sentence and where it lies in the text (``text[start:end]``, before trimming)."""

    start: int
    end: int
    text: str


@dataclass(frozen=True, order=True)
class Extracted:
    """One fact found in text: subject and object as written (articles dropped), the canonical relation,
    the phrase that matched, and the sentence with its character span in the input."""

    subject: str
    relation: str
    object: str
    phrase: str
    sentence: str
    start: int
    end: int

    def detail(self) -> dict:
        """Provenance stored with the fact: the sentence and its span."""
        return {"sentence": self.sentence, "span": [self.start, self.end], "phrase": self.phrase}


_SENT_END = re.compile(r"[.!?]+[\"')\]\u201d\u2019]*(?=\s|$)|\n[ \t]*\n|\n(?=[ \t]*(?:[-*+\u2022]|\d{1,3}[.)])[ \t])")


def split_sentences(text: str) -> list[Sentence]:
    """Split text into sentences; abbreviations (Dr., e.g., U.S.), initials, decimals and dotted
    names (``example.com``) do not end a sentence; blank lines and list items always do.

    >>> [s.text for s in split_sentences("Dr. Smith uses Lark, e.g. for parsing. The U.S. Army uses radios! Ok?")]
    ['Dr. Smith uses Lark, e.g. for parsing.', 'The U.S. Army uses radios!', 'Ok?']
    >>> [s.text for s in split_sentences("Version 2.5 of nginx.org uses TLS 1.3.\\n\\n- a uses b\\n- c uses d")]
    ['Version 2.5 of nginx.org uses TLS 1.3.', 'a uses b', 'c uses d']
    """
    out: list[Sentence] = []
    start = 0
    for m in _SENT_END.finditer(text):
        end = m.end()
        if m.group()[0] == ".":
            i = m.start()                      # the word before the period, found backwards: linear overall
            while i > start and not text[i - 1].isspace():
                i -= 1
            token = text[i:m.start()].lower()
            bare = token.lstrip("(\"'\u201c")
            nxt = text[end:end + 40].lstrip()
            upper_next = bool(nxt) and (nxt[0].isupper() or nxt[0].isdigit() or nxt[0] in "\"'\u201c(")
            if not nxt:
                pass
            elif re.fullmatch(r"(?:[a-z]\.)+[a-z]", bare) or len(bare) == 1 and bare.isalpha():
                continue  # U.S., e.g, i.e, initials: never split
            elif bare in ABBREVIATIONS and not (bare in _MAY_END and upper_next):
                continue
        _add(out, text, start, end)
        start = end
    _add(out, text, start, len(text))
    return out


def _add(out: list[Sentence], text: str, start: int, end: int) -> None:
    piece = text[start:end]
    lead = len(piece) - len(piece.lstrip())
    body = piece.strip()
    bullet = _BULLET.match(body)
    if bullet:
        lead += bullet.end()
        body = body[bullet.end():].strip()
    if body:
        out.append(Sentence(start + lead, start + lead + len(body), body))


@lru_cache(maxsize=64)
def _matcher(extra: tuple[tuple[str, str], ...]) -> tuple[re.Pattern, dict[str, str]]:
    table = dict(DEFAULT_PHRASES)
    for phrase, rel in extra:
        table[" ".join(phrase.lower().split())] = rel
    phrases = sorted(table, key=lambda p: (-len(p), p))
    pattern = re.compile(r"(?<![\w-])(?:" + "|".join(r"\s+".join(map(re.escape, p.split())) for p in phrases)
                         + r")(?![\w-])", re.I)
    return pattern, table


def _clean(text: str) -> str:
    text = text.strip(_EDGE)
    prev = None
    while prev != text:
        prev = text
        text = _ARTICLES.sub("", text).strip(_EDGE)
    return text.rstrip(".!?").strip(_EDGE)


def _subject(before: str) -> str | None:
    if _NEGATION.search(before):
        return None
    before = _AUX_TAIL.sub("", " " + before).strip()
    if _NEGATION.search(before):
        return None
    for sep in (" the fact that ", " that ", ", "):  # the clause right before the phrase
        i = before.lower().rfind(sep)
        if i >= 0:
            before = before[i + len(sep):]
    return _clean(before) or None


def _object(after: str) -> str | None:
    if re.match(r"\s*(?:not|never)\b", after, re.I):
        return None
    m = _OBJECT_END.search(after)
    if m is not None:
        after = after[:m.start()]
    return _clean(after) or None


def _ok(term: str | None) -> bool:
    if not term:
        return False
    words = term.split()
    return len(words) <= MAX_WORDS and term.lower() not in _PRONOUNS and any(ch.isalnum() for ch in term)


def extract_sentence(sentence: str, phrases: Mapping[str, str] | None = None
                     ) -> tuple[str, str, str, str] | None:
    """``(subject, relation, object, phrase)`` from one sentence, or None.

    >>> extract_sentence("The fact that nginx depends on OpenSSL is well known.")
    ('nginx', 'depends_on', 'OpenSSL', 'depends on')
    >>> extract_sentence("A bug is caused by the race condition.")
    ('race condition', 'causes', 'bug', 'is caused by')
    >>> extract_sentence("It uses Lark.") is None, extract_sentence("Does nginx use TLS?") is None
    (True, True)
    >>> extract_sentence("Alice is maintained by Bob.", {"is maintained by": "^maintains"})
    ('Bob', 'maintains', 'Alice', 'is maintained by')
    """
    sentence = sentence.strip()
    if not sentence or sentence.rstrip("\"')\u201d").endswith("?"):
        return None
    pattern, table = _matcher(tuple(sorted((phrases or {}).items())))
    for m in pattern.finditer(sentence):
        phrase = " ".join(m.group().lower().split())
        before = sentence[max(0, m.start() - WINDOW):m.start()]
        subj, obj = _subject(before), _object(sentence[m.end():m.end() + WINDOW])
        if not (_ok(subj) and _ok(obj)):
            if subj is None and _NEGATION.search(before):
                return None
            continue
        rel = table[phrase]
        if rel.startswith("^"):
            return obj, rel[1:], subj, phrase  # type: ignore[return-value]
        return subj, rel, obj, phrase  # type: ignore[return-value]
    return None


def extract(text: str, phrases: Mapping[str, str] | None = None) -> Iterator[Extracted]:
    """Every fact in ``text``, at most one per sentence, in order.

    >>> [(f.subject, f.relation, f.object, f.start, f.end) for f in extract("Dr. Who uses a TARDIS. Cats sleep.")]
    [('Dr. Who', 'uses', 'TARDIS', 0, 22)]
    """
    for s in split_sentences(text):
        found = extract_sentence(s.text, phrases)
        if found is not None:
            subj, rel, obj, phrase = found
            yield Extracted(subj, rel, obj, phrase, s.text, s.start, s.end)


__all__ = ["ABBREVIATIONS", "DEFAULT_PHRASES", "Extracted", "MAX_WORDS", "Sentence", "extract",
           "extract_sentence", "split_sentences"]
