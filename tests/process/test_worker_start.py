"""A forked worker (session/split.py): a Ctrl-C that comes while multiprocessing is still starting it
makes the child say nothing (no traceback of multiprocessing's), the child takes Ctrl-C again inside
its work, and a worker whose parent is killed does not outlive it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from writeside_helpers import as_from_a_shell

ROOT = Path(__file__).resolve().parents[2]

# The child is sent SIGINT at the very start of its life (an at-fork hook, before multiprocessing's
# start-up runs): as a Ctrl-C to the process group can come. Its target reports whether SIGINT is
# blocked there (it must not be: the worker takes Ctrl-C again) and sends a word back.
DRIVER = """
import os, signal, sys
from harnesskit.session import split

def target(conn):
    blocked = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    conn.send_bytes(b"blocked" if blocked else b"ran")

if sys.argv[1] == "early":
    os.register_at_fork(after_in_child=lambda: os.kill(os.getpid(), signal.SIGINT))
here, worker = split.fork_worker(target, (), duplex=False)
try:
    print(here.recv_bytes().decode())
except EOFError:
    print("stopped")
worker.join(30)
print(worker.exitcode)
"""


def _drive(mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", DRIVER, mode], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
                          preexec_fn=as_from_a_shell)  # SIGINT as a shell's job has it, whatever the test run's


def test_a_ctrl_c_while_the_worker_starts_prints_nothing() -> None:
    done = _drive("early")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no "Process ForkProcess-1: Traceback ... KeyboardInterrupt"
    assert done.stdout.split() == ["stopped", "0"]  # the Ctrl-C ended the worker before its work


def test_the_worker_takes_ctrl_c_again_in_its_work() -> None:
    done = _drive("plain")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ran", "0"]
    assert done.stderr == ""


# A worker that writes more than a pipe holds, to a parent that never reads: as `inspect`'s worker
# does when the parent is killed (`bench.py`'s first-row measurement kills it after one row).
WRITER = """
import sys, time
from harnesskit.session import split

def target(conn):
    while True:
        conn.send_bytes(b"x" * 65536)

here, worker = split.fork_worker(target, (), duplex=False)
print(worker.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        state = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("State:"))
    except (OSError, StopIteration):
        return False
    return "Z" not in state.split()[1]


def test_a_worker_whose_parent_is_killed_ends() -> None:
    proc = subprocess.Popen([sys.executable, "-c", WRITER], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, cwd=ROOT, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert proc.stdout is not None
    worker = int(proc.stdout.readline())
    time.sleep(0.2)  # the worker fills the pipe and blocks in its write
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    deadline = time.monotonic() + 60  # a guard against a worker left forever, not a timing assertion
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    still = _alive(worker)
    if still:
        os.kill(worker, signal.SIGKILL)
    assert not still, "the worker outlived its killed parent"
