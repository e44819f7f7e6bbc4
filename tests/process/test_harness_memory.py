"""A Claude Code transcript is validated in one streaming pass: memory does not grow with the file's
size (a 50 MB transcript costs about what a 10 MB one does), which is what lets a 1 GB one through
(benchmarks/claude_transcript.py measures that one)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("hk_claude_transcript", ROOT / "benchmarks" / "claude_transcript.py")
generator = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generator)


def peak(path: Path) -> tuple[int, int, int]:
    out = subprocess.run([sys.executable, "-c", generator.VALIDATE, str(path)], capture_output=True, text=True,
                         timeout=600, check=True)
    kb, entries, errors = map(int, out.stdout.split())
    return kb, entries, errors


def test_validating_a_transcript_five_times_larger_costs_no_more_memory(tmp_path: Path) -> None:
    small_kb, small_entries, small_errors = peak(generator.write(tmp_path / "small.jsonl", 10))
    big_kb, big_entries, big_errors = peak(generator.write(tmp_path / "big.jsonl", 50))
    assert small_errors == big_errors == 0
    assert big_entries > 4 * small_entries  # it really read five times as much
    # 40 MB more file: what is kept per entry (its id, parent, tool call ids) is a few hundred bytes,
    # so the peak may rise by a few MB, never by anything near the 40 MB a kept file would cost
    assert big_kb - small_kb < 8 * 1024, (small_kb, big_kb)
