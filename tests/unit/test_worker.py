"""The forked worker's stream (session/worker.py): items pass whole and in order, however large, while
the parent polls `ready()` and does other work; a child that dies is `Lost`, never a short item."""

from __future__ import annotations

import os

import pytest

from harnesskit.session import worker

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the worker process is forked")


def _drained(stream: worker.Stream) -> list:
    """Every item, polling `ready()` before each as the index does (other work would go there)."""
    got = []
    while True:
        while not stream.ready():
            os.sched_yield()
        try:
            got.append(next(stream))
        except StopIteration:
            return got


def test_items_larger_than_the_pipe_arrive_whole_and_in_order() -> None:
    items = [(i, bytes([i]) * (3 << 20), ["x"] * i) for i in range(4)]  # 3 MB each: more than a pipe holds
    got = _drained(worker.forked(iter(items)))
    assert got == items


def test_a_child_that_dies_mid_stream_is_lost() -> None:
    first = "x" * 200_000  # more than the child's write buffer: it reaches the pipe before the exit

    def dies() -> object:
        yield first
        yield "second"
        os._exit(3)

    stream = worker.forked(dies())
    assert next(stream) == first
    with pytest.raises(worker.Lost):
        next(stream)


def test_closing_early_ends_the_child() -> None:
    def endless() -> object:
        while True:
            yield b"x" * 100_000

    stream = worker.forked(endless())
    assert next(stream) == b"x" * 100_000
    pid = stream._pid
    stream.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: no such child any more


def test_the_child_runs_ahead_while_the_parent_is_busy(tmp_path) -> None:  # noqa: ANN001
    """The pipe holds 1 MiB; the parent's thread drains it, so a child whose items are many times that
    finishes while the parent has not yet asked for one (it would wait on the pipe otherwise)."""
    import time

    done = tmp_path / "done"
    items = [bytes([i]) * (3 << 20) for i in range(4)]

    def produce() -> object:
        yield from items
        done.touch()

    stream = worker.forked(produce())
    deadline = time.monotonic() + 20
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert done.exists(), "the child waited on the pipe while the parent was busy"
    assert list(stream) == items
