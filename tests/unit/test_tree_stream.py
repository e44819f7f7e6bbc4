"""`inspect --tree` of a v3 file is drawn from one streamed read (kinds and the start of each summary
kept, no entry read twice): it must print exactly what the drawing of the indexed file prints, with
the same warnings, on the fixtures and on damaged copies of them, at any width."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from differential import KINDS, SEEDS, mutate
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from harnesskit.cli import inspect as cli_inspect
from harnesskit.cli.output import Checked, _unsafe
from harnesskit.session.index import load_for_continue
from harnesskit.session.loader import SessionError
from harnesskit.session.stream import open_stream

V3_SEEDS = [seed for seed in SEEDS if "v3" in seed.parts]
SETTINGS = settings(max_examples=int(os.environ.get("HARNESSKIT_EXAMPLES", "60")), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
ops = st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 1 << 20), st.integers(0, 1 << 20)),
               max_size=3)


def text_of(lines: object) -> list[str]:
    out: list[str] = []
    for item in lines:  # type: ignore[attr-defined]
        if isinstance(item, Checked):  # a chunk emit's guard would not change (drawn from `visible` text)
            assert not _unsafe(item.data)
            item = item.data
        out += item.decode().split("\n")[:-1] if isinstance(item, bytes) else [item]
    return out


def both(path: Path, width: int, monkeypatch: pytest.MonkeyPatch) -> tuple[tuple, tuple] | None:
    warned: list[str] = []
    monkeypatch.setattr(cli_inspect, "warn_diagnostic", lambda where, d: warned.append(f"{d.line} {d.reason}"))
    try:
        stream = open_stream(path)
    except SessionError:
        return None
    if stream.dialect.legacy:
        stream.close()
        return None
    streamed = text_of(cli_inspect.streamed_tree_lines(stream, width)), list(warned)
    session = load_for_continue(path)
    indexed = text_of(cli_inspect.tree_lines(session, None, session.tree.leaf_id, width, False))
    return streamed, (indexed, [f"{d.line} {d.reason}" for d in session.diagnostics])


@SETTINGS
@given(seed=st.sampled_from(V3_SEEDS), damage=ops, width=st.sampled_from([12, 40, 80, 200]))
@example(seed=V3_SEEDS[0], damage=[("duplicate", 3, 0)], width=80)
@example(seed=V3_SEEDS[0], damage=[("swap", 2, 5)], width=40)
def test_the_streamed_tree_is_the_indexed_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: Path,
                                               damage: list, width: int) -> None:
    path = tmp_path / "case.jsonl"
    path.write_bytes(mutate(seed.read_bytes(), damage))
    result = both(path, width, monkeypatch)
    if result is not None:
        streamed, indexed = result
        assert streamed == indexed


def test_hostile_and_wide_text_draws_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import orjson

    lines = [{"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/"}]
    texts = ["\x1b]0;pwned\x07 and more", "漢字" * 60, "e\u0301" * 90, "tab\there\nnew line", "\u009b2J" * 3]
    parent = None
    for i, text in enumerate(texts):
        entry_id = f"\x1b[{i}" if i == 1 else f"a{i:07x}"
        lines.append({"type": "message", "id": entry_id, "parentId": parent, "timestamp": f"2026-01-01T00:00:0{i}Z",
                      "message": {"role": "user", "content": text}})
        parent = entry_id
    lines.append({"type": "message", "id": "b0000000", "parentId": "a0000000", "timestamp": "2025-01-01T00:00:00Z",
                  "message": {"role": "tool\x07Result", "toolName": "漢\x1b", "content": [{"type": "text",
                                                                                         "text": "x" * 500}]}})
    lines.append({"type": "label", "id": "c0000000", "parentId": "b0000000", "timestamp": "2026-01-02T00:00:00Z",
                  "targetId": "a0000000", "label": "lab\x1bel 漢"})
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    for width in (8, 30, 61, 120, 1000):
        result = both(path, width, monkeypatch)
        assert result is not None
        streamed, indexed = result
        assert streamed == indexed
        assert all("\x1b" not in line and "\x9b" not in line for line in streamed[0])
