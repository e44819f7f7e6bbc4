"""`make fuzz`: the differential test of tests/unit/test_differential.py on many more damaged files.

    python tests/fuzz_differential.py                      # 10,000 cases
    python tests/fuzz_differential.py --cases 50000 --seed 7 --jobs 2 --timeout 30

Each case is a fixture with one to four random damages (differential.mutate), compared by
differential.disagreements. Cases run in child processes that report one line per case; a case
that reports nothing within --timeout seconds is a hang (its child is killed and the next child
starts after it). Prints the counts (cases, crashes, hangs, disagreements) and each failing case
with what reproduces it; exits 1 unless all three are 0.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import selectors
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent


def case(seed: int, number: int) -> tuple[Path, list[tuple[str, int, int]]]:
    from differential import KINDS, SEEDS

    rng = random.Random(f"{seed}:{number}")
    ops = [(rng.choice(KINDS), rng.randrange(1 << 20), rng.randrange(1 << 20)) for _ in range(rng.randint(1, 4))]
    return rng.choice(SEEDS), ops


def child(seed: int, start: int, stop: int) -> None:
    """Run cases [start, stop) and print one JSON line for each."""
    from differential import disagreements, mutate

    with tempfile.TemporaryDirectory(prefix="hk-fuzz-") as tmp:
        path = Path(tmp) / "case.jsonl"
        for number in range(start, stop):
            source, ops = case(seed, number)
            path.write_bytes(mutate(source.read_bytes(), ops))
            try:
                found = disagreements(path)
                result = {"case": number, "result": "disagree" if found else "ok", "detail": found}
            except Exception as error:  # noqa: BLE001 - a crash is what this counts
                result = {"case": number, "result": "crash",
                          "detail": [f"{type(error).__name__}: {error}"[:300], traceback.format_exc(limit=-3)[-600:]]}
            print(json.dumps(result), flush=True)


def run_range(seed: int, start: int, stop: int, timeout: float, results: list[dict]) -> None:
    """Drive children over [start, stop): restart after a hang, one case later."""
    while start < stop:
        proc = subprocess.Popen([sys.executable, __file__, "--child", str(seed), str(start), str(stop)],
                                stdout=subprocess.PIPE, text=True, cwd=HERE)
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout, selectors.EVENT_READ)
        while start < stop:
            if not selector.select(timeout):
                proc.kill()
                results.append({"case": start, "result": "hang", "detail": [f"no answer in {timeout} s"]})
                start += 1
                break
            line = proc.stdout.readline()
            if not line:  # the child died without a word for this case (a crash of the interpreter)
                proc.wait()
                results.append({"case": start, "result": "crash", "detail": [f"child exited {proc.returncode}"]})
                start += 1
                break
            result = json.loads(line)
            results.append(result)
            start = result["case"] + 1
        selector.close()
        proc.stdout.close()
        proc.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=int(os.environ.get("HARNESSKIT_FUZZ_CASES", "10000")))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds a case may take")
    parser.add_argument("--child", nargs=3, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    results: list[dict] = []
    share = -(-args.cases // args.jobs)
    threads = [threading.Thread(target=run_range, args=(args.seed, lo, min(lo + share, args.cases), args.timeout,
                                                        results))
               for lo in range(0, args.cases, share)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    counts = {kind: sum(r["result"] == kind for r in results) for kind in ("crash", "hang", "disagree")}
    for r in sorted((r for r in results if r["result"] != "ok"), key=lambda r: r["case"])[:20]:
        source, ops = case(args.seed, r["case"])
        print(f"case {r['case']} ({r['result']}): {source.name} {ops}: {r['detail']}")
    print(f"cases: {len(results)}  crashes: {counts['crash']}  hangs: {counts['hang']}  "
          f"disagreements: {counts['disagree']}")
    return 0 if len(results) == args.cases and not any(counts.values()) else 1


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    raise SystemExit(main())
