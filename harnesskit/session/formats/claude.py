"""Claude Code transcripts (`~/.claude/projects/<cwd>/<session>.jsonl`) -> pi v3 records.

`user`/`assistant` lines form a tree by `uuid`/`parentUuid`. One streamed response is several lines
sharing `message.id`: they become one pi assistant message (usage from the last line, counted once),
and the lines of it become aliases of that entry. Claude hangs parallel tool results off different
lines of one response; here they are chained one after another, as pi's context needs them.
Everything that is not a message (`summary`, `system`, `progress`, `file-history-snapshot`,
`queue-operation`, unknown types) is kept as a `custom` entry named `claude-code/<type>`; a
`compact_boundary` and the `isCompactSummary` prompt after it become one pi `compaction`.

Memory: what the tree needs (aliases of merged lines, the uuids seen) plus the response being
merged; entries are handed on, never kept.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..format import zero_usage
from ..migrate import iso_to_ms
from ..reader import Diagnostic, Record, open_lines

KNOWN_TYPES = frozenset({
    "user", "assistant", "system", "summary", "progress", "file-history-snapshot", "queue-operation",
    "attachment", "custom-title", "agent-name", "ai-title", "last-prompt", "mode", "permission-mode", "pr-link",
    "file-history-delta",
})
STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "toolUse", "max_tokens": "length",
                "pause_turn": "stop", "refusal": "error"}
#: entries held behind an open response before it is closed anyway (bounds memory on odd files)
_HOLD_CAP = 1000
_TAILS = 256  # responses whose tool-result chain is remembered
TORN = "Claude Code before 2.1.121 stops resuming at a bad line (claude-code #50347)"


def usage_of(raw: object) -> dict:
    """Anthropic usage -> pi's: input_tokens excludes cache reads and writes, as pi's input does."""
    usage = zero_usage()
    if not isinstance(raw, dict):
        return usage

    def number(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    usage["input"] = number("input_tokens")
    usage["output"] = number("output_tokens")
    usage["cacheRead"] = number("cache_read_input_tokens")
    usage["cacheWrite"] = number("cache_creation_input_tokens")
    usage["totalTokens"] = usage["input"] + usage["output"] + usage["cacheRead"] + usage["cacheWrite"]
    return usage


def _text(text: object) -> dict:
    return {"type": "text", "text": text if isinstance(text, str) else str(text)}


def _image(block: dict) -> dict:
    source = block.get("source") if isinstance(block.get("source"), dict) else {}
    if source.get("type") == "base64" and isinstance(source.get("data"), str):
        return {"type": "image", "data": source["data"], "mimeType": source.get("media_type") or "image/png"}
    return _text("[image]")


def user_blocks(content: object) -> list[dict]:
    if isinstance(content, str):
        return [_text(content)]
    out = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            out.append(_text(block.get("text", "")))
        elif kind == "image":
            out.append(_image(block))
        elif kind != "tool_result":
            out.append(_text(f"[{kind} block]"))
    return out


def assistant_blocks(content: object) -> list[dict]:
    if isinstance(content, str):
        return [_text(content)] if content else []
    out: list[dict] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            out.append(_text(block.get("text", "")))
        elif kind == "thinking":
            thinking = {"type": "thinking", "thinking": str(block.get("thinking", ""))}
            if isinstance(block.get("signature"), str):
                thinking["thinkingSignature"] = block["signature"]
            out.append(thinking)
        elif kind == "redacted_thinking":
            out.append({"type": "thinking", "thinking": "", "redacted": True,
                        "thinkingSignature": str(block.get("data", ""))})
        elif kind in ("tool_use", "server_tool_use"):
            arguments = block.get("input")
            out.append({"type": "toolCall", "id": str(block.get("id")), "name": str(block.get("name")),
                        "arguments": arguments if isinstance(arguments, dict) else {"input": arguments}})
        else:
            out.append(_text(f"[{kind} block]"))
    return out


def result_blocks(content: object) -> list[dict]:
    if content is None:
        return []
    if isinstance(content, str):
        return [_text(content)]
    return user_blocks(content) if isinstance(content, list) else [_text(str(content))]


def _calls(blocks: list[dict]) -> list[str]:
    return [b["id"] for b in blocks if b.get("type") == "toolCall"]


class ClaudeReader:
    """One pass over a transcript's records; after it, `conversation` says whether any message was
    seen and `summary_targets` holds the summary leafUuids this file does not contain (id -> line)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.alias: dict[str, str] = {}  # uuid of a merged line -> the entry it became
        self.tails: OrderedDict[str, str] = OrderedDict()  # response id -> last entry chained after it
        self.seen: set[str] = set()  # every uuid of this file
        self.counted: set[str] = set()  # message ids whose usage was counted
        self.names: OrderedDict[str, str] = OrderedDict()  # tool_use id -> name
        self.open_calls: dict[str, tuple[int, str, bool]] = {}  # tool_use id -> (line, name, on a sidechain)
        self.summary_targets: dict[str, int] = {}
        self.conversation = False
        self.logical: set[int] = set()  # lines whose parent is their logicalParentUuid (compaction boundaries)
        self.sidechain_only = True  # every message line is on a sidechain: a subagent's transcript
        self.sidechains: dict[int, str] | None = None  # line -> agentId of sidechain lines, when asked for
        self.lines = 0
        self.header: dict | None = None
        self.cursor: str | None = None  # the last entry placed in the tree
        self.held: Record | None = None  # a response being merged, or a compaction awaiting its summary
        self.held_mid: tuple | None = None  # (message id, request id, on a sidechain) of the response held
        self.held_replay = False
        self.after: list[Record | Diagnostic] = []
        self.out: list[Record | Diagnostic] = []
        self.first_timestamp: str | None = None

    # -- the pass ---------------------------------------------------------------------------------
    def convert(self, records: Iterable[Record | Diagnostic]) -> Iterator[Record | Diagnostic]:
        started = False  # the header goes first; it is made from the first line that names the session
        for item in records:
            if isinstance(item, Diagnostic):
                if item.severity == "error":
                    item = Diagnostic(item.line, item.offset, f"{item.reason}; {TORN}", item.code, item.severity)
                self._emit(item)
            else:
                self.lines += 1
                obj = item.obj
                if self.first_timestamp is None and isinstance(obj.get("timestamp"), str):
                    self.first_timestamp = obj["timestamp"]
                if self.header is None and isinstance(obj.get("sessionId"), str):
                    self.header = self._header(obj)
                self._line(item)
            if not started:
                if self.header is None and len(self.out) <= _HOLD_CAP:
                    continue
                if self.header is None:
                    self.header = self._header({})
                started = True
                yield Record(0, 0, self.header)
            yield from self.out
            self.out.clear()
        self._flush()
        if not started:
            self.header = self.header or self._header({})
            yield Record(0, 0, self.header)
        yield from self.out
        self.out.clear()
        yield from self._end()

    def _header(self, obj: dict) -> dict:
        header = {
            "type": "session", "version": 3,
            "id": obj.get("sessionId") if isinstance(obj.get("sessionId"), str) else self.path.stem,
            "timestamp": obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else
            (self.first_timestamp or "1970-01-01T00:00:00.000Z"),
            "cwd": obj.get("cwd") if isinstance(obj.get("cwd"), str) else "",
        }
        if isinstance(obj.get("agentId"), str):  # a subagent's transcript: its session id is its parent's
            header["agentId"] = obj["agentId"]
        return header

    def _end(self) -> Iterator[Diagnostic]:
        for call_id, (line, name, _sidechain) in self.open_calls.items():
            yield Diagnostic(line, -1, f"tool_use {call_id!r} ({name!r}) has no tool_result: the transcript ends while "
                             "the tool ran; a resume must supply one (harnesskit import adds an error result)",
                             "unanswered-tool-call", "warning")
        for target in list(self.summary_targets):
            if target in self.seen:
                del self.summary_targets[target]
        if not self.conversation:
            yield Diagnostic(0, -1, f"no user or assistant message ({self.lines} summary/bookkeeping lines): "
                             'Claude Code says "No conversation found" for it (claude-code #7004)', "no-conversation")

    # -- placing entries --------------------------------------------------------------------------
    def _emit(self, item: Record | Diagnostic) -> None:
        if self.held is not None:
            self.after.append(item)
            if len(self.after) > _HOLD_CAP:
                self._flush()
        else:
            self.out.append(item)

    def _flush(self) -> None:
        if self.held is not None:
            self.out.append(self.held)
            self.out.extend(self.after)
            self.held, self.held_mid, self.after = None, None, []

    def _parent(self, uuid: object) -> tuple[str | None, str | None]:
        """(the parentId for a child of `uuid`, the response whose tool-result chain it joins, if any)."""
        if not isinstance(uuid, str):
            return None, None
        target = self.alias.get(uuid, uuid)
        tail = self.tails.get(target)
        return (target, None) if tail is None else (tail, target)

    def _place(self, item: Record, entry: dict, chain: str | None, extends_chain: bool) -> None:
        if chain is not None and extends_chain:
            self.tails[chain] = entry["id"]
            self.tails.move_to_end(chain)
        self.cursor = entry["id"]
        self._emit(Record(item.line, item.offset, entry))

    def _custom(self, item: Record, kind: str, entry_id: str, parent: str | None, chain: str | None) -> None:
        obj = item.obj
        entry = {"type": "custom", "customType": f"claude-code/{kind}", "data": obj, "id": entry_id,
                 "parentId": parent, "timestamp": self._timestamp(obj)}
        self._place(item, entry, chain, True)

    def _timestamp(self, obj: dict) -> str:
        value = obj.get("timestamp")
        if isinstance(value, str):
            return value
        snapshot = obj.get("snapshot")
        if isinstance(snapshot, dict) and isinstance(snapshot.get("timestamp"), str):
            return snapshot["timestamp"]
        return self.first_timestamp or (self.header or {}).get("timestamp") or "1970-01-01T00:00:00.000Z"

    # -- one line ---------------------------------------------------------------------------------
    def _line(self, item: Record) -> None:
        obj = item.obj
        kind = obj["type"]
        uuid = obj.get("uuid") if isinstance(obj.get("uuid"), str) else None
        if uuid is not None:
            self.seen.add(uuid)
        message = obj.get("message")
        if kind in ("user", "assistant") and obj.get("isSidechain") is not True:
            self.sidechain_only = False
        if self.sidechains is not None and obj.get("isSidechain") is True:
            self.sidechains[item.line] = str(obj.get("agentId") or "sidechain")
        if kind == "assistant" and isinstance(message, dict):
            self.conversation = True
            self._assistant(item, uuid or f"L{item.line}", message)
            return
        if kind == "user" and isinstance(message, dict):
            self.conversation = True
            self._user(item, uuid or f"L{item.line}", message)
            return
        if kind not in KNOWN_TYPES:
            self._emit(Diagnostic(item.line, item.offset, f"unknown line type {kind!r} (kept as a custom entry; "
                                  "Claude Code adds line types often)", "unknown-line-type", "info"))
        if kind == "summary" and isinstance(obj.get("leafUuid"), str):
            self.summary_targets.setdefault(obj["leafUuid"], item.line)
        if "parentUuid" in obj or "logicalParentUuid" in obj:
            reference = obj.get("parentUuid")
            if reference is None and obj.get("logicalParentUuid") is not None:
                reference = obj["logicalParentUuid"]
                self.logical.add(item.line)
            parent, chain = self._parent(reference)
        else:  # bookkeeping outside the tree (summary, snapshots, queue): hang it where the file is
            parent, chain = self.cursor, None
        entry_id = uuid or f"L{item.line}"
        if kind == "system" and obj.get("subtype") == "compact_boundary":
            self._compaction(item, entry_id, parent, chain)
            return
        if kind in ("custom-title", "ai-title") and isinstance(obj.get("customTitle", obj.get("aiTitle")), str):
            self._custom(item, kind, entry_id, parent, chain)
            name = {"type": "session_info", "id": f"{entry_id}.name", "parentId": entry_id,
                    "timestamp": self._timestamp(obj), "name": obj.get("customTitle", obj.get("aiTitle"))}
            self._place(item, name, chain, True)
            return
        sub = obj.get("subtype")
        self._custom(item, f"{kind}/{sub}" if kind == "system" and isinstance(sub, str) else kind, entry_id,
                     parent, chain)

    def _compaction(self, item: Record, entry_id: str, parent: str | None, chain: str | None) -> None:
        self._flush()
        obj = item.obj
        meta = obj.get("compactMetadata") if isinstance(obj.get("compactMetadata"), dict) else {}
        tokens = meta.get("preTokens")
        entry = {"type": "compaction", "id": entry_id, "parentId": parent, "timestamp": self._timestamp(obj),
                 "summary": "", "firstKeptEntryId": entry_id,  # Claude keeps no tail: nothing before it is kept
                 "tokensBefore": tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0
                 else 0,
                 "details": {"source": obj}}
        if chain is not None:
            self.tails[chain] = entry_id
        self.cursor = entry_id
        self.held = Record(item.line, item.offset, entry)

    def _assistant(self, item: Record, uuid: str, message: dict) -> None:
        obj = item.obj
        mid = message.get("id") if isinstance(message.get("id"), str) else None
        blocks = assistant_blocks(message.get("content"))
        held = self.held.obj if self.held is not None else None
        key = (mid, obj.get("requestId"), obj.get("isSidechain") is True)  # a replay has another request id
        if held is not None and held.get("type") == "message" and mid is not None and key == self.held_mid:
            merged = held["message"]
            merged["content"].extend(blocks)
            self._finish(merged, message)
            self.alias[uuid] = held["id"]
            self._register(blocks, item.line, obj.get("isSidechain") is True)
            return
        self._flush()
        side = obj.get("isSidechain") is True
        for call_id, (line, name, sidechain) in list(self.open_calls.items()):
            if sidechain != side:
                continue
            self._emit(Diagnostic(line, -1, f"tool_use {call_id!r} ({name!r}) has no tool_result before the next "
                                  "response: the Messages API refuses a tool_use without a tool_result right after "
                                  "it, so a resume from here needs the harness to patch the history",
                                  "unanswered-tool-call"))
            del self.open_calls[call_id]
        parent, _chain = self._parent(obj.get("parentUuid"))
        model = message.get("model") if isinstance(message.get("model"), str) else "unknown"
        pi_message: dict = {"role": "assistant", "content": blocks, "api": "anthropic-messages",
                            "provider": "anthropic", "model": model, "usage": zero_usage(), "stopReason": "stop",
                            "timestamp": iso_to_ms(obj.get("timestamp")) or 0}
        if mid is not None:
            pi_message["responseId"] = mid
        self.held_replay = mid is not None and mid in self.counted
        if mid is not None:
            self.counted.add(mid)
        self._finish(pi_message, message)
        if obj.get("isApiErrorMessage") is True:
            pi_message["stopReason"] = "error"
            pi_message["errorMessage"] = " ".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        entry = {"type": "message", "id": uuid, "parentId": parent, "timestamp": self._timestamp(obj),
                 "message": pi_message}
        self.tails[uuid] = uuid
        self.tails.move_to_end(uuid)
        while len(self.tails) > _TAILS:
            self.tails.popitem(last=False)
        self.cursor = uuid
        self.held, self.held_mid = Record(item.line, item.offset, entry), key
        self._register(blocks, item.line, side)

    def _finish(self, pi_message: dict, message: dict) -> None:
        """The latest line of a response decides usage (a snapshot) and the stop reason; a response
        replayed under the same message id (a sidechain file repeating its parent's) counts nothing."""
        if not self.held_replay:
            pi_message["usage"] = usage_of(message.get("usage"))
        stop = message.get("stop_reason")
        fallback = "toolUse" if _calls(pi_message["content"]) else "stop"
        pi_message["stopReason"] = STOP_REASONS.get(stop, fallback) if isinstance(stop, str) else fallback

    def _register(self, blocks: list[dict], line: int, sidechain: bool) -> None:
        for block in blocks:
            if block.get("type") == "toolCall":
                self.names[block["id"]] = block["name"]
                self.open_calls[block["id"]] = (line, block["name"], sidechain)
        while len(self.names) > 4096:
            self.names.popitem(last=False)

    def _user(self, item: Record, uuid: str, message: dict) -> None:
        obj = item.obj
        content = message.get("content")
        held = self.held.obj if self.held is not None else None
        if obj.get("isCompactSummary") is True and held is not None and held.get("type") == "compaction":
            held["summary"] = "\n".join(b.get("text", "") for b in user_blocks(content) if b.get("type") == "text")
            self.alias[uuid] = held["id"]
            self.cursor = held["id"]
            self._flush()
            return
        parent, chain = self._parent(obj.get("parentUuid"))
        timestamp = self._timestamp(obj)
        ms = iso_to_ms(timestamp) or 0
        results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] if isinstance(
            content, list) else []
        rest = user_blocks(content)
        entry_id = uuid
        for n, block in enumerate(results):
            call_id = str(block.get("tool_use_id"))
            self.open_calls.pop(call_id, None)
            result = {"role": "toolResult", "toolCallId": call_id, "toolName": self.names.get(call_id, "unknown"),
                      "content": result_blocks(block.get("content")), "isError": block.get("is_error") is True,
                      "timestamp": ms}
            if n == 0 and isinstance(obj.get("toolUseResult"), dict):
                result["details"] = obj["toolUseResult"]
            entry_id = uuid if n == 0 else f"{uuid}.{n}"
            entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": timestamp, "message": result}
            self._place(item, entry, chain, True)
            parent = entry_id
            if n:
                self.alias[uuid] = entry_id  # children of the line follow its last result
        if rest or not results:
            entry_id = uuid if not results else f"{uuid}.{len(results)}"
            entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": timestamp,
                     "message": {"role": "user", "content": rest, "timestamp": ms}}
            self._place(item, entry, chain if results else None, bool(results))
            if results:
                self.alias[uuid] = entry_id


_UUID = re.compile(rb'"uuid"\s*:\s*"([^"]+)"')


def related_transcripts(path: Path) -> list[Path]:
    """The other transcripts of the project (the files beside this one) and, for a subagent's
    `<session>/subagents/agent-*.jsonl`, its parent `<session>.jsonl` and the files beside that."""
    places = [path.parent]
    if path.parent.name == "subagents":
        places.append(path.parent.parent.parent)
    out: list[Path] = []
    for place in places:
        try:
            out.extend(sorted(p for p in place.glob("*.jsonl") if p != path and p.is_file()))
        except OSError:
            continue
    return out


def find_elsewhere(path: Path, uuids: set[str]) -> dict[str, Path]:
    """Which of `uuids` are lines of the related transcripts (streamed; nothing kept but the answer)."""
    found: dict[str, Path] = {}
    wanted = set(uuids)
    for other in related_transcripts(path):
        if not wanted:
            break
        try:
            with open_lines(other) as fp:
                for raw in fp:
                    for match in _UUID.finditer(raw):
                        uuid = match.group(1).decode("utf-8", "replace")
                        if uuid in wanted:
                            found[uuid] = other
                            wanted.discard(uuid)
        except OSError:
            continue
    return found
