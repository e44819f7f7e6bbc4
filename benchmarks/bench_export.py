"""`harnesskit export` at scale (issue 12): the HTML page and the Parquet dataset of a realistic pi
session (benchmarks/generate.py, 1,000,000 entries, about 1 GB), against the json.loads-per-line
rate of the same bytes, measured in the same run. Each export runs as a fresh process; its peak RSS
is the sum of its own and its worker's (a small wrapper process samples each one's peak).

    python benchmarks/bench_export.py [--entries 1000000] [--file benchmarks/out/big.jsonl]

Targets: export throughput >= 1x the json.loads rate; memory bounded (it must not grow with the
file: the 1 GB export should stay near the memory of a small one).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# Runs the command and prints seconds, peak RSS (KB: each process's own VmHWM summed over the tree,
# sampled every 20 ms, as `--parquet` forks a worker for a big file), exit code and CPU seconds.
WRAPPER = ("import os, resource, subprocess, sys, time\n"
           "def hwm(pid):\n"
           "    try:\n"
           "        with open(f'/proc/{pid}/status') as fp:\n"
           "            return next(int(l.split()[1]) for l in fp if l.startswith('VmHWM:'))\n"
           "    except (OSError, StopIteration):\n"
           "        return 0\n"
           "def tree(pid):\n"
           "    try:\n"
           "        with open(f'/proc/{pid}/task/{pid}/children') as fp:\n"
           "            kids = [int(k) for k in fp.read().split()]\n"
           "    except OSError:\n"
           "        kids = []\n"
           "    return [pid, *[p for k in kids for p in tree(k)]]\n"
           "start = time.perf_counter()\n"
           "proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
           "peaks = {}\n"
           "while proc.poll() is None:\n"
           "    for pid in tree(proc.pid):\n"
           "        peaks[pid] = max(peaks.get(pid, 0), hwm(pid))\n"
           "    time.sleep(0.02)\n"
           "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
           "peaks[proc.pid] = max(peaks.get(proc.pid, 0), usage.ru_maxrss)\n"
           "print(time.perf_counter() - start, sum(peaks.values()), proc.returncode, usage.ru_utime + usage.ru_stime)")


def run(argv: list[str]) -> tuple[float, int, float]:
    """Seconds, peak RSS (KB) and CPU seconds (all threads) of one command in a fresh process."""
    out = subprocess.run([sys.executable, "-c", WRAPPER, *argv], capture_output=True, text=True, check=True)
    seconds, rss, code, cpu = out.stdout.split()
    if code != "0":
        raise SystemExit(f"{argv}: exit {code}")
    return float(seconds), int(rss), float(cpu)


def json_loads_seconds(path: Path) -> tuple[float, float]:
    """Seconds and CPU seconds of json.loads over every line (on a loaded machine the CPU time is
    the steadier comparison; the target is about seconds)."""
    start, cpu = time.perf_counter(), time.process_time()
    with path.open("rb") as fp:
        for raw in fp:
            json.loads(raw)
    return time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--file", type=Path, default=HERE / "out" / "big.jsonl")
    args = parser.parse_args()
    if not args.file.exists():
        args.file.parent.mkdir(parents=True, exist_ok=True)
        print(f"generating {args.entries:,} entries into {args.file} ...", flush=True)
        subprocess.run([sys.executable, str(HERE / "generate.py"), "--entries", str(args.entries),
                        "--out", str(args.file)], check=True)
    size = args.file.stat().st_size
    mb = size / 1e6
    hk = [sys.executable, "-m", "harnesskit"]
    work = Path(tempfile.mkdtemp(prefix="hk-export-bench-"))
    try:
        small = work / "small.jsonl"
        with args.file.open("rb") as src, small.open("wb") as dst:
            for i, line in enumerate(src):
                if i >= 10_000:
                    break
                dst.write(line)
        before = json_loads_seconds(args.file)
        rows = []
        for label, argv in (
            ("export --html", [*hk, "export", str(args.file), "--html", "-o", str(work / "page.html")]),
            ("export --parquet", [*hk, "export", str(args.file), "--parquet", str(work / "dataset")]),
        ):
            small_argv = [str(small) if a == str(args.file) else a for a in argv]
            small_argv = [a.replace("page.html", "small.html").replace("dataset", "small-dataset") for a in small_argv]
            _, small_rss, _ = run(small_argv)
            seconds, rss, cpu = run(argv)
            rows.append((label, seconds, rss, small_rss, cpu))
        after = json_loads_seconds(args.file)
        baseline, baseline_cpu = min(before, after)
        print(f"\n{args.file}: {mb:,.0f} MB; json.loads per line {baseline:.1f} s ({mb / baseline:,.0f} MB/s), "
              f"{baseline_cpu:.1f} CPU s")
        print(f"{'command':<20} {'seconds':>8} {'MB/s':>7} {'vs json.loads':>14} {'peak RSS':>10}"
              f" {'(10k entries)':>14} {'CPU s':>7} {'CPU vs json.loads':>18}")
        for label, seconds, rss, small_rss, cpu in rows:
            print(f"{label:<20} {seconds:>8.1f} {mb / seconds:>7,.0f} {baseline / seconds:>13.2f}x "
                  f"{rss / 1024:>8.0f}MB {small_rss / 1024:>12.0f}MB {cpu:>7.1f} {baseline_cpu / cpu:>17.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
