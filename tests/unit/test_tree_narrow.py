"""tree_stream._narrow decides whether a tree line may be cut by slicing (every character printable and
one column wide, as table.fit measures them). Its pattern of known characters grows as it meets them
and stops growing at a limit: its answer must be the plain rule's in every state."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from harnesskit.cli import tree_stream
from harnesskit.cli.table import char_width

CHARS = st.one_of(st.sampled_from(list("ab →…✗é日本語\t\n\u0301\u00a0\u200b\u2028ｱ한\U0001f600│")),
                  st.characters(min_codepoint=0x20, max_codepoint=0x2fff))


def rule(text: str) -> bool:
    return text.isprintable() and all(char_width(c) == 1 for c in text)


@settings(max_examples=400, deadline=None)
@given(texts=st.lists(st.text(CHARS, max_size=40), min_size=1, max_size=20))
def test_narrow_is_the_rule(texts: list[str]) -> None:
    for text in texts:
        assert tree_stream._narrow(text) == rule(text), text


def test_narrow_past_the_limit(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(tree_stream, "_KNOWN_LIMIT", 2)
    monkeypatch.setattr(tree_stream, "_known", [])
    monkeypatch.setattr(tree_stream, "_one_column", re.compile("[\\x20-\\x7e]*"))
    texts = ["a→b", "é…", "✗ x", "日本", "x\u0301", "plain", "ü→é✗…", "tab\there"]
    assert [tree_stream._narrow(t) for t in texts] == [rule(t) for t in texts] == [
        True, True, True, False, False, True, True, False]
    assert len(tree_stream._known) == 2
