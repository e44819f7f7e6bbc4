"""A forked worker (session/split.py) and a Ctrl-C that comes while multiprocessing is still starting
it: the child says nothing (no traceback of multiprocessing's), and takes Ctrl-C again inside its work."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
                          cwd=ROOT, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})


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
