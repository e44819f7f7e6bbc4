"""The `inspect` table and `--json` of a big v3 file from two processes taking turns by blocks
(session/interleave.py) print exactly what one process prints, stdout and stderr, on every file: the
fixtures, damaged copies, generated sessions, and files made to put each thing that crosses blocks at
a block's edge (row numbers, the held --json leaf row, the name, duplicate, forward and dangling ids,
damaged lines, a missing final newline). HARNESSKIT_SPLIT_MIN_BYTES=0 splits even these small files
and a tiny interleave.BLOCK makes many blocks; HARNESSKIT_SPLIT=0 reads in one process. Real processes
for `| head`, Ctrl-C and memory."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ALL_FIXTURES, split_peaks, write_lines
from differential import KINDS, SEEDS, mutate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from writeside_helpers import as_from_a_shell, isolate

from harnesskit.session import interleave, split

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("hk_generate_rows", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)

MODES = [[], ["--json"], ["--format", "github"], ["--format", "grid"], ["--format", "tsv"]]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(tmp_path, monkeypatch)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """'forked' when a worker started; 'absorbed' for each block the parent took from it."""
    seen: list[str] = []
    fork, absorb = split.fork_worker, interleave.TreeWatch.absorb

    def forking(*args: object, **kwargs: object):  # noqa: ANN202
        seen.append("forked")
        return fork(*args, **kwargs)

    def absorbing(self: interleave.TreeWatch, block: interleave.TreeWatch) -> None:
        seen.append("absorbed")
        absorb(self, block)

    monkeypatch.setattr(split, "fork_worker", forking)
    monkeypatch.setattr(interleave.TreeWatch, "absorb", absorbing)
    return seen


def rows_of(run, path: Path, monkeypatch: pytest.MonkeyPatch, split_it: bool, mode: list[str],  # noqa: ANN001
            block: int) -> tuple:
    with monkeypatch.context() as m:
        m.setenv("HARNESSKIT_SPLIT", "1" if split_it else "0")
        m.setenv("HARNESSKIT_SPLIT_MIN_BYTES", "0")
        m.setattr(interleave, "BLOCK", block)
        result = run("inspect", path, "--width", "100", *mode)
    return result.exit_code, result.stdout_bytes, result.stderr


def assert_same(run, path: Path, monkeypatch: pytest.MonkeyPatch, blocks: tuple[int, ...] = (1, 300)) -> tuple:  # noqa: ANN001
    results = {}
    for mode in MODES:
        one = rows_of(run, path, monkeypatch, False, mode, 1)
        for block in blocks:
            assert rows_of(run, path, monkeypatch, True, mode, block) == one, (mode, block)
        results[" ".join(mode)] = one
    return results[""], results["--json"]


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.name)
def test_fixtures(run, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    assert_same(run, path, monkeypatch)


def test_generated_sessions_in_many_blocks(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                           spy: list[str]) -> None:
    path = generate.generate(tmp_path / "s.jsonl", 3000, seed=5)
    (code, table, err), (json_code, rows, json_err) = assert_same(run, path, monkeypatch, (1 << 12, 1 << 16))
    assert code == json_code == 0 and err == json_err == ""
    assert b"entries=3000" in table.splitlines()[-1]
    objects = [json.loads(line) for line in rows.splitlines()]
    assert len(objects) == 3001 and [o["leaf"] for o in objects[1:]].count(True) == 1 and objects[-1]["leaf"]
    assert [o["line"] for o in objects[1:]] == list(range(2, 3002))  # numbered across every block
    assert spy.count("forked") == 10 and spy.count("absorbed") > 10 * 5  # the worker's blocks were used


def message(i: int, parent: str | None, text: str = "") -> dict:
    return {"type": "message", "id": f"{i:08x}", "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": text or f"hi {i}", "timestamp": 0}}


HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}


def chain(n: int) -> list[dict]:
    out, parent = [], None
    for i in range(1, n + 1):
        out.append(message(i, parent))
        parent = out[-1]["id"]
    return out


@pytest.mark.parametrize("case", ["clean", "duplicate", "forward", "dangling", "names", "damage", "no-final-entry",
                                  "controls"])
def test_what_crosses_blocks(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: list[str],  # noqa: ANN001
                             case: str) -> None:
    """Each thing the parent carries from block to block, with blocks of one line (BLOCK=1) and a few."""
    entries = chain(120)
    if case == "duplicate":  # an id seen by the other process (with one line a block: odd and even)
        entries[71]["id"] = entries[72]["parentId"] = entries[20]["id"]
    elif case == "forward":
        entries[30]["parentId"] = entries[90]["id"]
    elif case == "dangling":
        entries[60]["parentId"] = "ffffffff"
    elif case == "names":  # the last string name wins; a blank one clears it; a number changes nothing
        for i, name in ((50, "first"), (80, 3), (90, " late ")):
            entries[i] = {"type": "session_info", "id": entries[i]["id"], "parentId": entries[i - 1]["id"],
                          "name": name}
    elif case == "controls":  # escaped for the terminal, DEL and C1 escaped in --json, a CR kept
        entries[40]["message"]["content"] = "bell\x07 esc\x1b[2J del\x7f c1\x9b ok"
        entries[41]["id"] = entries[42]["parentId"] = "id\x1b]0;x"
    path = write_lines(tmp_path / f"{case}.jsonl", [HEADER, *entries])
    if case == "damage":
        lines = path.read_bytes().splitlines(keepends=True)
        lines[10] = b'{"type": "message", "id": \n'
        lines[60] = b"\x00\xff not json\n"
        lines[90:90] = [b"\n", json.dumps(HEADER).encode() + b"\n"]
        path.write_bytes(b"".join(lines)[:-1])  # and no newline at the end
    elif case == "no-final-entry":  # the held --json row becomes the leaf's after blocks with no entry
        path.write_bytes(path.read_bytes() + b"\n\nnot json\n[1]\n")
    elif case == "controls":
        path.write_bytes(path.read_bytes().replace(b'"parentId":', b'"parentId":\r', 1))
    (_, table, err), (_, rows, _) = assert_same(run, path, monkeypatch, (1, 700))
    assert spy.count("forked") == 2 * len(MODES)
    if case in ("duplicate", "forward", "dangling", "damage", "no-final-entry"):
        assert err.count("\n") >= 1  # the tree's or the reader's warnings, once, in file order
    else:
        assert err == ""
    if case == "names":
        assert b"name='late'" in table.splitlines()[-1]
    if case == "no-final-entry":
        assert json.loads(rows.splitlines()[-1])["leaf"] is True
    if case == "controls":
        assert b"\x1b" not in table and b"\x7f" not in rows and b"\\u007f" in rows


def test_a_failed_worker_costs_only_time(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                         spy: list[str]) -> None:
    """The worker fails in its third block: the parent renders the rest itself, silently."""
    from harnesskit.cli import inspect

    path = generate.generate(tmp_path / "s.jsonl", 600, seed=8)
    parent, body, seen = os.getpid(), inspect.json_body, []

    def failing(items, carry, warn):  # noqa: ANN001, ANN202
        seen.append(1)
        if os.getpid() != parent and len(seen) > 2:
            raise MemoryError("the worker ran out")
        return body(items, carry, warn)

    one = rows_of(run, path, monkeypatch, False, ["--json"], 1 << 12)
    monkeypatch.setattr(inspect, "json_body", failing)
    assert rows_of(run, path, monkeypatch, True, ["--json"], 1 << 12) == one
    assert spy.count("forked") == 1 and spy.count("absorbed") == 2


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.sampled_from(SEEDS), damage=st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 1 << 20),
                                                               st.integers(0, 1 << 20)), min_size=1, max_size=3),
       block=st.sampled_from([1, 97, 1000]))
def test_damaged_fixtures(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: Path,  # noqa: ANN001
                          damage: list, block: int) -> None:
    path = tmp_path / "case.jsonl"
    path.write_bytes(mutate(seed.read_bytes(), damage))
    for mode in (["--json"], []):
        assert rows_of(run, path, monkeypatch, True, mode, block) == rows_of(run, path, monkeypatch, False, mode, 1)


def test_blocks_cover_the_file_at_line_starts(tmp_path: Path) -> None:
    data = b"a\n" + b"x" * 5000 + b"\n" + b"bb\ncc\n" * 100 + b"no end"
    path = tmp_path / "f"
    path.write_bytes(data)
    with path.open("rb") as fp:
        for size in (1, 7, 100, 4096, 1 << 20):
            blocks = list(interleave.bounds(fp.fileno(), 2, len(data), size))
            assert blocks[0][0] == 2 and blocks[-1][1] == len(data)
            assert all(a < b == c for (a, b), (c, _) in zip(blocks, blocks[1:], strict=False))
            assert all(data[b - 1:b] == b"\n" for _, b in blocks[:-1])


# ------------------------------------------------------------------ real processes


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "HARNESSKIT_SPLIT": "1", "HARNESSKIT_SPLIT_MIN_BYTES": "0", **extra}


def _gone(group: int) -> bool:
    for _ in range(100):
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate.generate(tmp_path_factory.mktemp("rows") / "big.jsonl", 30_000, seed=9)


@pytest.mark.parametrize("mode", [[], ["--json"]])
def test_head_stops_both_processes_at_once(big: Path, mode: list[str]) -> None:
    """`inspect | head`: the parent sees the closed pipe, exits 0 with nothing on stderr, the worker goes too."""
    proc = subprocess.Popen([sys.executable, "-m", "harnesskit", "inspect", str(big), *mode], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None and proc.stderr is not None
    first = [proc.stdout.readline() for _ in range(4)]
    proc.stdout.close()
    assert proc.wait(timeout=60) == 0
    assert proc.stderr.read() == b""
    assert all(first) and _gone(proc.pid)  # no orphan left in its process group


def test_ctrl_c_ends_both(big: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "harnesskit", "inspect", str(big), "--json"], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=as_from_a_shell)  # SIGINT as a shell's job has it, whatever the test run's
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.readline()  # an entry row: the worker runs (the parent waits on the unread pipe)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole foreground group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert b"Traceback" not in err and err.strip().splitlines()[-1] == b"harnesskit: interrupted"
    assert _gone(proc.pid)


def test_two_processes_stay_small(big: Path) -> None:
    """The parent's and the worker's peak RSS, summed, stay near one process's (blocks, not halves)."""
    for mode in ([], ["--json"]):
        peaks = split_peaks(["inspect", str(big), *mode], _env())
        assert peaks["0"][1] == 0 < peaks["1"][1]  # a worker ran only when asked to
        assert sum(peaks["1"]) < 2.5 * peaks["0"][0]


