"""Numbers a session file may hold and a float cannot: an integer of 400 digits as a cost, a token
count and a timestamp (JSON allows it; JavaScript reads it as Infinity). Every command that reads
usage or times takes them without an internal error, the cost read as an infinity as 1e400 is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from writeside_helpers import Env, assert_one_error, invoke, isolate, messages_of, read_lines, write_script

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


# Integers longer than Python converts by default (4,300 digits): the reader keeps that many exactly
# and reads a longer one as pi does (a float: Infinity); a sum of two of the longest is shown whole.
NINES = "9" * 4300
LONG = "9" * 5000


def _usage_file(path: Path, *inputs: str) -> Path:
    """A user message, then a chain of assistants whose usage.input is each number's text."""
    lines = ['{"type":"session","version":3,"id":"s1","timestamp":"2026-12-01T00:00:00.000Z","cwd":"/tmp"}',
             '{"type":"message","id":"aaaa1111","parentId":null,"timestamp":"2026-12-01T00:00:00.000Z",'
             '"message":{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}}']
    parent = "aaaa1111"
    for n, number in enumerate(inputs):
        own = f"b{n:07d}"
        lines.append(
            f'{{"type":"message","id":"{own}","parentId":"{parent}","timestamp":"2026-12-01T00:00:00.000Z",'
            '"message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"api":"a","provider":"p",'
            f'"model":"m","usage":{{"input":{number},"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,'
            '"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1}}')
        parent = own
    path.write_text("\n".join(lines) + "\n")
    return path


def _clean(result: object) -> None:
    """No internal error and no Python advice (sys.set_int_max_str_digits) reaches the user."""
    text = result.stdout + result.stderr  # type: ignore[attr-defined]
    assert "internal error" not in text and "set_int_max_str_digits" not in text and "Exceeds the limit" not in text


def test_a_sum_past_4300_digits_is_shown_in_stats(env: Env) -> None:
    path = _usage_file(env.tmp / "big.jsonl", NINES, NINES)
    table = invoke("inspect", path, "--stats", "--no-pager")
    _clean(table)
    assert table.exit_code == 0 and table.stderr == ""
    as_json = invoke("inspect", path, "--stats", "--json")
    assert as_json.exit_code == 0
    assert f'1{"9" * 4299}8' in as_json.stdout  # the input sum: 2 x (10**4300 - 1), 4,301 digits


@pytest.mark.parametrize("number", [NINES, LONG, "1e400"])
def test_compact_and_continue_take_huge_usage(env: Env, number: str) -> None:
    script = write_script(env.tmp / "r.yaml", ["summary", "reply"])
    path = _usage_file(env.tmp / "c.jsonl", number, number)
    result = invoke("compact", path, "--model", f"script:{script}", "--keep-recent", "1")
    _clean(result)
    assert result.exit_code == 0, result.stderr
    assert read_lines(path)[-1]["type"] == "compaction"
    path = _usage_file(env.tmp / "c2.jsonl", number, number)
    result = invoke("continue", path, "-p", "hi", "--model", f"script:{script}")
    _clean(result)
    assert result.exit_code == 0 and "model failed" not in result.stderr, result.stderr
    assert messages_of(read_lines(path))[-1]["stopReason"] == "stop"


def test_an_integer_past_4300_digits_is_read_as_pi_reads_it(env: Env) -> None:
    path = _usage_file(env.tmp / "long.jsonl", LONG)
    shown = invoke("inspect", path, "--no-pager")
    _clean(shown)
    assert shown.exit_code == 0 and shown.stderr == "", shown.stderr  # no line skipped
    assert "b0000000" in shown.stdout and "entries=2" in shown.stdout
    context = invoke("inspect", path, "--context", "--json")
    last = json.loads(context.stdout.splitlines()[-1])
    assert last["usage"]["input"] is None  # Infinity, written as JSON.stringify writes it
    checked = invoke("validate", path)
    _clean(checked)
    assert checked.exit_code == 1
    assert "usage: a number too large for a double (pi reads it as Infinity)" in checked.stdout + checked.stderr
    assert "not JSON" not in checked.stdout + checked.stderr


def test_migrate_refuses_an_integer_it_cannot_keep_exactly(env: Env) -> None:
    path = _usage_file(env.tmp / "v2.jsonl", LONG)
    path.write_text(path.read_text().replace('"version":3', '"version":2', 1))
    before = path.read_bytes()
    result = invoke("migrate", path)
    line = assert_one_error(result)
    assert "line 3: an integer of 5,000 digits (harnesskit keeps up to 4,300 exactly)" in line
    assert path.read_bytes() == before and not path.with_name("v2.jsonl.bak").exists()
