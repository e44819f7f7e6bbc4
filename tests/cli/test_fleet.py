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