# the command in a real process, with interleave.BLOCK set and each write of the worker's own counted
# (its first few slowed down: a parent that did not wait for them would print in between)
_PRINTED = """
import sys, time
from harnesskit.cli import output
from harnesskit.session import interleave
interleave.BLOCK, marks = int(sys.argv.pop(1)), sys.argv.pop(1)
write, slow = output.SharedOutput.write, [0.1] * 4
def counted(self, data):
    with open(marks, "a") as fp:
        fp.write("w")
    time.sleep(slow.pop() if slow else 0)
    write(self, data)
output.SharedOutput.write = counted
from harnesskit.cli import main
main()
"""


def printed(path: Path, mode: list[str], block: int, split_it: bool, into: Path | None) -> tuple:
    """(exit code, stdout, stderr, the worker's writes) of `inspect` writing into a file or a pipe."""
    marks = path.with_suffix(".marks")
    marks.unlink(missing_ok=True)
    argv = [sys.executable, "-c", _PRINTED, str(block), str(marks), "inspect", str(path), "--width", "100", *mode]
    env = _env(HARNESSKIT_SPLIT="1" if split_it else "0")
    if into is None:
        done = subprocess.run(argv, capture_output=True, env=env, timeout=120, check=False)
        out = done.stdout
    else:
        with into.open("wb") as fp:
            done = subprocess.run(argv, stdout=fp, stderr=subprocess.PIPE, env=env, timeout=120, check=False)
        out = into.read_bytes()
    return done.returncode, out, done.stderr, len(marks.read_text()) if marks.exists() else 0


