"""`inspect --stats` read in two processes (a forked worker counts the second half) prints exactly what
one process prints, stdout and stderr, on every file: the fixtures, damaged copies, generated sessions
with branches, compactions and labels, and files made to put each kind of merge across the cut.
HARNESSKIT_SPLIT_MIN_BYTES=0 splits even these small files; HARNESSKIT_SPLIT=0 reads in one process."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest
from conftest import ALL_FIXTURES, split_peaks, write_lines
from differential import SEEDS, damages, mutate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from writeside_helpers import isolate

from harnesskit.session import split, stream_stats
from harnesskit.session.stats import StatsCounter

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("hk_generate_split", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(tmp_path, monkeypatch)


def stats_of(run, path: Path, monkeypatch: pytest.MonkeyPatch, split_it: bool, *extra: str) -> tuple:  # noqa: ANN001
    with monkeypatch.context() as m:
        m.setenv("HARNESSKIT_SPLIT", "1" if split_it else "0")
        m.setenv("HARNESSKIT_SPLIT_MIN_BYTES", "0")
        result = run("inspect", path, "--stats", "--width", "100", *extra)
    return result.exit_code, result.stdout, result.stderr


def assert_same(run, path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple:  # noqa: ANN001
    one = stats_of(run, path, monkeypatch, False)
    assert stats_of(run, path, monkeypatch, True) == one
    assert stats_of(run, path, monkeypatch, True, "--json") == stats_of(run, path, monkeypatch, False, "--json")
    return one


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the split did: 'forked' when a worker started, 'merged' when its counts were taken."""
    seen: list[str] = []
    fork, merge = split.fork_worker, StatsCounter.merge

    def forking(*args: object, **kwargs: object):  # noqa: ANN202
        seen.append("forked")
        return fork(*args, **kwargs)

    def merging(self: StatsCounter, later: StatsCounter) -> bool:
        done = merge(self, later)
        seen.append("merged" if done else "refused")
        return done

    monkeypatch.setattr(split, "fork_worker", forking)
    monkeypatch.setattr(StatsCounter, "merge", merging)
    return seen


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.name)
def test_fixtures(run, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    assert_same(run, path, monkeypatch)


def test_generated_sessions_split_and_merge(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                            spy: list[str]) -> None:
    for seed in (1, 2):
        path = generate.generate(tmp_path / f"s{seed}.jsonl", 4000, seed=seed)
        types = {json.loads(line)["type"] for line in path.read_text().splitlines()}
        assert {"label", "compaction", "branch_summary"} <= types  # what the merge must carry across
        code, out, err = assert_same(run, path, monkeypatch)
        assert code == 0 and err == "" and "4000" in out
    assert spy.count("forked") == 4 and spy.count("merged") == 4  # the split ran (table and --json, twice)


def test_off_switch_and_threshold(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: list[str]) -> None:  # noqa: ANN001
    path = generate.generate(tmp_path / "s.jsonl", 500, seed=3)
    stats_of(run, path, monkeypatch, False)
    monkeypatch.setenv("HARNESSKIT_SPLIT_MIN_BYTES", str(path.stat().st_size + 1))  # too small to split
    run("inspect", path, "--stats")
    monkeypatch.delenv("HARNESSKIT_SPLIT_MIN_BYTES")  # the default: 32 MB
    run("inspect", path, "--stats")
    assert spy == []
    stats_of(run, path, monkeypatch, True)
    assert spy == ["forked", "merged"]


def entry(i: int, parent: str | None, **extra: object) -> dict:
    return {"type": "message", "id": f"{i:08x}", "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": f"hi {i}", "timestamp": 0}, **extra}


def assistant(i: int, parent: str | None, cost: object, tokens: object = 3, tool: str = "read") -> dict:
    return {"type": "message", "id": f"{i:08x}", "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "assistant", "content": [{"type": "toolCall", "id": f"c{i}", "name": tool,
                                                          "arguments": {}}],
                        "usage": {"input": tokens, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                                  "totalTokens": 4, "cost": {"total": cost}}, "timestamp": 0}}


HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}


