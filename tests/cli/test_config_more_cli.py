"""`config set` checks every value; unset, path, list --json; named providers that `continue` finds again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_openai_model import chunk, server, sse  # noqa: F401 - fixture
from writeside_helpers import Env, assert_one_error, invoke, isolate, only_session, read_lines


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def user_file(env: Env) -> Path:
    return env.home / "config.yaml"


@pytest.mark.parametrize("key, value, word", [
    ("model", "gpt4", "unknown model spec"),
    ("model", "openai:", "missing its MODEL"),
    ("model", "nowhere:llama3", "unknown model spec"),
    ("tools", "calc,shell", "unknown tool 'shell'"),
    ("base_url", "localhost:8080", "http:// or https://"),
    ("fsync", "sometimes", "fsync must be one of"),
    ("providers.demo.base_url", "http://x", "provider name"),
    ("providers.local.port", "1", "unknown provider key"),
    ("providers.local.api_key_env", "LOCAL_KEY", "needs a base_url"),
    ("provider", "x", "unknown config key"),
])
def test_set_refuses_bad_values_and_writes_nothing(env: Env, key: str, value: str, word: str) -> None:
    line = assert_one_error(invoke("config", "set", key, value))
    assert word in line, line
    assert not user_file(env).exists()


def test_set_accepts_good_values(env: Env) -> None:
    for key, value in [("model", "script:replies.yaml"), ("tools", "read, ls"), ("base_url", "https://api.x/v1"),
                       ("providers.local.base_url", "http://127.0.0.1:8080/v1"),
                       ("providers.local.api_key_env", "LOCAL_KEY"), ("model", "local:llama3")]:
        result = invoke("config", "set", key, value)
        assert result.exit_code == 0, result.stderr
    assert invoke("config", "get", "tools").stdout == "read,ls\n"
    assert invoke("config", "get", "model").stdout == "local:llama3\n"
    assert invoke("config", "get", "providers.local.api_key_env").stdout == "LOCAL_KEY\n"
    bad_env = invoke("config", "set", "providers.local.api_key_env", "not a variable")
    assert "environment variable" in assert_one_error(bad_env)


def test_unset_removes_the_key_and_keeps_the_rest(env: Env) -> None:
    user_file(env).parent.mkdir(parents=True)
    user_file(env).write_text("# mine\nmodel: openai:llama3  # the big one\nfsync: never\n")
    result = invoke("config", "unset", "model")
    assert result.exit_code == 0 and "model removed" in result.stdout
    assert user_file(env).read_text() == "# mine\nfsync: never\n"
    assert invoke("config", "get", "model").stdout == "demo\n"  # the default again
    again = invoke("config", "unset", "model")
    assert again.exit_code == 0 and "was not set" in again.stdout
    assert "unknown config key" in assert_one_error(invoke("config", "unset", "colour"))


def test_unset_a_provider_field_drops_the_empty_provider(env: Env) -> None:
    invoke("config", "set", "providers.local.base_url", "http://127.0.0.1:1/v1")
    assert "providers" in user_file(env).read_text()
    assert invoke("config", "unset", "providers.local.base_url").exit_code == 0
    assert user_file(env).read_text() == ""


def test_path_prints_the_files(env: Env) -> None:
    assert invoke("config", "path").stdout == f"{user_file(env)}\n"
    assert_one_error(invoke("config", "path", "--project"), 1)
    (env.cwd / ".harnesskit.yaml").write_text("fsync: always\n")
    assert invoke("config", "path", "--project").stdout == f"{env.cwd / '.harnesskit.yaml'}\n"


def test_list_json(env: Env) -> None:
    invoke("config", "set", "fsync", "never")
    invoke("config", "set", "providers.local.base_url", "http://127.0.0.1:1/v1")
    doc = json.loads(invoke("config", "list", "--json").stdout)
    assert doc["fsync"] == {"value": "never", "source": str(user_file(env))}
    assert doc["model"] == {"value": "demo", "source": "default"}
    assert doc["base_url"] == {"value": None, "source": "default"}
    assert doc["providers.local.base_url"]["value"] == "http://127.0.0.1:1/v1"


def test_get_help_says_what_it_prints(env: Env) -> None:
    text = " ".join(invoke("config", "get", "--help").stdout.split())
    assert "else the default (an empty line when there is none)" in text


def test_named_provider_is_recorded_and_continue_reaches_it(env: Env, server, monkeypatch) -> None:  # noqa: F811
    monkeypatch.setenv("LOCAL_KEY", "sk-local")
    server.reply(sse(chunk({"role": "assistant", "content": "first"}), chunk({}, finish="stop")),
                 sse(chunk({"role": "assistant", "content": "second"}), chunk({}, finish="stop")))
    assert invoke("config", "set", "providers.local.base_url", server.base_url).exit_code == 0
    assert invoke("config", "set", "providers.local.api_key_env", "LOCAL_KEY").exit_code == 0
    result = invoke("chat", "--model", "local:test-model", "-p", "hi")
    assert result.exit_code == 0, result.stderr
    lines = read_lines(only_session(env.home))
    change = next(e for e in lines if e["type"] == "model_change")
    assert (change["provider"], change["modelId"]) == ("local", "test-model")  # as pi records a provider
    assistant = [e["message"] for e in lines if e["type"] == "message"][-1]
    assert assistant["provider"] == "local" and assistant["model"] == "test-model"
    assert server.headers_seen[0]["authorization"] == "Bearer sk-local"

    result = invoke("continue", "-p", "again")  # no --model, no --base-url: the same server
    assert result.exit_code == 0, result.stderr
    assert "second" in result.stdout
    assert len(server.requests) == 2 and server.requests[1]["model"] == "test-model"


def test_base_url_flag_wins_over_the_provider(env: Env, server) -> None:  # noqa: F811
    assert invoke("config", "set", "providers.local.base_url", server.base_url).exit_code == 0
    result = invoke("chat", "--model", "local:test-model", "--base-url", "http://127.0.0.1:9/v1", "-p", "hi")
    assert result.exit_code == 1
    assert "127.0.0.1:9" in result.stderr
    assert server.requests == []
