"""`export --parquet`'s msgspec lane (parquet._lane: message lines decoded into typed.py's export
Structs) writes exactly the tables and stderr of the orjson path (`_LANE` off), in one process and in
two: on the fixtures, damaged copies of them, generated sessions, raw lines that msgspec and orjson
read differently, and usage numbers of every kind."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import ALL_FIXTURES
from differential import SEEDS, damages, mutate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_stats_lanes import HEADER, USAGES, _assistant, _chain_with, generate
from test_typed import RAW_LINES
from writeside_helpers import isolate

from harnesskit.export import parquet

pytest.importorskip("pyarrow", reason="pyarrow is absent (pip install 'harnesskit[fleet]')")


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(tmp_path, monkeypatch)


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many lines the lane took, one count per export that had it on."""
    counts: list[int] = []
    lane = parquet._lane

    def counting():  # noqa: ANN202
        take = lane()
        if take is None:
            return None
        counts.append(0)

        def spying(line: bytes) -> object | None:
            entry = take(line)
            if entry is not None:
                counts[-1] += 1
            return entry
        return spying

    monkeypatch.setattr(parquet, "_lane", counting)
    return counts


def export_of(run, paths: list[Path], out: Path, monkeypatch: pytest.MonkeyPatch, lane: bool,  # noqa: ANN001
              two: bool) -> tuple:
    """(exit code, stderr, stdout without the export id, the tables) of one export."""
    import pyarrow.parquet as pq

    with monkeypatch.context() as m:
        m.setattr(parquet, "_LANE", lane)
        m.setenv("HARNESSKIT_SPLIT", "1" if two else "0")
        m.setenv("HARNESSKIT_SPLIT_MIN_BYTES", "0")
        result = run("export", *paths, "--parquet", out)
    tables = {}
    for table in parquet.SCHEMA:
        files = sorted((out / table).glob("part-*.parquet"))
        if files:
            data = pq.read_table(out / table)
            tables[table] = data.drop_columns(["export_id"]) if table == "sessions" else data
            tables[table] = tables[table].sort_by([(c, "ascending") for c in tables[table].column_names])
    stdout = re.sub(r"as export \S+", "as export ID", result.stdout.replace(str(out), "OUT"))
    return result.exit_code, result.stderr, stdout, tables


def assert_lanes_agree(run, paths: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple:  # noqa: ANN001
    exact = export_of(run, paths, tmp_path / "exact", monkeypatch, False, False)
    for two in (False, True):
        fast = export_of(run, paths, tmp_path / f"fast-{two}", monkeypatch, True, two)
        assert fast[:3] == exact[:3], two
        assert fast[3].keys() == exact[3].keys()
        for table in exact[3]:
            assert fast[3][table].equals(exact[3][table]), (two, table)
    return exact


def test_fixtures(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, taken: list[int]) -> None:  # noqa: ANN001
    assert_lanes_agree(run, [p for p in ALL_FIXTURES if p.exists()], tmp_path, monkeypatch)
    assert sum(taken) > 0


def test_generated_sessions_take_the_lane(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                          taken: list[int]) -> None:
    paths = [generate.generate(tmp_path / f"s{seed}.jsonl", 3000, seed=seed) for seed in (1, 5)]
    code, err, out, tables = assert_lanes_agree(run, paths, tmp_path, monkeypatch)
    assert code == 0 and err == "" and tables["entries"].num_rows == 6000 and tables["tool_calls"].num_rows > 0
    # most lines are messages msgspec takes (a count per file; in two processes, this one's half)
    assert len(taken) == 4 and min(taken[:2]) > 2900 and 1000 < taken[2] < taken[0] and 1000 < taken[3] < taken[1]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.sampled_from(SEEDS), damage=damages())
def test_damaged_fixtures(run, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                          seed: Path, damage: list) -> None:
    tmp_path = tmp_path_factory.mktemp("case")
    path = tmp_path / "case.jsonl"
    path.write_bytes(mutate(seed.read_bytes(), damage))
    assert_lanes_agree(run, [path], tmp_path, monkeypatch)


