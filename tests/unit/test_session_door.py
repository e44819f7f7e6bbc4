"""The session layer's front door (harnesskit/session/__init__.py): lazy names, typed appends, and
the session rules the CLI used to hold (a legacy or foreign file is never appended to; fork)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import harnesskit.session as door
from harnesskit.session import CannotAppend, ForkFailed, LiveSession, load_session

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CLI = Path(door.__file__).resolve().parents[1] / "cli"
MODEL = {"provider": "harnesskit", "modelId": "demo"}


def reply(text: str) -> dict:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "api": "harnesskit",
            "provider": "harnesskit", "model": "demo", "usage": {}, "stopReason": "stop", "timestamp": 1}


def test_the_front_door_loads_nothing_until_a_name_is_asked_for() -> None:
    code = ("import sys, harnesskit.session as s\n"
            "before = sorted(m for m in sys.modules if m.startswith('harnesskit.'))\n"
            "names = [getattr(s, n) for n in s.__all__]\n"
            "print(before, len(names), 'harnesskit.session.live' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.strip() == f"['harnesskit.session'] {len(door.__all__)} True"
    with pytest.raises(AttributeError):
        door.no_such_name  # noqa: B018


def test_live_sessions_append_through_typed_methods_only(tmp_path: Path) -> None:
    assert not hasattr(LiveSession, "append")  # no append("label", **kw) that any kind slips through
    live = LiveSession.new(tmp_path, "/w", "never", MODEL)
    first = live.append_message(reply("hi"))
    made = [live.append_label(first["id"], "greeted"), live.append_session_name("talk"),
            live.append_model_change("openai", "gpt"), live.append_thinking_level("high"),
            live.append_compaction("S", first["id"], 10), live.append_branch_summary(None, "B", {})]
    live.close()
    written = [json.loads(line) for line in live.path.read_text().splitlines()]  # type: ignore[union-attr]
    assert written[-6:] == made
    assert [{k: v for k, v in e.items() if k not in ("id", "parentId", "timestamp")} for e in made] == [
        {"type": "label", "targetId": first["id"], "label": "greeted"}, {"type": "session_info", "name": "talk"},
        {"type": "model_change", "provider": "openai", "modelId": "gpt"},
        {"type": "thinking_level_change", "thinkingLevel": "high"},
        {"type": "compaction", "summary": "S", "firstKeptEntryId": first["id"], "tokensBefore": 10},
        {"type": "branch_summary", "fromId": "root", "summary": "B", "details": {}, "fromHook": False}]


@pytest.mark.parametrize("name", ["demo.jsonl", "demo-first-run.jsonl"])
def test_a_legacy_file_cannot_be_appended_to_but_can_be_read(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    shutil.copy(FIXTURES / "tutorial" / name, path)
    before = path.read_bytes()
    with pytest.raises(CannotAppend, match="migrate"):
        LiveSession.reopen(load_session(path), "never")
    LiveSession.reopen(load_session(path), "never", write=False).close()  # --no-session reads it
    assert path.read_bytes() == before


def test_the_rule_lives_in_the_session_layer_not_the_cli() -> None:
    for module in CLI.glob("*.py"):
        text = module.read_text(encoding="utf-8")
        assert "cannot be appended to" not in text and "never appended to" not in text, module.name


def test_the_run_model_is_written_only_with_the_runs_first_entry(tmp_path: Path) -> None:
    live = LiveSession.new(tmp_path, "/w", "never", MODEL)
    live.append_message(reply("hi"))
    live.close()
    path = live.path
    assert path is not None
    before = path.read_bytes()
    again = LiveSession.reopen(load_session(path), "never")
    again.uses_model("openai", "gpt")
    again.close()
    assert path.read_bytes() == before  # restored and left at once: not one byte changed
    again = LiveSession.reopen(load_session(path), "never")
    again.uses_model("openai", "gpt")
    again.append_session_name("named")
    again.uses_model("openai", "gpt")
    again.append_session_name("twice")
    again.close()
    added = [json.loads(line)["type"] for line in path.read_bytes()[len(before):].splitlines()]
    assert added == ["model_change", "session_info", "session_info"]


def test_fork_before_any_reply_is_refused_and_keeps_the_session(tmp_path: Path) -> None:
    live = LiveSession.new(tmp_path, "/w", "never", MODEL)
    with pytest.raises(ForkFailed, match="nothing to fork yet") as refused:
        live.fork("root", tmp_path, "/w", "never")
    assert refused.value.session is None
    assert list(tmp_path.iterdir()) == []  # no file: the new session still waits for a reply


def test_fork_goes_on_in_a_new_file_linked_to_the_old(tmp_path: Path) -> None:
    live = LiveSession.new(tmp_path / "a", "/w", "never", MODEL)
    first = live.append_message(reply("hi"))
    forked = live.fork(first["id"], tmp_path / "b", "/w", "never")
    forked.append_session_name("the fork")
    forked.close()
    assert forked.path is not None and forked.path.parent == tmp_path / "b"
    header = json.loads(forked.path.read_text().splitlines()[0])
    assert header["parentSession"] == str(live.path.resolve())  # type: ignore[union-attr]
    assert [e["id"] for e in load_session(forked.path).entries][:3] == [e["id"] for e in
                                                                          load_session(live.path).entries]


def test_a_failed_fork_gives_back_the_session_open_at_the_same_leaf(tmp_path: Path) -> None:
    live = LiveSession.new(tmp_path / "a", "/w", "never", MODEL)
    first = live.append_message(reply("hi"))
    live.append_message(reply("there"))
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the fork's directory should be")
    with pytest.raises(ForkFailed, match="fork failed") as failed:
        live.fork(first["id"], blocked, "/w", "never")
    restored = failed.value.session
    assert restored is not None and restored.path == live.path and restored.leaf_id == live.leaf_id
    restored.append_session_name("still here")  # its lock is held again: it can be written
    restored.close()
    assert [e["type"] for e in load_session(live.path).entries][-1] == "session_info"  # type: ignore[arg-type]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "not-a-directory"]
