"""`inspect --tree` read in two processes (a forked worker collects the second half, sends all but the lines'
bodies in pickled batches, and draws its own half's lines of the walk the parent plans) prints exactly
what one process prints, stdout and stderr, on every file: the fixtures, damaged copies, generated
sessions with branches, compactions and labels, and files made to put each thing the parent merges
across the cut (labels set and cleared, the name, duplicate and cyclic ids). A failing worker costs
only time, whether it fails collecting or drawing; Ctrl-C stops both processes with one line.
HARNESSKIT_SPLIT_MIN_BYTES=0 splits even these small files; HARNESSKIT_SPLIT=0 reads in one process."""

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
from differential import SEEDS, damages, mutate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from writeside_helpers import isolate

from harnesskit.cli import tree_stream
from harnesskit.session import split

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("hk_generate_tree_split", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)

HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(tmp_path, monkeypatch)


def tree_of(run, path: Path, monkeypatch: pytest.MonkeyPatch, split_it: bool, width: int = 100) -> tuple:  # noqa: ANN001
    with monkeypatch.context() as m:
        m.setenv("HARNESSKIT_SPLIT", "1" if split_it else "0")
        m.setenv("HARNESSKIT_SPLIT_MIN_BYTES", "0")
        result = run("inspect", path, "--tree", "--width", str(width))
    return result.exit_code, result.stdout, result.stderr


