"""The compaction settings in config: dotted keys, a `compaction:` mapping in the file (as pi's
settings.json nests them), typed values, shown by `config list`, honoured by chat."""

from __future__ import annotations

from pathlib import Path

import pytest
from writeside_helpers import Env, assert_one_error, invoke, isolate, only_session, read_lines

from harnesskit.agent.models import DEFAULT_CONTEXT_WINDOW, default_context_window


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def get(key: str) -> str:
    result = invoke("config", "get", key)
    assert result.exit_code == 0, result.stderr
    return result.stdout.rstrip("\n")


def test_defaults_are_pis(env: Env) -> None:
    listing = invoke("config", "list").stdout.splitlines()
    assert "compaction.enabled = true  (default)" in listing
    assert "compaction.reserve_tokens = 16384  (default)" in listing
    assert "compaction.keep_recent_tokens = 20000  (default)" in listing
    assert "context_window =   (default)" in listing


def test_dotted_keys_are_written_as_a_section_and_keep_the_rest(env: Env) -> None:
    config_file = env.home / "config.yaml"
    config_file.parent.mkdir(parents=True)
    config_file.write_text("# mine\nmodel: demo  # keep me\n")
    for key, value in (("compaction.enabled", "off"), ("compaction.keep_recent_tokens", "8_000"),
                       ("context_window", "32768")):
        result = invoke("config", "set", key, value)
        assert result.exit_code == 0, result.stderr
    assert config_file.read_text() == ("# mine\nmodel: demo  # keep me\ncompaction:\n  enabled: false\n"
                                       "  keep_recent_tokens: 8000\ncontext_window: 32768\n")
    assert get("compaction.enabled") == "false"
    assert get("compaction.keep_recent_tokens") == "8000"
    assert get("compaction.reserve_tokens") == "16384"
    listing = invoke("config", "list").stdout.splitlines()
    assert f"compaction.enabled = false  ({config_file})" in listing


def test_a_project_file_section_overrides_one_key(env: Env) -> None:
    (env.cwd / ".harnesskit.yaml").write_text("compaction:\n  reserve_tokens: 4096\n")
    assert invoke("config", "set", "compaction.reserve_tokens", "9000").exit_code == 0
    assert get("compaction.reserve_tokens") == "4096"
    assert get("compaction.enabled") == "true"


@pytest.mark.parametrize("key,value,needle", [
    ("compaction.enabled", "maybe", "true or false"),
    ("compaction.keep_recent_tokens", "0", "whole number"),
    ("context_window", "lots", "whole number"),
    ("compaction.nope", "1", "unknown config key 'compaction.nope'"),
])
def test_bad_values_are_refused(env: Env, key: str, value: str, needle: str) -> None:
    line = assert_one_error(invoke("config", "set", key, value))
    assert needle in line
    assert not (env.home / "config.yaml").exists()


def test_a_bad_value_in_the_file_is_one_error_line(env: Env) -> None:
    (env.cwd / ".harnesskit.yaml").write_text("compaction:\n  enabled: sometimes\n")
    line = assert_one_error(invoke("chat", "-p", "hello"))
    assert "compaction.enabled" in line


def test_chat_honours_the_window_from_config(env: Env) -> None:
    (env.cwd / ".harnesskit.yaml").write_text("context_window: 500\ncompaction:\n  keep_recent_tokens: 60\n")
    result = invoke("chat", input="".join(f"tell me about the item numbered {n}\n" for n in range(25)))
    assert result.exit_code == 0, result.stderr
    assert "of a 500 window" in result.stderr
    assert any(e["type"] == "compaction" for e in read_lines(only_session(env.home)))


def test_context_windows_per_model() -> None:
    assert default_context_window("openai", "gpt-4o-mini") == 128_000
    assert default_context_window("openai", "gpt-4.1-nano") == 1_047_576
    assert default_context_window("openai", "library/llama3.1:8b") == 131_072
    assert default_context_window("openai", "llama3:8b") == 8_192
    assert default_context_window("openai", "something-new") == DEFAULT_CONTEXT_WINDOW
    assert default_context_window("harnesskit", "demo") == DEFAULT_CONTEXT_WINDOW