def chain(n: int, make) -> list[dict]:  # noqa: ANN001
    out, parent = [], None
    for i in range(1, n + 1):
        out.append(make(i, parent))
        parent = out[-1]["id"]
    return out


@pytest.mark.parametrize("case", ["costs", "float-tokens", "cross-links", "names", "damage-both-sides"])
def test_merges_across_the_cut(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: list[str],  # noqa: ANN001
                               case: str) -> None:
    """Each thing the parent merges, placed so that the cut (the middle of the file) falls among it."""
    if case == "costs":  # a float sum depends on its order: 1e17 + 1.0 is 1e17, 1e17 + (1.0 + 1.0 ...) is not
        entries = chain(400, lambda i, p: assistant(i, p, 1e17 if i == 1 else [0.1, 1.0, 3.3e-7][i % 3],
                                                    tool=f"t{i % 7}"))
    elif case == "float-tokens":  # not mergeable exactly: the parent counts the second half again
        entries = chain(400, lambda i, p: assistant(i, p, 0.1, tokens=1.5 if i == 300 else 2 ** 60))
    elif case == "cross-links":  # a duplicate id, a forward and a dangling parent, a cycle, across the halves
        entries = chain(400, entry)
        entries[350]["id"] = entries[20]["id"]
        entries[30]["parentId"] = entries[380]["id"]
        entries[390]["parentId"] = "ffffffff"
        entries[10]["parentId"] = entries[300]["id"]
    elif case == "names":  # the last session_info name wins, a blank one clears it
        entries = chain(400, entry)
        entries[50] = {"type": "session_info", "id": "0000aaaa", "parentId": entries[49]["id"], "name": "first"}
        entries[330] = {"type": "session_info", "id": "0000bbbb", "parentId": entries[329]["id"], "name": " "}
    else:
        entries = chain(400, entry)
    path = write_lines(tmp_path / f"{case}.jsonl", [HEADER, *entries])
    if case == "damage-both-sides":
        lines = path.read_bytes().splitlines(keepends=True)
        lines[40] = b'{"type": "message", "id": \n'
        lines[300] = b"\x00\xff not json\n"
        lines[350:350] = [b"\n", json.dumps(HEADER).encode() + b"\n"]
        path.write_bytes(b"".join(lines)[:-1])  # and no newline at the end
    code, out, err = assert_same(run, path, monkeypatch)
    assert spy.count("forked") == 2
    assert spy.count("refused" if case == "float-tokens" else "merged") == 2
    if case in ("cross-links", "damage-both-sides"):
        assert err.count("\n") >= 3  # the warnings of both halves, in file order
    if case == "names":
        assert "name=" not in out.splitlines()[0]


def test_a_failed_worker_costs_only_time(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                         spy: list[str]) -> None:
    """The worker fails (here: its count raises): the parent counts the second half itself, silently."""
    path = generate.generate(tmp_path / "s.jsonl", 1000, seed=8)
    parent, count = os.getpid(), stream_stats.tally

    def failing(*args: object):  # noqa: ANN202
        if os.getpid() != parent:
            raise MemoryError("the worker ran out")
        return count(*args)

    one = stats_of(run, path, monkeypatch, False)
    monkeypatch.setattr(stream_stats, "tally", failing)
    assert stats_of(run, path, monkeypatch, True) == one
    assert spy == ["forked"]  # no merge: the parent counted it all


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.sampled_from(SEEDS), damage=damages())
def test_damaged_fixtures(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: Path,  # noqa: ANN001
                          damage: list) -> None:
    path = tmp_path / "case.jsonl"
    path.write_bytes(mutate(seed.read_bytes(), damage))
    assert_same(run, path, monkeypatch)


def test_two_processes_stay_small(tmp_path: Path) -> None:
    """A real process: the parent's and the worker's peak RSS, summed, stay near one process's."""
    path = generate.generate(tmp_path / "s.jsonl", 20_000, seed=4)
    peaks = split_peaks(["inspect", str(path), "--stats"], dict(os.environ))
    assert peaks["0"][1] == 0 < peaks["1"][1]  # a worker ran only when asked to
    assert sum(peaks["1"]) < 2.5 * peaks["0"][0]
