"""A Claude Code transcript of any size, and what validating it costs (time, peak memory).

    python benchmarks/claude_transcript.py              # 1024 MB, generated once under benchmarks/out/
    python benchmarks/claude_transcript.py --mb 100

Each turn is a prompt, a response streamed over two lines (text, tool_use), a hook progress line and
a ~16 KB tool result, the shape that makes real transcripts reach gigabytes. Validation and the
baseline (`json.loads` on each line) each run in a fresh process, so the peak RSS is their own.
Nothing here is a test: it only prints. (tests/process/test_harness_memory.py uses `write` for its bound.)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SESSION = "44444444-2222-4333-8444-555555555555"

VALIDATE = """
import resource, sys
from harnesskit.session.check import check_file
report = check_file(sys.argv[1], workers=1)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, report.entries, report.count("error"))
"""
BASELINE = """
import json, resource, sys
n = 0
with open(sys.argv[1], "rb") as fp:
    for line in fp:
        json.loads(line)
        n += 1
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, n, 0)
"""


def write(path: Path, megabytes: int) -> Path:
    """Whole turns until the file has at least `megabytes` MB; clean (validate finds nothing)."""
    blob = "x = 1  # a line of a file the tool read\n" * 400
    usage = {"input_tokens": 3, "output_tokens": 9, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5}
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


def measure(code: str, path: Path) -> tuple[float, int, int, int]:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    kb, count, errors = map(int, out.stdout.split())
    return time.perf_counter() - start, kb, count, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024)
    args = parser.parse_args()
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    path = out / f"claude-{args.mb}mb.jsonl"
    if not path.exists():
        write(path, args.mb)
    size = path.stat().st_size / (1 << 20)
    for name, code in (("json.loads per line", BASELINE), ("harnesskit validate", VALIDATE)):
        seconds, kb, count, errors = measure(code, path)
        print(f"{name:22} {size:8.0f} MB  {seconds:7.1f} s  {size / seconds:6.1f} MB/s  peak RSS {kb / 1024:6.1f} MB"
              f"  ({count} lines/entries, {errors} errors)")


if __name__ == "__main__":
    main()