def assert_same(run, path: Path, monkeypatch: pytest.MonkeyPatch, width: int = 100) -> tuple:  # noqa: ANN001
    one = tree_of(run, path, monkeypatch, False, width)
    assert tree_of(run, path, monkeypatch, True, width) == one
    return one


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the split did: 'forked' when a worker started, 'merged' when its columns were taken, 'joined'
    when the links of both halves made the tree ('one tree': join_halves found an id twice in a half)."""
    seen: list[str] = []
    fork, extend, join = split.fork_worker, tree_stream.Columns.extend, tree_stream.join_halves

    def forking(*args: object, **kwargs: object):  # noqa: ANN202
        seen.append("forked")
        return fork(*args, **kwargs)

    def extending(self: tree_stream.Columns, later: tree_stream.Columns, base: int) -> None:
        if base:  # the worker's half, renumbered after the parent's
            seen.append("merged")
        extend(self, later, base)

    def joining(*args: object, **kwargs: object):  # noqa: ANN202
        joined = join(*args, **kwargs)  # type: ignore[arg-type]
        seen.append("one tree" if joined is None else "joined")
        return joined

    monkeypatch.setattr(split, "fork_worker", forking)
    monkeypatch.setattr(tree_stream.Columns, "extend", extending)
    monkeypatch.setattr(tree_stream, "join_halves", joining)
    return seen


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.name)
def test_fixtures(run, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    for width in (30, 100):
        assert_same(run, path, monkeypatch, width)


def test_generated_sessions_split_and_merge(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                            spy: list[str]) -> None:
    monkeypatch.setattr(tree_stream, "BATCH", 333)  # many batches (the worker is forked: it sees this too)
    for seed in (1, 2):
        path = generate.generate(tmp_path / f"s{seed}.jsonl", 4000, seed=seed)
        types = {json.loads(line)["type"] for line in path.read_text().splitlines()}
        assert {"label", "compaction", "branch_summary"} <= types  # what the merge must carry across
        code, out, err = assert_same(run, path, monkeypatch)
        assert code == 0 and err == "" and "entries=4000" in out and "├─ " in out and "← leaf" in out
    assert spy == ["forked", "merged", "joined"] * 2


def test_off_switch_and_threshold(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: list[str]) -> None:  # noqa: ANN001
    path = generate.generate(tmp_path / "s.jsonl", 500, seed=3)
    tree_of(run, path, monkeypatch, False)
    monkeypatch.setenv("HARNESSKIT_SPLIT_MIN_BYTES", str(path.stat().st_size + 1))  # too small to split
    run("inspect", path, "--tree")
    monkeypatch.delenv("HARNESSKIT_SPLIT_MIN_BYTES")  # the default: 32 MB
    run("inspect", path, "--tree")
    assert spy == []
    tree_of(run, path, monkeypatch, True)
    assert spy == ["forked", "merged", "joined"]


def entry(i: int, parent: str | None, **extra: object) -> dict:
    return {"type": "message", "id": f"{i:08x}", "parentId": parent, "timestamp": f"2026-01-01T00:{i % 60:02d}:00Z",
            "message": {"role": "user", "content": f"hi {i} 漢字 → x"}, **extra}


def chain(n: int) -> list[dict]:
    out, parent = [], None
    for i in range(1, n + 1):
        out.append(entry(i, parent))
        parent = out[-1]["id"]
    return out


def label(i: int, parent: str, target: str, name: str) -> dict:
    return {"type": "label", "id": f"{i:08x}", "parentId": parent, "timestamp": "2026-01-01T00:00:00Z",
            "targetId": target, "label": name}


@pytest.mark.parametrize("case", ["labels", "names", "cross-links", "links-no-id-twice", "branches",
                                  "damage-both-sides"])
def test_merges_across_the_cut(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: list[str],  # noqa: ANN001
                               case: str) -> None:
    """Each thing the parent merges, placed so that the cut (the middle of the file) falls among it."""
    entries = chain(400)
    if case == "labels":  # set before the cut, cleared or moved after it; set after it on an entry before
        entries[40] = label(41, entries[39]["id"], entries[5]["id"], "first")
        entries[41] = label(42, entries[40]["id"], entries[6]["id"], "kept")
        entries[42]["parentId"] = entries[41]["id"]
        entries[330] = label(331, entries[329]["id"], entries[5]["id"], "")
        entries[331] = label(332, entries[330]["id"], entries[7]["id"], "late")
        entries[332]["parentId"] = entries[331]["id"]
    elif case == "names":  # the last session_info name wins, a blank one clears it
        entries[50] = {"type": "session_info", "id": "0000aaaa", "parentId": entries[49]["id"], "name": "first"}
        entries[330] = {"type": "session_info", "id": "0000bbbb", "parentId": entries[329]["id"], "name": " "}
    elif case == "cross-links":  # a duplicate id, a forward and a dangling parent, a cycle, across the halves
        entries[350]["id"] = entries[20]["id"]
        entries[30]["parentId"] = entries[380]["id"]
        entries[390]["parentId"] = "ffffffff"
        entries[10]["parentId"] = entries[300]["id"]
    elif case == "links-no-id-twice":  # the same but for the duplicate id: the halves' links are joined
        entries[30]["parentId"] = entries[380]["id"]
        entries[390]["parentId"] = "ffffffff"
        entries[5]["parentId"] = "fffffffe"
        entries[10]["parentId"] = entries[300]["id"]
    elif case == "branches":  # children of first-half entries in the second half, siblings sorted by time
        for i in (250, 260, 270, 399):
            entries[i]["parentId"] = entries[i % 7 + 3]["id"]
    path = write_lines(tmp_path / f"{case}.jsonl", [HEADER, *entries])
    if case == "damage-both-sides":
        lines = path.read_bytes().splitlines(keepends=True)
        lines[40] = b'{"type": "message", "id": \n'
        lines[300] = b"\x00\xff not json\n"
        lines[350:350] = [b"\n", json.dumps(HEADER).encode() + b"\n"]
        path.write_bytes(b"".join(lines)[:-1])  # and no newline at the end
    for width in (20, 100):
        code, out, err = assert_same(run, path, monkeypatch, width)
    assert spy.count("forked") == spy.count("merged") == 2
    # an id on both sides of the cut: the tree is Tree.from_columns' (which says where)
    assert spy.count("joined") == (0 if case == "cross-links" else 2)
    if case in ("cross-links", "links-no-id-twice", "damage-both-sides"):
        assert err.count("\n") >= 3  # the warnings of both halves, in file order
    if case == "names":
        assert "name=" not in out.splitlines()[0]
    if case == "labels":
        assert "[first]" not in out and "[kept]" in out and "[late]" in out


def test_the_worker_sends_as_it_reads(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                      spy: list[str]) -> None:
    """The worker's batches leave on a thread of their own as it reads, so a full pipe does not hold up its
    reading: here the parent takes nothing from the pipe until the worker has read its whole half, and
    the pipe holds far less than its batches (long ids). Sent on the worker's own thread, they would
    wait for the parent, and the parent for them."""
    monkeypatch.setattr(tree_stream, "BATCH", 100)
    entries, parent_id = [], None
    for i in range(4000):
        entries.append({**entry(i, parent_id), "id": f"{i:0300d}"})
        parent_id = entries[-1]["id"]
    path = write_lines(tmp_path / "long-ids.jsonl", [HEADER, *entries])
    one = tree_of(run, path, monkeypatch, False)
    marker, parent, collect = tmp_path / "worker-read-its-half", os.getpid(), tree_stream.collect
    waited: list[bool] = []

    def collecting(*args: object, **kwargs: object) -> tree_stream.Columns:
        columns = collect(*args, **kwargs)  # type: ignore[arg-type]
        if os.getpid() != parent:
            marker.touch()
        else:  # the parent's half: nothing is taken from the pipe before the worker has read its own
            deadline = time.monotonic() + 30
            while not marker.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            waited.append(marker.exists())
        return columns

    monkeypatch.setattr(tree_stream, "collect", collecting)
    assert tree_of(run, path, monkeypatch, True) == one
    assert waited == [True] and spy == ["forked", "merged", "joined"]


@pytest.mark.parametrize("where", ["collecting", "sending", "asked", "drawing", "sending lines"])
def test_a_failed_worker_costs_only_time(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                         spy: list[str], where: str) -> None:
    """The worker fails (its collecting raises, or it dies after sending a batch): the parent drops what
    it got and reads the second half itself, silently. It fails after its columns were merged (it dies
    when asked for timestamps, its drawing raises, or it dies after sending some of its lines): the
    parent reads the second half again and draws the worker's lines it did not get."""
    from multiprocessing.connection import Connection

    path = generate.generate(tmp_path / "s.jsonl", 1000, seed=8)
    parent, collect, send, renderer = os.getpid(), tree_stream.collect, Connection.send_bytes, tree_stream._renderer
    recv = Connection.recv_bytes
    sent: list[int] = []
    # the worker's messages before its lines: batches of 100 entries, the diagnostics, the timestamps asked for
    lines = 3 + 1000 // 2 // 100

    def failing(*args: object, **kwargs: object):  # noqa: ANN202
        if os.getpid() != parent:
            raise MemoryError("the worker ran out")
        return collect(*args, **kwargs)

    def failing_to_draw(*args: object, **kwargs: object):  # noqa: ANN202
        if os.getpid() != parent:
            raise MemoryError("the worker ran out")
        return renderer(*args, **kwargs)

    def dying_when_asked(self: Connection, *args: object) -> bytes:
        if os.getpid() != parent:  # its first message from the parent: the timestamps it wants
            os._exit(1)
        return recv(self, *args)

    def dying_later(self: Connection, blob: bytes) -> None:
        if os.getpid() != parent and len(sent) > lines:  # after its first message of lines
            os._exit(1)
        sent.append(len(blob))
        send(self, blob)

    def dying(self: Connection, blob: bytes) -> None:
        if os.getpid() != parent and sent:
            os._exit(1)
        sent.append(len(blob))
        send(self, blob)

    one = tree_of(run, path, monkeypatch, False)
    monkeypatch.setattr(tree_stream, "BATCH", 100)
    monkeypatch.setattr(tree_stream, "CHUNK", 50)  # many groups of the worker's lines
    if where == "collecting":
        monkeypatch.setattr(tree_stream, "collect", failing)
    elif where == "sending":
        monkeypatch.setattr(Connection, "send_bytes", dying)
    elif where == "asked":
        monkeypatch.setattr(Connection, "recv_bytes", dying_when_asked)
    elif where == "drawing":
        monkeypatch.setattr(tree_stream, "_renderer", failing_to_draw)
    else:
        monkeypatch.setattr(Connection, "send_bytes", dying_later)
    assert tree_of(run, path, monkeypatch, True) == one
    # no merge where the worker failed before its columns were in: the parent read it all
    assert spy == (["forked"] if where in ("collecting", "sending") else ["forked", "merged", "joined"])


