"""Numbers a session file may hold and a float cannot: an integer of 400 digits as a cost, a token
count and a timestamp (JSON allows it; JavaScript reads it as Infinity). Every command that reads
usage or times takes them without an internal error, the cost read as an infinity as 1e400 is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from writeside_helpers import Env, invoke, isolate

BIG = "1" + "0" * 400


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def _session(env: Env) -> Path:
    folder = env.home / "sessions" / "--w--"
    folder.mkdir(parents=True)
    path = folder / "2026-01-01T00-00-00-000Z_s1.jsonl"
    usage = f'{{"input":{BIG},"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":{BIG},"cost":{{"total":{BIG}}}}}'
    path.write_text("\n".join([
        '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}',
        '{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
        f'"message":{{"role":"user","content":"hello there","timestamp":{BIG}}}}}',
        '{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z",'
        '"message":{"role":"assistant","content":[{"type":"text","text":"yo"}],"api":"x","provider":"p",'
        f'"model":"m","usage":{usage},"stopReason":"stop","timestamp":{BIG}}}}}',
    ]) + "\n")
    return path


@pytest.mark.parametrize("command", [
    ["list", "--all"], ["index"], ["usage", "model"], ["usage", "daily", "--json"], ["search", "hello", "--all"],
    ["inspect", "{f}", "--stats"], ["inspect", "{f}", "--json"], ["export", "{f}", "--parquet", "{d}"],
    ["export", "{f}", "--md"], ["export", "{f}", "--html"],
])
def test_integers_past_a_float_are_no_internal_error(env: Env, command: list[str]) -> None:
    path = _session(env)
    result = invoke(*[a.format(f=path, d=env.tmp / "dataset") for a in command])
    assert result.exit_code == 0, (result.stderr, result.exception)
    assert "internal error" not in result.stderr


def test_a_cost_past_a_float_is_an_infinity_in_the_usage_report(env: Env) -> None:
    _session(env)
    result = invoke("usage", "model", "--json")
    assert result.exit_code == 0, result.stderr
    (group,) = json.loads(result.stdout)["groups"]
    assert group["key"] == "m" and group["output"] == 2
    assert "inf" in invoke("usage", "model").stdout  # shown as what JavaScript reads, not as 0


@pytest.mark.parametrize("version", [2**70, 10**29 + 1, -(2**70)], ids=["2**70", "10**29+1", "-2**70"])
@pytest.mark.parametrize("command", [["validate"], ["inspect"], ["inspect", "--tree"], ["migrate"], ["export", "--md"]])
def test_a_header_version_past_64_bits_is_named_as_the_integer(env: Env, version: int, command: list[str]) -> None:
    """orjson reads such a version as a float: it was refused as `1.1805916207174113e+21 is not a
    version we know`. The header is read again exactly, and the refusal names the file's number."""
    path = env.cwd / "v.jsonl"
    path.write_text(f'{{"type":"session","version":{version},"id":"s1","timestamp":"2026-01-01T00:00:00.000Z",'
                    '"cwd":"/w"}\n')
    result = invoke(command[0], path, *command[1:])
    said = result.stdout + result.stderr
    assert result.exit_code == (1 if command == ["validate"] else 2), said
    assert f"session version {version} " in said and "e+" not in said
    assert ("is newer than this harnesskit reads" if version > 0 else "is not a version we know") in said