def test_the_worker_prints_its_own_blocks(tmp_path: Path) -> None:
    """Where stdout is a file or a pipe, the worker writes its blocks there itself, in turn: the same
    bytes as one process, stdout and stderr (damage, a missing newline, DEL, C1, a CR, a held leaf)."""
    entries = chain(400)
    entries[40]["message"]["content"] = "bell\x07 esc\x1b[2J del\x7f c1\x9b ok"
    entries[300]["parentId"] = "ffffffff"
    damaged = write_lines(tmp_path / "damaged.jsonl", [HEADER, *entries])
    lines = damaged.read_bytes().replace(b'"parentId":', b'"parentId":\r', 1).splitlines(keepends=True)
    lines[100] = b"\x00\xff not json\n"
    damaged.write_bytes(b"".join(lines) + b"\n\nnot json\n[1]")
    files = [generate.generate(tmp_path / "s.jsonl", 2000, seed=5), damaged]
    for path in files:
        for mode in (["--json"], []):
            one = printed(path, mode, 1 << 20, False, None)
            assert one[0] == 0 and one[3] == 0
            for block, into in ((1 << 12, None), (1 << 14, tmp_path / "out"), (1, tmp_path / "out")):
                code, out, err, writes = printed(path, mode, block, True, into)
                assert (code, out, err) == one[:3], (path.name, mode, block, into)
                assert writes > (2 if block < 1 << 14 else 0), (path.name, mode, block)
