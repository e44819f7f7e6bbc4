"""Write a realistic pi v3 session file of N entries, for benchmarks and tests.

    python benchmarks/generate.py --entries 1000000 --out benchmarks/out/big.jsonl [--seed 1]

The entries copy pi 0.73.1's exact shapes and key order (fixtures/pi/v3/*.jsonl): a header, then
model_change and thinking_level_change, then turns of user -> (assistant toolCall -> toolResult)* ->
assistant text, with usage on every assistant. Tool results range from a few hundred bytes to tens
of KB (about 1 KB per entry on average, so 1,000,000 entries are about 1 GB). Every so often a turn
starts from an earlier entry (a branch, sometimes with a branch_summary), and there are labels,
session_info names, custom / custom_message entries (which put `customType` before `id`), model and
thinking level changes, and a compaction whenever the path since the latest one passes 400-1,500
entries (every one to two thousand entries of the file), so the context from the leaf is a few hundred
messages.

The same seed gives the same bytes. Every generated file passes `check_file` with no errors.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import orjson

_BASE_MS = 1_796_115_214_000  # 2026-12-01T08:53:34Z, as the fixtures

_WORDS = (
    "the a of to and in is it that for on with as this be are was file line function value error test "
    "session entry parent tree leaf context model tool result call read write list path branch label "
    "compaction summary token usage cost stream json schema check index offset byte memory speed cache "
    "import return class def self none true false async await loop event message user assistant"
).split()
_UNICODE = ("naïve", "café", "—", "→", "你好", "überall", "ç", "日本語", "ok ✓")
_TOOLS = ("bash", "read", "ls", "calc", "grep", "edit")


def _iso(ms: int) -> str:
    seconds, milli = divmod(ms, 1000)
    days, rest = divmod(seconds, 86400)
    hour, rest = divmod(rest, 3600)
    minute, second = divmod(rest, 60)
    # days since 1970-01-01 -> civil date (Howard Hinnant's algorithm; no datetime per entry)
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    year = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year += month <= 2
    return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}.{milli:03d}Z"


class _Generator:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.ms = _BASE_MS
        self.taken: set[str] = set()
        self.parent_of: dict[str, str | None] = {}
        self.kind_of: dict[str, str] = {}
        self.leaf: str | None = None
        self.turn_ends: list[str] = []  # final assistant ids, where a branch may start
        self.all_ids: list[str] = []
        self.count = 0
        self.depth_of: dict[str | None, int] = {None: 0}  # path entries since the latest compaction
        self.next_compaction = self.rng.randint(400, 1500)
        self.call_counter = 0
        # a pool of output lines: tool results are random runs of these
        pool = []
        for _ in range(4000):
            n = self.rng.randint(3, 14)
            words = self.rng.choices(_WORDS, k=n)
            if self.rng.random() < 0.08:
                words.append(self.rng.choice(_UNICODE))
            if self.rng.random() < 0.1:
                words.append('"quoted"')
            line = " ".join(words)
            if self.rng.random() < 0.3:
                line = f"src/harnesskit/{self.rng.choice(_WORDS)}.py:{self.rng.randint(1, 900)}: {line}"
            pool.append(line)
        self.pool = pool

    # ------------------------------------------------------------------ small helpers

    def _tick(self, low: int = 5, high: int = 900) -> int:
        self.ms += self.rng.randint(low, high)
        return self.ms

    def _id(self) -> str:
        while True:
            candidate = f"{self.rng.getrandbits(32):08x}"
            if candidate not in self.taken:
                self.taken.add(candidate)
                return candidate

    def _text(self, low: int, high: int) -> str:
        return " ".join(self.rng.choices(_WORDS, k=self.rng.randint(low, high)))

    def _output(self) -> str:
        # lognormal sizes: median ~550 bytes, a long tail to ~40 KB
        size = min(int(self.rng.lognormvariate(6.35, 1.2)), 40_000)
        lines: list[str] = []
        total = 0
        while total < size:
            line = self.rng.choice(self.pool)
            lines.append(line)
            total += len(line) + 1
        return "\n".join(lines) + "\n"

    def _usage(self) -> dict:
        inp = self.rng.randint(500, 120_000)
        out = self.rng.randint(1, 4000)
        cache = self.rng.choice((0, 0, self.rng.randint(0, inp)))
        return {
            "input": inp,
            "output": out,
            "cacheRead": cache,
            "cacheWrite": 0,
            "totalTokens": inp + out + cache,
            "cost": {
                "input": round(inp * 3e-6, 6),
                "output": round(out * 15e-6, 6),
                "cacheRead": round(cache * 3e-7, 6),
                "cacheWrite": 0,
                "total": round(inp * 3e-6 + out * 15e-6 + cache * 3e-7, 6),
            },
        }

    def _entry(self, kind: str, payload: dict, parent: str | None | type[Ellipsis] = ...) -> dict:
        entry_id = self._id()
        parent_id = self.leaf if parent is ... else parent
        self.parent_of[entry_id] = parent_id
        self.kind_of[entry_id] = kind
        self.all_ids.append(entry_id)
        self.leaf = entry_id
        self.count += 1
        self.depth_of[entry_id] = 0 if kind == "compaction" else self.depth_of[parent_id] + 1
        if kind == "custom" or kind == "custom_message":
            # pi spreads the extension's fields first: customType comes before id (s12_meta_entries)
            return {"type": kind, **payload, "id": entry_id, "parentId": parent_id,
                    "timestamp": _iso(self._tick(0, 20))}
        return {"type": kind, "id": entry_id, "parentId": parent_id, "timestamp": _iso(self._tick()),
                **payload}

    def _assistant(self, content: list, stop: str) -> dict:
        return self._entry("message", {"message": {
            "role": "assistant",
            "content": content,
            "api": "openai-completions",
            "provider": self.provider,
            "model": self.model,
            "usage": self._usage(),
            "stopReason": stop,
            "timestamp": self.ms - self.rng.randint(1, 30),
            "responseId": f"chatcmpl-{self.rng.getrandbits(96):024x}",
        }})

    # ------------------------------------------------------------------ the session

    def lines(self, n: int):  # noqa: ANN201 - an iterator of dicts
        rng = self.rng
        a, b, c, d = rng.getrandbits(16), rng.getrandbits(12), 0x8000 | rng.getrandbits(14), rng.getrandbits(48)
        session_id = f"01a230cf-{a:04x}-7{b:03x}-{c:04x}-{d:012x}"
        yield {"type": "session", "version": 3, "id": session_id, "timestamp": _iso(self.ms),
               "cwd": "/home/dev/proj"}
        self.provider, self.model = "fake", "fake-model"
        yield self._entry("model_change", {"provider": self.provider, "modelId": self.model}, None)
        if self.count < n:
            yield self._entry("thinking_level_change", {"thinkingLevel": "off"})
        while self.count < n:
            yield from self._between_turns(n)
            yield from self._turn(n)

    def _between_turns(self, n: int):  # noqa: ANN202
        rng = self.rng
        extras = []
        if self.depth_of[self.leaf] >= self.next_compaction:
            extras.append(self._compaction())
        roll = rng.random()
        if roll < 0.03 and len(self.turn_ends) > 3:
            # a branch: go back to an earlier turn end (pi's /tree), sometimes summarising the old branch
            target = rng.choice(self.turn_ends[-40:-1])
            if rng.random() < 0.4:
                old_leaf = self.leaf
                extras.append(("branch_summary", {
                    "fromId": old_leaf,
                    "summary": "The user explored a different conversation branch before returning here.\n"
                               "Summary of that exploration:\n\n" + self._text(30, 120),
                    "details": {"readFiles": [], "modifiedFiles": []},
                    "fromHook": False,
                }, target))
            else:
                self.leaf = target
        elif roll < 0.05 and self.all_ids:
            name = None if rng.random() < 0.15 else f"{rng.choice(('checkpoint', 'good', 'todo', 'bug'))}-{self.count}"
            extras.append(("label", {"targetId": rng.choice(self.all_ids[-500:]), "label": name}, ...))
        elif roll < 0.055:
            extras.append(("session_info", {"name": f"Benchmark session {self.count}"}, ...))
        elif roll < 0.065:
            extras.append(("custom", {"customType": "peer-state",
                                      "data": {"note": self._text(3, 12), "n": self.count}}, ...))
        elif roll < 0.07:
            extras.append(("custom_message", {"customType": "peer-note", "content": self._text(5, 40),
                                              "display": True, "details": {"source": "peer-ext"}}, ...))
        elif roll < 0.073:
            self.provider, self.model = rng.choice(
                (("fake", "fake-model"), ("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-5.1-codex")))
            extras.append(("model_change", {"provider": self.provider, "modelId": self.model}, ...))
        elif roll < 0.076:
            extras.append(("thinking_level_change",
                           {"thinkingLevel": rng.choice(("off", "low", "medium", "high"))}, ...))
        for kind, payload, parent in extras:
            if self.count >= n:
                return
            yield self._entry(kind, payload, parent)

    def _compaction(self) -> tuple[str, dict, object]:
        rng = self.rng
        # keep the last few turns: walk back from the leaf, then on to the start of a user turn
        steps = rng.randint(40, 250)
        node = self.leaf
        for _ in range(steps):
            parent = self.parent_of.get(node)
            if parent is None:
                break
            node = parent
        while node is not None and self.kind_of.get(node) != "user":
            node = self.parent_of.get(node)
        self.next_compaction = rng.randint(400, 1500)
        return ("compaction", {
            "summary": "## Goal\n" + self._text(20, 60) + "\n\n## Progress\n### Done\n- [x] "
                       + self._text(20, 80) + "\n\n## Next Steps\n1. " + self._text(10, 30),
            "firstKeptEntryId": node or self.leaf,
            "tokensBefore": rng.randint(50_000, 190_000),
            "details": {"readFiles": ["src/harnesskit/tree.py"], "modifiedFiles": []},
            "fromHook": False,
        }, ...)

    def _turn(self, n: int):  # noqa: ANN202
        rng = self.rng
        if self.count >= n:
            return
        prompt = self._text(3, 40)
        if rng.random() < 0.1:
            prompt += " " + rng.choice(_UNICODE) + ' "quoted"\n' + self._text(3, 20)
        entry = self._entry("message", {"message": {
            "role": "user", "content": [{"type": "text", "text": prompt}], "timestamp": self.ms - 2}})
        self.kind_of[entry["id"]] = "user"
        yield entry
        rounds = rng.choice((0, 0, 1, 1, 1, 2, 2, 3, 4, 6))
        for _ in range(rounds):
            if self.count >= n:
                return
            content: list[dict] = []
            if rng.random() < 0.3:
                content.append({"type": "thinking", "thinking": self._text(10, 80),
                                "thinkingSignature": f"{rng.getrandbits(256):064x}"})
            calls = []
            for _ in range(rng.choice((1, 1, 1, 2))):
                self.call_counter += 1
                call_id = f"call_{rng.getrandbits(64):016x}"
                tool = rng.choice(_TOOLS)
                calls.append((call_id, tool))
                content.append({"type": "toolCall", "id": call_id, "name": tool,
                                "arguments": {"command": f"{tool} {self._text(1, 6)}"}})
            yield self._assistant(content, "toolUse")
            for call_id, tool in calls:
                if self.count >= n:
                    return
                yield self._entry("message", {"message": {
                    "role": "toolResult", "toolCallId": call_id, "toolName": tool,
                    "content": [{"type": "text", "text": self._output()}],
                    "isError": rng.random() < 0.05, "timestamp": self.ms}})
        if self.count >= n:
            return
        entry = self._assistant([{"type": "text", "text": self._text(5, 120)}], "stop")
        self.turn_ends.append(entry["id"])
        yield entry


def generate(out: str | Path, entries: int, seed: int = 1) -> Path:
    """Write a session of `entries` entries (plus the header) to `out`; returns the path."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    gen = _Generator(seed)
    dumps = orjson.dumps
    tmp = path.with_name(path.name + ".part")
    with tmp.open("wb", buffering=1 << 20) as fp:
        batch: list[bytes] = []
        for entry in gen.lines(entries):
            batch.append(dumps(entry))
            if len(batch) >= 4096:
                fp.write(b"\n".join(batch) + b"\n")
                batch.clear()
        if batch:
            fp.write(b"\n".join(batch) + b"\n")
    tmp.replace(path)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    path = generate(args.out, args.entries, args.seed)
    print(f"{path}: {args.entries} entries, {path.stat().st_size / 1e6:.1f} MB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
