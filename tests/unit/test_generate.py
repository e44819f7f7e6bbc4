"""benchmarks/generate.py writes clean, realistic, reproducible pi v3 sessions."""

from __future__ import annotations

import collections
import importlib.util
import json
from pathlib import Path

import pytest

from harnesskit.session.check import check_file
from harnesskit.session.loader import load_session
from harnesskit.session.tree import build_context

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("hk_generate_smoke", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)


@pytest.mark.parametrize(("entries", "seed"), [(1, 1), (2, 1), (50, 3), (6000, 4)])
def test_generated_file_is_clean(tmp_path: Path, entries: int, seed: int) -> None:
    path = generate.generate(tmp_path / "s.jsonl", entries, seed=seed)
    report = check_file(path)
    assert (report.entries, report.dialect, report.problems) == (entries, "pi v3", [])
    assert load_session(path).diagnostics == []


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    a = generate.generate(tmp_path / "a.jsonl", 800, seed=9).read_bytes()
    b = generate.generate(tmp_path / "b.jsonl", 800, seed=9).read_bytes()
    c = generate.generate(tmp_path / "c.jsonl", 800, seed=10).read_bytes()
    assert a == b != c


def test_shapes_like_pi(tmp_path: Path) -> None:
    path = generate.generate(tmp_path / "s.jsonl", 6000, seed=5)
    objects = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    header, entries = objects[0], objects[1:]
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]
    kinds = collections.Counter(e["type"] for e in entries)
    assert set(kinds) >= {"message", "model_change", "thinking_level_change", "compaction", "branch_summary",
                          "custom", "custom_message", "label", "session_info"}
    for e in entries:
        keys = list(e)
        if e["type"] in ("custom", "custom_message"):
            assert keys[:2] == ["type", "customType"] and keys[-3:] == ["id", "parentId", "timestamp"]
        else:
            assert keys[:4] == ["type", "id", "parentId", "timestamp"]
    roles = collections.Counter(e["message"]["role"] for e in entries if e["type"] == "message")
    assert set(roles) == {"user", "assistant", "toolResult"}
    assistant = next(e["message"] for e in entries if e["type"] == "message" and e["message"]["role"] == "assistant")
    assert list(assistant) == ["role", "content", "api", "provider", "model", "usage", "stopReason", "timestamp",
                               "responseId"]
    sizes = [len(line) for line in path.read_bytes().splitlines()]
    assert 600 < sum(sizes) / len(sizes) < 1500, "about 1 KB an entry"
    assert max(sizes) > 10_000
    tree = load_session(path).tree
    assert sum(1 for kids in tree.children().values() if len(kids) > 1) > 5, "branches"
    context = build_context(tree)
    assert context.messages[0]["role"] == "compactionSummary"
    assert 20 < len(context.messages) < 3000
