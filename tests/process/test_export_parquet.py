"""`export --parquet` of a big file, in real processes: memory does not grow with the file (with the
second half in a worker), and a killed export leaves nothing a reader of the dataset takes as a part."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from writeside_helpers import Env, isolate

pytest.importorskip("pyarrow", reason="pyarrow is absent (pip install 'harnesskit[fleet]')")

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("hk_generate_parquet", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)
EXPORT = [sys.executable, "-m", "harnesskit", "export"]


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Generated pi sessions of 20,000 entries and 80,000. Two batches of rows in each process fill
    the writers' pipeline (at 10,000, one batch each, the peak is lower: 154 MB against 176 MB at
    20,000 and 182 MB at 80,000), so the smaller one already shows the steady state."""
    out = tmp_path_factory.mktemp("generated")
    return {"small": generate.generate(out / "small.jsonl", 20_000, seed=5),
            "big": generate.generate(out / "big.jsonl", 80_000, seed=6)}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def peak_rss_kb(env: Env, argv: list[str], **environ: str) -> int:
    """The highest peak RSS of the command's processes (the export and its worker), from a fresh
    helper process whose only children they are."""
    probe = ("import resource, subprocess, sys\n"
             "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)\n"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    done = subprocess.run([sys.executable, "-c", probe, *argv], env={**env.environ(**environ), "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=300, check=True)
    return int(done.stdout)


def test_memory_does_not_grow_with_the_file(env: Env, tmp_path: Path, sessions: dict[str, Path]) -> None:
    split = {"HARNESSKIT_SPLIT_MIN_BYTES": "1"}  # both in two processes
    low = peak_rss_kb(env, [*EXPORT, str(sessions["small"]), "--parquet", str(tmp_path / "a")], **split)
    high = peak_rss_kb(env, [*EXPORT, str(sessions["big"]), "--parquet", str(tmp_path / "b")], **split)
    assert high <= 1.25 * low, (low, high)  # four times the file, not four times the memory
    assert len(list((tmp_path / "b" / "entries").glob("part-*.parquet"))) == 2  # the worker's part, and ours


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _gone(pid: int) -> bool:
    try:
        state = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("State:"))
    except (OSError, StopIteration):
        return True
    return "Z" in state.split()[1]


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc to find the worker")
def test_a_killed_export_leaves_no_part_files(env: Env, tmp_path: Path, sessions: dict[str, Path]) -> None:
    """SIGKILL while both processes write: no `part-*.parquet` appears (what there is of the export
    is dot files, which readers skip), the worker stops by itself, and the dataset reads as empty."""
    source = sessions["big"]
    dataset = tmp_path / "ds"
    proc = subprocess.Popen([*EXPORT, str(source), "--parquet", str(dataset)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**env.environ(HARNESSKIT_SPLIT_MIN_BYTES="1"),
                                                            "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 120  # a guard against hanging, not a timing assertion
        workers: list[int] = []
        while not workers or not list((dataset / "entries").glob(".part-*-1.parquet.tmp")):
            assert proc.poll() is None and time.monotonic() < deadline, "the export ended before a worker wrote"
            workers = _children(proc.pid)
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        while not all(_gone(w) for w in workers):
            assert time.monotonic() < deadline, "the worker outlived its parent"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not list(dataset.rglob("part-*.parquet"))
    assert list(dataset.rglob(".part-*.tmp"))  # the export had started writing
    from harnesskit.export.datasets import open_dataset

    assert open_dataset(dataset).execute("SELECT count(*) FROM entries").fetchone() == (0,)
