"""`inspect --stats`'s fast lanes (stream_stats.py) print exactly what the exact one prints, stdout and
stderr: msgspec's counted Structs (typed.py) instead of orjson's dicts, and the tree's shape counted
without columns (a damaged tree read again). The exact lane is the columns of every entry and
Tree.from_columns in one process (`_SHAPED` and `_TYPED` off); each fast setting, in one process and
in two, is held to it on the fixtures, damaged copies of them, generated sessions, raw lines that
msgspec and orjson read differently, usage numbers of every kind, and random trees."""

from __future__ import annotations

import importlib.util
import json
import os
import threading
from pathlib import Path

import pytest
from conftest import ALL_FIXTURES, SHARED_FIXTURES, write_lines
from differential import SEEDS, damages, mutate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_typed import RAW_LINES
from writeside_helpers import isolate

from harnesskit.session import stream_stats

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("hk_generate_lanes", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)

HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}
#: (typed lane, shape without columns, two processes)
FAST = [(True, True, False), (True, True, True), (False, True, False), (False, True, True)]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(tmp_path, monkeypatch)


def stats_of(run, path: Path, monkeypatch: pytest.MonkeyPatch, lanes: tuple[bool, bool, bool],  # noqa: ANN001
             *extra: str) -> tuple:
    typed, shaped, two = lanes
    with monkeypatch.context() as m:
        m.setattr(stream_stats, "_TYPED", typed)
        m.setattr(stream_stats, "_TYPED_MIN_BYTES", 0)
        m.setattr(stream_stats, "_SHAPED", shaped)
        m.setenv("HARNESSKIT_SPLIT", "1" if two else "0")
        m.setenv("HARNESSKIT_SPLIT_MIN_BYTES", "0")
        result = run("inspect", path, "--stats", "--width", "100", *extra)
    return result.exit_code, result.stdout, result.stderr


def assert_lanes_agree(run, path: Path, monkeypatch: pytest.MonkeyPatch, json_too: bool = True) -> tuple:  # noqa: ANN001
    exact = stats_of(run, path, monkeypatch, (False, False, False))
    for lanes in FAST:
        assert stats_of(run, path, monkeypatch, lanes) == exact, lanes
    if json_too:
        exact_json = stats_of(run, path, monkeypatch, (False, False, False), "--json")
        assert stats_of(run, path, monkeypatch, FAST[1], "--json") == exact_json
    return exact


