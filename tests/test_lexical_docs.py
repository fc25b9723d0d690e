"""The examples of docs/lexical.md run as doctests, and its stopword list is the shipped one."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

from lexical import DEFAULT_STOPWORDS, tokenize

DOC = Path(__file__).resolve().parent.parent / "docs" / "lexical.md"


def test_doc_examples_run() -> None:
    result = doctest.testfile(str(DOC), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 5 and result.failed == 0


def test_doc_stopword_list_is_the_default() -> None:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("### Stopwords", 1)[1].split("```", 2)[1]
    assert set(block.split()) == DEFAULT_STOPWORDS


def test_doc_token_table() -> None:
    text = DOC.read_text(encoding="utf-8")
    table = text.split("| input | terms (default tokenizer) |", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| `(.+?)` \| (?:`(.*?)`|nothing)", table, flags=re.M)
    assert len(rows) >= 8
    for source, expected in rows:
        for variant in source.split("` / `"):
            assert " ".join(tokenize(variant)) == expected, variant
