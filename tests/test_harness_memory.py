"""A Claude Code transcript is validated in one streaming pass: memory does not grow with the file's
size (a 50 MB transcript costs about what a 10 MB one does), which is what lets a 1 GB one through."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SESSION = "44444444-2222-4333-8444-555555555555"
PROBE = """
import resource, sys
from harnesskit.session.check import check_file
report = check_file(sys.argv[1], workers=1)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, report.entries, report.count("error"))
"""


def transcript(path: Path, megabytes: int) -> Path:
    """Turns of a prompt, a response streamed over two lines (text, tool_use), a hook progress line and
    a large tool result (a file read), until the file has the size asked for."""
    blob = "x = 1  # a line of a file the tool read\n" * 400  # ~16 KB, the size real tool results run to
    with path.open("w", encoding="utf-8") as fp:
        parent = None
        turn = 0
        while fp.tell() < megabytes << 20:
            base = f"{turn:08x}"
            ids = [f"{base}-0000-4000-8000-{n:012d}" for n in range(5)]

            def line(kind: str, uid: str, parent_uuid: str | None, **rest: object) -> None:
                fp.write(json.dumps({"parentUuid": parent_uuid, "isSidechain": False, "sessionId": SESSION,
                                     "cwd": "/home/dev/proj", "type": kind, "uuid": uid,
                                     "timestamp": "2026-03-01T10:00:00.000Z", **rest}, separators=(",", ":")) + "\n")

            usage = {"input_tokens": 3, "output_tokens": 9, "cache_read_input_tokens": 100,
                     "cache_creation_input_tokens": 5}
            message = {"id": f"msg_{base}", "role": "assistant", "model": "claude-sonnet-4-5", "usage": usage}
            line("user", ids[0], parent, message={"role": "user", "content": f"turn {turn}: read the file"})
            line("assistant", ids[1], ids[0], message={**message, "content": [{"type": "text", "text": "Reading."}]})
            line("assistant", ids[2], ids[1], message={**message, "stop_reason": "tool_use", "content": [
                {"type": "tool_use", "id": f"toolu_{base}", "name": "Read", "input": {"file_path": "a.py"}}]})
            line("progress", ids[3], ids[2], data={"type": "hook_progress", "hookEvent": "PostToolUse"})
            line("user", ids[4], ids[3], message={"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{base}", "content": blob}]})
            parent = ids[4]
            turn += 1
    return path


def peak(path: Path) -> tuple[int, int, int]:
    out = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, timeout=600,
                         check=True)
    kb, entries, errors = map(int, out.stdout.split())
    return kb, entries, errors


def test_validating_a_transcript_five_times_larger_costs_no_more_memory(tmp_path: Path) -> None:
    small_kb, small_entries, small_errors = peak(transcript(tmp_path / "small.jsonl", 10))
    big_kb, big_entries, big_errors = peak(transcript(tmp_path / "big.jsonl", 50))
    assert small_errors == big_errors == 0
    assert big_entries > 4 * small_entries  # it really read five times as much
    # 40 MB more file: what is kept per entry (its id, parent, tool call ids) is a few hundred bytes,
    # so the peak may rise by a few MB, never by anything near the 40 MB a kept file would cost
    assert big_kb - small_kb < 8 * 1024, (small_kb, big_kb)
