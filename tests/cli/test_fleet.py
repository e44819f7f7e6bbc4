"""Sessions at fleet scale: `export --parquet`, `query` (DuckDB) and the Spark example job, each
giving the usage report that `harnesskit usage` gives from the same session files."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from catalog_corpus import corpus
from conftest import ALL_FIXTURES, assert_one_line_error, read_objects
from writeside_helpers import Env, invoke, isolate

pytest.importorskip("pyarrow", reason="pyarrow is absent (pip install 'harnesskit[fleet]')")
pytest.importorskip("duckdb", reason="duckdb is absent (pip install 'harnesskit[fleet]')")

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "examples" / "spark_usage.py"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def rows(dataset: Path, sql: str) -> list[dict]:
    result = invoke("query", dataset, sql, "--json")
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_every_message_of_every_fixture_is_in_the_tables_once(env: Env, tmp_path: Path) -> None:
    own = [*sorted((ROOT / "fixtures" / "claude-code").glob("*.jsonl")),
           *sorted((ROOT / "fixtures" / "codex").glob("*.jsonl"))]
    present = [p for p in ALL_FIXTURES if p.exists()]
    dataset = tmp_path / "ds"
    result = invoke("export", *present, "--parquet", dataset)
    assert result.exit_code == 0, result.output
    for path in present:
        objects = read_objects(path)[1:]
        got = rows(dataset, f"SELECT entry_id, role, text FROM messages WHERE file = '{path}' ORDER BY position")
        expected = [o["message"] for o in objects if o.get("type") == "message"]
        assert [r["role"] for r in got] == [m["role"] for m in expected], path.name
        entries = rows(dataset, "SELECT count(*) AS n, count(DISTINCT position) AS d FROM entries"
                       f" WHERE file = '{path}'")
        assert entries == [{"n": len(objects), "d": len(objects)}]
        if "v3" in str(path):  # v3 ids are the file's own
            assert [r["entry_id"] for r in got] == [o["id"] for o in objects if o.get("type") == "message"]
    # other harnesses' transcripts: every message of the core's reading of them, once
    assert invoke("export", *own, "--parquet", dataset).exit_code == 0
    for path in own:
        context = invoke("inspect", path, "--json")
        entries = [json.loads(line) for line in context.stdout.splitlines()][1:]
        got = rows(dataset, f"SELECT entry_id FROM messages WHERE file = '{path}' ORDER BY position")
        assert [r["entry_id"] for r in got] == [e["id"] for e in entries if e["type"] == "message"], path.name
    harnesses = rows(dataset, "SELECT harness, count(*) AS n FROM sessions GROUP BY 1 ORDER BY 1")
    assert {r["harness"] for r in harnesses} == {"pi", "claude", "codex"}
    calls = rows(dataset, "SELECT name, result_entry_id IS NOT NULL AS answered FROM tool_calls")
    assert calls and any(c["answered"] for c in calls)
    sessions = rows(dataset, "SELECT count(*) AS n FROM sessions")
    assert sessions == [{"n": len(present) + len(own)}]


def test_parallel_exports_write_files_of_their_own(env: Env, tmp_path: Path) -> None:
    made = corpus(env.sessions, 40)
    dataset = tmp_path / "ds"
    halves = [[str(m.path) for m in made[:20]], [str(m.path) for m in made[20:]]]
    procs = [subprocess.Popen([sys.executable, "-m", "harnesskit", "export", *half, "--parquet", str(dataset)],
                              env={**env.environ(), "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for half in halves]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    parts = sorted(p.name for p in (dataset / "usage").iterdir())
    assert len(parts) == 2 and all(p.startswith("part-") for p in parts)
    before = {p: p.read_bytes() for p in dataset.rglob("*.parquet")}
    assert invoke("export", made[0].path, "--parquet", dataset).exit_code == 0  # a third: touches none of them
    assert all(p.read_bytes() == data for p, data in before.items())
    assert rows(dataset, "SELECT count(*) AS n FROM sessions") == [{"n": 41}]


def _usage_from_files() -> list[dict]:
    data = json.loads(invoke("usage", "daily", "--json").stdout)
    return [{"day": g["key"], "input": g["input"], "output": g["output"], "cache_read": g["cacheRead"],
             "cache_write": g["cacheWrite"], "total_tokens": g["totalTokens"], "known_cost": g["knownCost"],
             "unpriced": g["unpricedMessages"], "messages": g["messages"]} for g in data["groups"]]


def _duckdb_usage(dataset: Path) -> list[dict]:
    from harnesskit.export.datasets import USAGE_DAILY_SQL

    return rows(dataset, USAGE_DAILY_SQL)


def test_duckdb_usage_equals_harnesskit_usage(env: Env, tmp_path: Path) -> None:
    corpus(env.sessions, 60)
    dataset = tmp_path / "ds"
    assert invoke("export", env.sessions, "--parquet", dataset).exit_code == 0
    expected = _usage_from_files()
    got = _duckdb_usage(dataset)
    assert [{**r, "known_cost": pytest.approx(r["known_cost"], abs=1e-5)} for r in got] == expected


@pytest.mark.skipif(importlib.util.find_spec("pyspark") is None or shutil.which("java") is None,
                    reason="pyspark or Java is absent (pip install 'harnesskit[spark]'; Debian: default-jre-headless)")
def test_the_spark_job_gives_the_same_report(env: Env, tmp_path: Path) -> None:
    corpus(env.sessions, 30)
    dataset = tmp_path / "ds"
    assert invoke("export", env.sessions, "--parquet", dataset).exit_code == 0
    out = subprocess.run([sys.executable, str(JOB), str(dataset)], capture_output=True, text=True, timeout=600,
                         env={**env.environ(), "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-2000:]
    spark = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    duck = _duckdb_usage(dataset)
    assert [{**r, "known_cost": pytest.approx(r["known_cost"], abs=1e-5)} for r in spark] == duck
    assert duck == [{**r, "known_cost": pytest.approx(r["known_cost"], abs=1e-5)} for r in _usage_from_files()]


def test_query_errors_are_one_line(env: Env, tmp_path: Path) -> None:
    dataset = tmp_path / "ds"
    corpus(env.sessions, 2)
    assert invoke("export", env.sessions, "--parquet", dataset).exit_code == 0
    assert_one_line_error(invoke("query", dataset, "SELEC nonsense"))
    assert_one_line_error(invoke("query", dataset, "SELECT * FROM nosuchtable"))
    assert_one_line_error(invoke("export", env.sessions, "--parquet", dataset, "-o", tmp_path / "x"))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert rows(empty, "SELECT count(*) AS n FROM usage") == [{"n": 0}]  # an empty dataset is a dataset
    table = invoke("query", dataset, "SELECT model, sum(total_tokens) AS tokens FROM usage GROUP BY 1 ORDER BY 1")
    assert table.exit_code == 0 and "tokens" in table.stdout.splitlines()[0]


def test_what_no_encoder_takes_still_goes_into_parquet(env: Env, tmp_path: Path) -> None:
    from test_export import HOSTILE_LINES

    source = tmp_path / "hostile.jsonl"
    source.write_text("\n".join(HOSTILE_LINES) + "\n", encoding="utf-8")
    result = invoke("export", source, "--parquet", tmp_path / "ds")
    assert result.exit_code == 0, result.output
    usage = rows(tmp_path / "ds", "SELECT input, output, total_tokens FROM usage")
    assert usage == [{"input": 0, "output": 5, "total_tokens": 5}]  # counts beyond 64 bits are no counts
    assert len(rows(tmp_path / "ds", "SELECT text FROM messages")) == 2


def test_a_value_of_another_type_is_null_and_the_batch_keeps_the_rest(env: Env, tmp_path: Path) -> None:
    """A column is converted whole when its values fit; one that does not (a number where text goes,
    a lone surrogate) sends that column, and only its odd values, through the per-value pass."""
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}
    odd = {"type": "message", "id": 5, "parentId": ["x"], "timestamp": 7,
           "message": {"role": "user", "provider": 1, "content": "hi \ud800 there", "timestamp": 3}}
    plain = {"type": "message", "id": "b", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
             "message": {"role": "user", "content": [{"type": "text", "text": "plain"}], "timestamp": 4}}
    source = tmp_path / "odd.jsonl"
    source.write_text("".join(json.dumps(o) + "\n" for o in (header, plain, odd, plain)), encoding="utf-8")
    assert invoke("export", source, "--parquet", tmp_path / "ds").exit_code == 0
    got = rows(tmp_path / "ds", "SELECT entry_id, parent_id, timestamp FROM entries ORDER BY position")
    assert got == [{"entry_id": "b", "parent_id": None, "timestamp": "2026-01-01T00:00:01.000Z"},
                   {"entry_id": None, "parent_id": None, "timestamp": None},
                   {"entry_id": "b", "parent_id": None, "timestamp": "2026-01-01T00:00:01.000Z"}]
    got = rows(tmp_path / "ds", "SELECT role, provider, time_ms, text FROM messages ORDER BY position")
    assert got == [{"role": "user", "provider": None, "time_ms": 4, "text": "plain"},
                   {"role": "user", "provider": None, "time_ms": 3, "text": "hi \ufffd there"},
                   {"role": "user", "provider": None, "time_ms": 4, "text": "plain"}]
    written = rows(tmp_path / "ds", "SELECT json FROM entries ORDER BY position")
    assert [json.loads(r["json"]) for r in written] == [plain, odd, plain]  # each line as written


def test_the_tables_do_not_depend_on_the_batch_size(env: Env, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The big tables gather their values column by column and every table goes out a batch at a
    time: a batch of 7 rows (a batch boundary inside every session, and batches holding two
    sessions' rows) gives exactly the tables that one batch per export gives, on the fixtures, the
    hostile lines and a generated session with branches, compaction, labels and custom entries."""
    import pyarrow.parquet as pq
    from test_export import HOSTILE_LINES

    from harnesskit.export import parquet

    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text("\n".join(HOSTILE_LINES) + "\n", encoding="utf-8")
    generated = tmp_path / "generated.jsonl"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "generate.py"), "--entries", "3000",
                    "--out", str(generated)], check=True, capture_output=True)
    sources = [*[p for p in ALL_FIXTURES if p.exists()], hostile, generated,
               *sorted((ROOT / "fixtures" / "claude-code").glob("*.jsonl"))]

    def tables(name: str, batch_rows: int) -> dict[str, object]:
        monkeypatch.setattr(parquet, "BATCH_ROWS", batch_rows)
        result = invoke("export", *sources, "--parquet", tmp_path / name)
        assert result.exit_code == 0, result.output
        out = {table: pq.read_table(tmp_path / name / table) for table in parquet.SCHEMA}
        out["sessions"] = out["sessions"].drop_columns(["export_id"])
        return out

    whole, small = tables("whole", 1_000_000), tables("small", 7)
    assert whole["entries"].num_rows > 3000 and whole["tool_calls"].num_rows > 0
    for table in parquet.SCHEMA:
        assert small[table].equals(whole[table]), table