@pytest.mark.parametrize("what", list(RAW_LINES))
def test_raw_lines(run, what: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    path = tmp_path / "s.jsonl"
    path.write_bytes(_chain_with(RAW_LINES[what]))
    assert_lanes_agree(run, [path], tmp_path, monkeypatch)


def _message(role: str, body: str) -> bytes:
    return ('{"type":"message","id":"a","parentId":"p","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"'
            + role + '",' + body + "}}\n").encode()


def _calling(arguments: bytes) -> bytes:
    return _assistant(USAGES["ints"]).replace(b'"arguments":{}', b'"arguments":' + arguments)


#: the values the tables take from a message, in forms each reader might read apart
MESSAGES = {
    "user text": _message("user", '"content":"hi","timestamp":5'),
    "user without a timestamp": _message("user", '"content":[{"type":"text","text":"a"}]'),
    "user with a null timestamp": _message("user", '"content":"x","timestamp":null'),
    "float timestamp": _message("user", '"content":"x","timestamp":1767225601000.5'),
    "exponent timestamp": _message("user", '"content":"x","timestamp":1.7e12'),
    "negative int64 timestamp": _message("user", '"content":"x","timestamp":-9223372036854775808'),
    "int64 max timestamp": _message("user", '"content":"x","timestamp":9223372036854775807'),
    "past int64 timestamp": _message("user", '"content":"x","timestamp":9223372036854775808'),
    "huge timestamp": _message("user", '"content":"x","timestamp":1e300'),
    "two texts and a thinking": _message("user", '"content":[{"type":"text","text":"a"},{"type":"thinking",'
                                                 '"thinking":"t"},{"type":"text","text":"b"}]'),
    "one image": _message("user", '"content":[{"type":"image","data":"x","mimeType":"image/png"}]'),
    "no blocks": _message("user", '"content":[]'),
    "result": _message("toolResult", '"toolCallId":"c1","toolName":"read","content":[],"isError":true'),
    "result without isError": _message("toolResult", '"toolCallId":"","toolName":"read","content":[]'),
    "assistant without a timestamp": _assistant(USAGES["ints"]).replace(b',"timestamp":1}', b"}"),
    "call with an empty id": _assistant(USAGES["ints"]).replace(b'"id":"c1"', b'"id":""'),
    "call arguments": _calling(b'{"a":[1,2.5,"\\u00e9"],"b":{"c":null},"a":-0.0}'),
    "big int argument": _calling(b'{"n":18446744073709551616}'),
    "uint64 argument": _calling(b'{"n":18446744073709551615}'),
    "surrogate argument": _calling(b'{"s":"\\ud800"}'),
    "deep argument": _calling(b'{"d":' + b"[" * 300 + b"]" * 300 + b"}"),
    "zero cost of tokens": _assistant('{"input":5,"cost":{"total":0}}'),
    "zero cost of nothing": _assistant('{"cost":{"total":0}}'),
    "int64 min tokens": _assistant('{"input":-9223372036854775808,"totalTokens":-9223372036854775808}'),
    "priced model": _assistant('{"input":1000,"output":10}').replace(b'"model":"m"', b'"model":"gpt-4o"'),
    "demo model": _assistant('{"input":1000}').replace(b'"provider":"p"', b'"provider":"harnesskit"'),
}


@pytest.mark.parametrize("what", [*USAGES, *MESSAGES])
def test_message_values(run, what: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    line = MESSAGES[what] if what in MESSAGES else _assistant(USAGES[what])
    path = tmp_path / "s.jsonl"
    path.write_bytes(_chain_with(line))
    code, err, _, tables = assert_lanes_agree(run, [path], tmp_path, monkeypatch)
    assert code == 0 and tables["entries"].num_rows >= 7, err


def test_positions_past_short_and_long_lines_in_two_processes(run, tmp_path: Path,  # noqa: ANN001
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker numbers its entries by the newlines before its cut (split.count_newlines: found one
    by one while the lines are long, counted once they are short): short lines, then long ones, where
    the cut falls, number the rows as one process does, and the worker's rows are kept."""
    short = [b'{"type":"custom","id":"s%d","parentId":null,"timestamp":"t"}\n' % i for i in range(2500)]
    long = [b'{"type":"message","id":"m%d","parentId":null,"timestamp":"t","message":{"role":"user",'
            b'"content":"%s","timestamp":%d}}\n' % (i, b"w" * (300 + i), i) for i in range(2000)]
    path = tmp_path / "s.jsonl"
    path.write_bytes(json.dumps(HEADER).encode() + b"\n" + b"".join(short + long))
    code, err, _, tables = assert_lanes_agree(run, [path], tmp_path, monkeypatch)
    assert code == 0 and err == ""
    # the worker's half was taken (a count that differs from this process's has it read here again)
    assert len(list((tmp_path / "fast-True" / "entries").glob("part-*-1.parquet"))) == 1
    assert tables["entries"].column("position").to_pylist() == list(range(len(short) + len(long)))
    assert tables["messages"].column("position").to_pylist() == list(range(len(short), len(short) + len(long)))