def test_the_worker_draws_its_half(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """The parent draws only lines of its own half: the worker's come drawn through the pipe."""
    path = generate.generate(tmp_path / "s.jsonl", 3000, seed=5)
    parent, renderer = os.getpid(), tree_stream._renderer
    drawn: list[int] = []

    def counting(columns: tree_stream.Columns, *args: object, **kwargs: object):  # noqa: ANN202
        render = renderer(columns, *args, **kwargs)

        def counted(segments: list) -> object:
            segments = list(segments)
            for start, stop, _, _ in segments:
                assert stop <= len(columns.bodies)  # (each process draws from bodies it holds)
                if os.getpid() == parent:
                    drawn.append(stop - start)
            return render(segments)

        return counted

    one = tree_of(run, path, monkeypatch, False)
    monkeypatch.setattr(tree_stream, "CHUNK", 64)
    monkeypatch.setattr(tree_stream, "_renderer", counting)
    drawn.clear()
    assert tree_of(run, path, monkeypatch, True) == one
    assert 1000 < sum(drawn) < 2000  # about half of the 3000 lines


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.sampled_from(SEEDS), damage=damages(), width=st.sampled_from([3, 12, 80]))
def test_damaged_fixtures(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: Path,  # noqa: ANN001
                          damage: list, width: int) -> None:
    path = tmp_path / "case.jsonl"
    path.write_bytes(mutate(seed.read_bytes(), damage))
    assert_same(run, path, monkeypatch, width)


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc to see the worker")
def test_ctrl_c_stops_both_processes(tmp_path: Path) -> None:
    """SIGINT to the process group (what a terminal's Ctrl-C does) while the worker runs: both stop, the
    parent says so in one line (exit 130, no traceback), and no worker is left behind."""
    path = generate.generate(tmp_path / "s.jsonl", 30_000, seed=9)
    env = {**os.environ, "HARNESSKIT_SPLIT": "1", "HARNESSKIT_SPLIT_MIN_BYTES": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "harnesskit", "inspect", str(path), "--tree"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    workers: list[int] = []
    deadline = time.monotonic() + 120  # a guard against a hang, not a timing assertion
    while proc.poll() is None and not workers and time.monotonic() < deadline:
        workers = _children(proc.pid)
        time.sleep(0.005)
    if not workers:
        proc.wait(120)
        pytest.skip("the file was read before the worker could be seen")
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the read ended before the signal came")
    assert proc.returncode == 130
    assert err.strip() == "harnesskit: interrupted"  # (as one process says it: no traceback from either)
    for pid in workers:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()


@pytest.mark.parametrize("mode", ["--tree", "--json", "--table"])
def test_no_import_once_the_worker_runs(tmp_path: Path, mode: str) -> None:
    """Nothing is imported by the parent from the fork on, in `--tree` and in the table and `--json`
    (interleave) alike (wcwidth's tables, 40 modules, were imported at the first wide character): a
    Ctrl-C landing as an import ends is printed by CPython as an ignored exception with its traceback,
    which test_ctrl_c_stops_both_processes met under load. A fresh interpreter, so that no other test
    has imported anything first."""
    path = generate.generate(tmp_path / "s.jsonl", 2000, seed=11)
    assert "→" in path.read_text()  # (what makes the rows measure display widths)
    script = """
import atexit, sys
from harnesskit.session import split
forked, fork = {}, split.fork_worker
def forking(*args, **kwargs):
    started = fork(*args, **kwargs)
    forked["modules"] = set(sys.modules)
    return started
split.fork_worker = forking
atexit.register(lambda: print(sorted(set(sys.modules) - forked["modules"]), file=sys.stderr))
from harnesskit.cli import main
sys.argv = ["harnesskit", "inspect", *sys.argv[1:]]
main()
"""
    env = {**os.environ, "HARNESSKIT_SPLIT": "1", "HARNESSKIT_SPLIT_MIN_BYTES": "0", "COLUMNS": "100"}
    argv = [str(path)] + ([] if mode == "--table" else [mode])
    done = subprocess.run([sys.executable, "-c", script, *argv], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "[]"


def test_head_exits_0_with_a_worker(tmp_path: Path) -> None:
    """`inspect --tree | head -1` in two processes: exit 0, nothing on stderr, one line."""
    path = generate.generate(tmp_path / "s.jsonl", 3000, seed=10)
    env = {**os.environ, "HARNESSKIT_SPLIT": "1", "HARNESSKIT_SPLIT_MIN_BYTES": "0"}
    script = 'set -o pipefail; "$@" | head -1'
    done = subprocess.run(["bash", "-c", script, "bash", sys.executable, "-m", "harnesskit", "inspect", str(path),
                           "--tree"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith("session pi v3") and len(done.stdout.splitlines()) == 1


def test_two_processes_stay_small(tmp_path: Path) -> None:
    """A real process: the parent's and the worker's peak RSS, summed, stay near one process's."""
    path = generate.generate(tmp_path / "s.jsonl", 10_000, seed=4)
    peaks = split_peaks(["inspect", str(path), "--tree"], dict(os.environ))
    assert peaks["0"][1] == 0 < peaks["1"][1]  # a worker ran only when asked to
    assert sum(peaks["1"]) < 2.5 * peaks["0"][0]