def _line(entry_id: str, message: dict, kind: str = "message") -> str:
    entry = {"type": kind, "id": entry_id, "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z"}
    if kind == "message":
        entry["message"] = {"timestamp": 1767225601000, **message}
    else:
        entry.update(message)
    return json.dumps(entry)


def _crossing_session(path: Path, damaged_at: int | None = None) -> Path:
    """A session whose middle every prefix-dependent column crosses: a tool call before the middle
    answered after it, a call id used in both halves (the later call replaces the earlier one), a
    result whose call is in the other half, a call never answered, names given in both halves, and a
    damaged line in the second half; `damaged_at` puts another damaged line there."""
    header = {"type": "session", "version": 3, "id": "cross", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}
    lines = [json.dumps(header)]
    special = {
        20: _line("n1", {"name": " first "}, "session_info"),
        30: _line("d1", {"role": "assistant", "content": [{"type": "toolCall", "id": "dup", "name": "ls",
                                                          "arguments": {}}]}),
        40: _line("a1", {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "bash",
                                                          "arguments": {"command": "ls"}}],
                         "provider": "openai", "model": "gpt-4o", "usage": {"input": 3, "output": 4}}),
        45: _line("u1", {"role": "assistant", "content": [{"type": "toolCall", "id": "never", "name": "read",
                                                          "arguments": {}}]}),
        55: _line("o1", {"role": "toolResult", "toolCallId": "none-such", "content": []}),
        60: _line("r1", {"role": "toolResult", "toolCallId": "c1", "isError": True, "content": []}),
        70: _line("d2", {"role": "assistant", "content": [{"type": "toolCall", "id": "dup", "name": "grep",
                                                          "arguments": {}}]}),
        75: '{"type":"message","id":"broken",',
        80: _line("r2", {"role": "toolResult", "toolCallId": "dup", "content": []}),
        85: _line("r3", {"role": "toolResult", "toolCallId": "dup", "content": []}),
        90: _line("n2", {"name": "second"}, "session_info"),
    }
    if damaged_at is not None:
        special[damaged_at] = "not json at all"
    filler = {"role": "user", "content": [{"type": "text", "text": "x" * 50}]}
    lines += [special.get(i) or _line(f"m{i}", filler) for i in range(1, 101)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _export_process(env: Env, sources: list[Path], dataset: Path, **environ: str) -> str:
    out = subprocess.run([sys.executable, "-m", "harnesskit", "export", *map(str, sources), "--parquet", str(dataset)],
                         env={**env.environ(**environ), "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stderr


def _sorted_tables(dataset: Path) -> dict[str, object]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from harnesskit.export import parquet

    out = {}
    for table in parquet.SCHEMA:
        data = pa.concat_tables([pq.read_table(p) for p in sorted((dataset / table).glob("part-*.parquet"))])
        if table == "sessions":
            data = data.drop_columns(["export_id"])
        out[table] = data.sort_by([(c, "ascending") for c in data.column_names])
    return out


def test_a_big_file_in_two_processes_gives_the_rows_of_one(env: Env, tmp_path: Path) -> None:
    """With a worker for the second half of every file (the threshold lowered to 1 byte), the
    dataset holds exactly the rows one process writes, and stderr names the same skipped lines in
    the same order; the worker's rows are part files of their own, complete or absent."""
    from test_export import HOSTILE_LINES

    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text("\n".join(HOSTILE_LINES) + "\n", encoding="utf-8")
    generated = tmp_path / "generated.jsonl"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "generate.py"), "--entries", "3000",
                    "--out", str(generated)], check=True, capture_output=True)
    sources = [_crossing_session(tmp_path / "cross.jsonl"), generated, hostile,
               _crossing_session(tmp_path / "early.jsonl", damaged_at=10), *[p for p in ALL_FIXTURES if p.exists()]]
    one = _export_process(env, sources, tmp_path / "one", HARNESSKIT_SPLIT="0")
    two = _export_process(env, sources, tmp_path / "two", HARNESSKIT_SPLIT_MIN_BYTES="1")
    assert two == one and "line 76: " in one and "line 11: " in one
    single, split = _sorted_tables(tmp_path / "one"), _sorted_tables(tmp_path / "two")
    assert split["tool_calls"].num_rows >= 5 and split["sessions"].num_rows == len(sources)
    for table in single:
        assert split[table].equals(single[table]), table
    cross = rows(tmp_path / "two", "SELECT name, entries, messages FROM sessions WHERE session_id = 'cross'"
                 " ORDER BY entries")
    assert cross == [{"name": "second", "entries": 98, "messages": 96},
                     {"name": "second", "entries": 99, "messages": 97}]
    calls = rows(tmp_path / "two", "SELECT call_id, name, result_entry_id, is_error FROM tool_calls"
                 " WHERE session_id = 'cross' AND file LIKE '%cross.jsonl' ORDER BY call_id")
    assert calls == [{"call_id": "c1", "name": "bash", "result_entry_id": "r1", "is_error": True},
                     {"call_id": "dup", "name": "grep", "result_entry_id": "r2", "is_error": False},
                     {"call_id": "never", "name": "read", "result_entry_id": None, "is_error": None}]
    parts = {table: sorted(p.name for p in (tmp_path / "two" / table).iterdir()) for table in parquet_tables()}
    assert len(parts["sessions"]) == len(parts["tool_calls"]) == 1  # the worker writes neither
    assert len(parts["entries"]) >= 3 and parts["entries"] == parts["messages"] == parts["usage"]
    assert all(name.startswith("part-") for names in parts.values() for name in names)  # no temporary file left


def parquet_tables() -> list[str]:
    from harnesskit.export import parquet

    return list(parquet.SCHEMA)


def test_a_damaged_first_half_is_read_in_one_process(env: Env, tmp_path: Path) -> None:
    """The worker's positions assume every line before the cut is an entry; when one is not, its
    files go and this process reads the second half itself (the rows are still one process's)."""
    source = _crossing_session(tmp_path / "early.jsonl", damaged_at=10)
    _export_process(env, [source], tmp_path / "two", HARNESSKIT_SPLIT_MIN_BYTES="1")
    _export_process(env, [source], tmp_path / "one", HARNESSKIT_SPLIT="0")
    assert all(len(list((tmp_path / "two" / t).iterdir())) == 1 for t in parquet_tables())
    single, split = _sorted_tables(tmp_path / "one"), _sorted_tables(tmp_path / "two")
    assert all(split[t].equals(single[t]) for t in single)
    assert rows(tmp_path / "two", "SELECT max(position) AS last FROM entries") == [{"last": 97}]