@pytest.fixture
def lanes_seen(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Which way each run went: 'typed' when msgspec's lane counted messages, 'columns' for columns read."""
    seen: list[str] = []
    counting, columns = stream_stats._counting, stream_stats._columns

    def typed_counting(counter: object, batch: list):  # noqa: ANN202
        flush = counting(counter, batch)

        def spying() -> None:
            if batch and "typed" not in seen:
                seen.append("typed")
            flush()
        return spying

    def counting_columns(*args: object):  # noqa: ANN202
        seen.append("columns")
        return columns(*args)

    monkeypatch.setattr(stream_stats, "_counting", typed_counting)
    monkeypatch.setattr(stream_stats, "_columns", counting_columns)
    return seen


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.name)
def test_fixtures(run, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    assert_lanes_agree(run, path, monkeypatch)


def test_shared_fixtures(run, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    files = sorted((SHARED_FIXTURES / "pi").rglob("*.jsonl"))
    if not files:
        pytest.skip(f"no pi sessions under {SHARED_FIXTURES}")
    for path in files:
        assert_lanes_agree(run, path, monkeypatch, json_too=False)


def test_generated_sessions_take_the_fast_lanes(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                                lanes_seen: list[str]) -> None:
    for seed in (1, 5):
        path = generate.generate(tmp_path / f"s{seed}.jsonl", 3000, seed=seed)
        code, out, err = assert_lanes_agree(run, path, monkeypatch)
        assert code == 0 and err == "" and "3000" in out
    # the exact runs read columns; the fast ones never did (no tree read again) and msgspec counted
    assert lanes_seen.count("columns") == 4 and "typed" in lanes_seen


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.sampled_from(SEEDS), damage=damages())
def test_damaged_fixtures(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: Path,  # noqa: ANN001
                          damage: list) -> None:
    path = tmp_path / "case.jsonl"
    path.write_bytes(mutate(seed.read_bytes(), damage))
    assert_lanes_agree(run, path, monkeypatch, json_too=False)


def _chain_with(line: bytes, copies: int = 6) -> bytes:
    """A session whose entries form a chain, with `line` (its parentId rewritten to the entry before)
    among them `copies` times: first, in the middle (where two processes cut) and last."""
    parent = b'{"type":"model_change","id":"p","parentId":null,"timestamp":"t","provider":"x","modelId":"y"}\n'
    users = [json.dumps({"type": "message", "id": f"u{i}", "parentId": "p", "timestamp": "t",
                         "message": {"role": "user", "content": "hi", "timestamp": 0}}).encode() + b"\n"
             for i in range(copies * 2)]
    body = [parent]
    for i in range(copies):  # an id of its own each time (RAW_LINES' are all "a")
        body += [users[2 * i], line.replace(b'"id":"a"', b'"id":"a%d"' % i, 1), users[2 * i + 1]]
    return json.dumps(HEADER).encode() + b"\n" + b"".join(body)


@pytest.mark.parametrize("what", list(RAW_LINES))
def test_raw_lines(run, what: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    path = tmp_path / "s.jsonl"
    path.write_bytes(_chain_with(RAW_LINES[what]))
    assert_lanes_agree(run, path, monkeypatch, json_too=False)


def _assistant(usage: str) -> bytes:
    return ('{"type":"message","id":"a","parentId":"p","timestamp":"t","message":{"role":"assistant",'
            '"content":[{"type":"toolCall","id":"c1","name":"read","arguments":{}},{"type":"text","text":"x"}],'
            '"api":"x","provider":"p","model":"m","stopReason":"stop","usage":USAGE,"timestamp":1}}'
            ).replace("USAGE", usage).encode() + b"\n"


USAGES = {
    "ints": '{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"totalTokens":10,"cost":{"total":0.5}}',
    "none": "{}",
    "cost without total": '{"input":1,"cost":{"input":0.1}}',
    "int cost": '{"input":1,"cost":{"total":3}}',
    "negative": '{"input":-7,"cost":{"total":-0.25}}',
    "float tokens": '{"input":1.5,"output":2.0,"cost":{"total":0.1}}',
    "exponent tokens": '{"input":1e2,"cost":{"total":1E-3}}',
    "int64 max": '{"input":9223372036854775807,"cost":{"total":9223372036854775807}}',
    "past int64": '{"input":9223372036854775808,"cost":{"total":9223372036854775808}}',
    "past uint64": '{"input":18446744073709551616,"cost":{"total":18446744073709551616}}',
    "30 digits": '{"input":123456789012345678901234567890,"cost":{"total":123456789012345678901234567890}}',
    "400 digits": '{"input":1' + "0" * 400 + ',"cost":{"total":1' + "0" * 400 + "}}",
    "near the float limit": '{"cost":{"total":1.7e308}}',
    "1e400": '{"input":1e400,"cost":{"total":1e400}}',
    "tiny": '{"cost":{"total":5e-324}}',
    "null": '{"input":null,"cost":{"total":null}}',
    "null cost": '{"input":1,"cost":null}',
    "bool": '{"input":true,"cost":{"total":false}}',
    "string": '{"input":"1","cost":{"total":"0.1"}}',
    "an extra key": '{"input":1,"reasoning":5}',
    "not an object": "[1,2]",
}


@pytest.mark.parametrize("what", list(USAGES))
def test_usage_numbers(run, what: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """Each kind of usage number, beside ordinary assistants (ints, float costs), so the sums mix."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(_chain_with(_assistant(USAGES[what])).replace(
        b'"role": "user", "content": "hi"', b'"role": "assistant", "content": [], "api": "x", "provider": "p", '
        b'"model": "m", "stopReason": "stop", "usage": {"input": 3, "totalTokens": 3, "cost": {"total": 0.1}}'))
    code, out, _ = assert_lanes_agree(run, path, monkeypatch)
    assert code == 0 and "read" in out


def test_mixed_usages_in_one_file(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """All the kinds in one file, in two orders: an int sum meets a float one, a cost sum overflows."""
    lines = [_assistant(u) for u in USAGES.values()]
    for order in (lines, lines[::-1]):
        path = tmp_path / "s.jsonl"
        path.write_bytes(_chain_with(b"".join(order), copies=3))
        assert_lanes_agree(run, path, monkeypatch)


@st.composite
def trees(draw: st.DrawFn) -> list[dict]:
    """Entries whose ids and parentIds are drawn to hit every case of the shape: the entry before, an
    earlier one, a later one, none, a dangling one, a duplicate id, a missing or odd id."""
    n = draw(st.integers(1, 60))
    ids = [f"{i:08x}" for i in range(n)]
    out = []
    for i in range(n):
        entry_id: object = ids[i]
        kind = draw(st.sampled_from(["before"] * 6 + ["earlier", "later", "none", "dangling", "self"]))
        parent: object = {"before": ids[i - 1] if i else None, "earlier": ids[draw(st.integers(0, i))],
                          "later": ids[draw(st.integers(i, n - 1))], "none": None, "dangling": "ffffffff",
                          "self": ids[i]}[kind]
        odd = draw(st.sampled_from([None] * 12 + ["dup", "no id", "int id", "empty id", "int parent", "nul id"]))
        if odd == "dup":
            entry_id = ids[draw(st.integers(0, n - 1))]
        elif odd == "int id":
            entry_id = 5
        elif odd == "empty id":
            entry_id = ""
        elif odd == "int parent":
            parent = 7
        elif odd == "nul id":
            entry_id = "a\x00b"
        entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "t",
                 "message": {"role": "user", "content": "hi", "timestamp": 0}}
        if odd == "no id":
            del entry["id"]
        if draw(st.booleans()):
            entry = {**entry, "type": "label", "targetId": ids[0], "label": "x"}
            del entry["message"]
        out.append(entry)
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=trees())
def test_random_trees(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entries: list[dict]) -> None:  # noqa: ANN001
    path = write_lines(tmp_path / "tree.jsonl", [HEADER, *entries])
    assert_lanes_agree(run, path, monkeypatch, json_too=False)


def test_a_pipe_is_read_once(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                             lanes_seen: list[str]) -> None:
    """A file that cannot be read twice keeps the columns from the start, even with a damaged tree."""
    entries = [{"type": "label", "id": "00000001", "parentId": "00000009", "targetId": "x", "label": "l"}]
    path = write_lines(tmp_path / "s.jsonl", [HEADER, *entries])
    expected = stats_of(run, path, monkeypatch, FAST[0])
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as out:
            out.write(path.read_bytes())

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    got = stats_of(run, fifo, monkeypatch, FAST[0])
    writer.join(10)
    assert got[0] == expected[0] == 0 and got[1] == expected[1]
    assert got[2] == expected[2].replace(str(path), str(fifo)) and "names no entry" in got[2]
    assert lanes_seen == ["columns", "columns"]  # the file's tree read again, then the pipe's columns
