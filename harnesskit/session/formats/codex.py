"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) -> pi v3 records.

Lines are `{timestamp, type, payload}`. `session_meta` is the header. `response_item`s are what the
model saw: consecutive reasoning / assistant text / function calls form one pi assistant message,
closed by a tool output, a user message or a `token_count` event (whose `last_token_usage` is its
usage; a repeated `token_count` with an unchanged total is the same response counted again, and is
not). Outputs pair with calls by `call_id`. `event_msg`s are the UI's and stay `custom` entries
named `codex/event_msg/<type>`, except a `user_message` the response items did not already carry
(some versions record prompts only there). `compacted` becomes a pi `compaction` followed by its
replacement history, which is what the model sees from then on. The thread is file order.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from pathlib import Path

import orjson

from ..format import zero_usage
from ..migrate import iso_to_ms
from ..reader import Diagnostic, Record

KNOWN_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted", "world_state",
                         "inter_agent_communication_metadata"})
_HOLD_CAP = 1000
_ROLLOUT_ID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")


def usage_of(last: object) -> dict:
    """OpenAI usage -> pi's: cached tokens are inside input_tokens, reasoning inside output_tokens."""
    usage = zero_usage()
    if not isinstance(last, dict):
        return usage

    def number(key: str) -> int:
        value = last.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    cached = number("cached_input_tokens")
    usage["input"] = max(number("input_tokens") - cached, 0)
    usage["cacheRead"] = cached
    usage["output"] = number("output_tokens")
    usage["totalTokens"] = number("total_tokens") or number("input_tokens") + usage["output"]
    return usage


def _texts(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    out = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            out.append(block["text"])
    return out


def _user_blocks(content: object) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    out: list[dict] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            out.append({"type": "text", "text": block["text"]})
        elif block.get("type") == "input_image":
            url = block.get("image_url")
            match = re.match(r"data:([^;]+);base64,(.*)", url, re.S) if isinstance(url, str) else None
            out.append({"type": "image", "mimeType": match.group(1), "data": match.group(2)} if match
                       else {"type": "text", "text": "[image]"})
    return out


def _arguments(raw: object) -> dict:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {"arguments": raw}
        return value if isinstance(value, dict) else {"arguments": value}
    return {"arguments": raw}


def _output_text(output: object) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, dict) and isinstance(output.get("content"), str):
        return output["content"]
    texts = _texts(output)
    return "\n".join(texts) if texts else orjson.dumps(output).decode()


class CodexReader:
    """One pass over a rollout's records (see the module doc)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.header: dict | None = None
        self.prev: str | None = None  # the thread is file order: each entry's parent is the one before
        self.held: Record | None = None  # the assistant message being gathered
        self.after: list[Record | Diagnostic] = []
        self.out: list[Record | Diagnostic] = []
        self.model = "unknown"
        self.last_total: object = None
        self.total_tokens = 0
        self.last_assistant: dict | None = None
        self.names: OrderedDict[str, str] = OrderedDict()
        self.exit_codes: OrderedDict[str, int] = OrderedDict()
        self.open_calls: dict[str, tuple[int, str]] = {}
        self.user_items = 0  # user response items since the model last spoke (a user_message event mirrors them)
        self.event_prompt: str | None = None  # a prompt made from a user_message event (an item may mirror it)
        self.conversation = False
        self.first_timestamp: str | None = None
        self.cwd: str | None = None
        self.suffix = ""  # ids of the items one line carries (a compaction's replacement history)

    def convert(self, records: Iterable[Record | Diagnostic]) -> Iterator[Record | Diagnostic]:
        started = False
        for item in records:
            if isinstance(item, Diagnostic):
                self._emit(item)
            else:
                self._line(item)
            if not started:
                if self.header is None and len(self.out) <= _HOLD_CAP:
                    continue
                started = True
                yield Record(0, 0, self.header or self._header({}))
            yield from self.out
            self.out.clear()
        self._close()
        if not started:
            yield Record(0, 0, self.header or self._header({}))
        yield from self.out
        self.out.clear()
        for call_id, (line, name) in self.open_calls.items():
            yield Diagnostic(line, -1, f"function_call {call_id!r} ({name!r}) has no function_call_output: the rollout "
                             "ends while the tool ran; a resume must supply one (harnesskit import adds an error "
                             "result)", "unanswered-tool-call", "warning")

    def _header(self, meta: dict) -> dict:
        found = _ROLLOUT_ID.search(self.path.stem)
        self.header = {
            "type": "session", "version": 3,
            "id": meta["id"] if isinstance(meta.get("id"), str) else (found.group(1) if found else self.path.stem),
            "timestamp": meta["timestamp"] if isinstance(meta.get("timestamp"), str) else
            (self.first_timestamp or "1970-01-01T00:00:00.000Z"),
            "cwd": meta["cwd"] if isinstance(meta.get("cwd"), str) else (self.cwd or ""),
        }
        return self.header

    # -- placing entries --------------------------------------------------------------------------
    def _emit(self, item: Record | Diagnostic) -> None:
        (self.after if self.held is not None else self.out).append(item)
        if len(self.after) > _HOLD_CAP:
            self._close()

    def _close(self) -> None:
        if self.held is not None:
            self.out.append(self.held)
            self.out.extend(self.after)
            self.held, self.after = None, []

    def _entry(self, item: Record, kind: str, suffix: str = "", **payload: object) -> dict:
        entry_id = f"L{item.line}{suffix or self.suffix}"
        timestamp = item.obj.get("timestamp")
        entry = {"type": kind, "id": entry_id, "parentId": self.prev,
                 "timestamp": timestamp if isinstance(timestamp, str) else self.first_timestamp or "", **payload}
        self.prev = entry_id
        return entry

    def _custom(self, item: Record, kind: str, data: object) -> None:
        self._emit(Record(item.line, item.offset, self._entry(item, "custom", customType=f"codex/{kind}", data=data)))

    def _assistant(self, item: Record) -> dict:
        if self.held is None:
            for call_id, (line, name) in list(self.open_calls.items()):
                self._emit(Diagnostic(line, -1, f"function_call {call_id!r} ({name!r}) has no function_call_output "
                                      "before the next response: the Responses API refuses a call without its "
                                      "output, so a resume from here needs the harness to patch the history",
                                      "unanswered-tool-call"))
                del self.open_calls[call_id]
            message = {"role": "assistant", "content": [], "api": "openai-responses", "provider": "openai",
                       "model": self.model, "usage": zero_usage(), "stopReason": "stop",
                       "timestamp": iso_to_ms(item.obj.get("timestamp")) or 0}
            self.held = Record(item.line, item.offset, self._entry(item, "message", message=message))
            self.last_assistant = message
            self.conversation = True
            self.user_items = 0
            self.event_prompt = None
        return self.held.obj["message"]

    # -- one line ---------------------------------------------------------------------------------
    def _line(self, item: Record) -> None:
        obj = item.obj
        kind = obj["type"]
        payload = obj.get("payload")
        if self.first_timestamp is None and isinstance(obj.get("timestamp"), str):
            self.first_timestamp = obj["timestamp"]
        if not isinstance(payload, dict):
            payload = {}
        if kind not in KNOWN_TYPES:
            self._emit(Diagnostic(item.line, item.offset, f"unknown line type {kind!r} (kept as a custom entry; "
                                  "Codex adds line types often)", "unknown-line-type", "info"))
        if kind == "session_meta":
            if self.header is None:
                self._header(payload)
            self._custom(item, kind, payload)
        elif kind == "turn_context":
            if isinstance(payload.get("model"), str):
                self.model = payload["model"]
            if self.cwd is None and isinstance(payload.get("cwd"), str):
                self.cwd = payload["cwd"]
            self._custom(item, kind, payload)
        elif kind == "response_item":
            self._item(item, payload)
        elif kind == "event_msg":
            self._event(item, payload)
        elif kind == "compacted":
            self._compacted(item, payload)
        else:
            self._custom(item, kind, obj)

    def _item(self, item: Record, payload: dict) -> None:
        kind = payload.get("type") if isinstance(payload.get("type"), str) else str(payload.get("type"))
        role = payload.get("role") if isinstance(payload.get("role"), str) else None
        if kind == "message" and role == "assistant":
            for text in _texts(payload.get("content")):
                self._assistant(item)["content"].append({"type": "text", "text": text})
            if not _texts(payload.get("content")):
                self._assistant(item)
        elif kind == "message" and role == "user":
            self._close()
            if self.event_prompt is not None and "\n".join(_texts(payload.get("content"))) == self.event_prompt:
                self.event_prompt = None  # the prompt a user_message event already gave: a mirror
                self._emit(Record(item.line, item.offset, self._entry(item, "custom", customType="codex/user",
                                                                      data=payload)))
                return
            self.conversation = True
            self.user_items += 1
            message = {"role": "user", "content": _user_blocks(payload.get("content")),
                       "timestamp": iso_to_ms(item.obj.get("timestamp")) or 0}
            self._emit(Record(item.line, item.offset, self._entry(item, "message", message=message)))
        elif kind == "reasoning":
            summary = payload.get("summary")
            texts = [s["text"] for s in summary if isinstance(s, dict) and isinstance(s.get("text"), str)] if (
                isinstance(summary, list)) else []
            texts += _texts(payload.get("content"))
            self._assistant(item)["content"].append({"type": "thinking", "thinking": "\n".join(texts)})
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            call_id = str(payload.get("call_id") or payload.get("id"))
            name = str(payload.get("name") or kind)
            arguments = _arguments(payload.get("arguments")) if kind == "function_call" else (
                {"input": payload.get("input")} if kind == "custom_tool_call" else {"action": payload.get("action")})
            message = self._assistant(item)
            message["content"].append({"type": "toolCall", "id": call_id, "name": name, "arguments": arguments})
            message["stopReason"] = "toolUse"
            self.names[call_id] = name
            self.open_calls[call_id] = (item.line, name)
            while len(self.names) > 4096:
                self.names.popitem(last=False)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self._close()
            call_id = str(payload.get("call_id"))
            self.open_calls.pop(call_id, None)
            code = self.exit_codes.get(call_id)
            message = {"role": "toolResult", "toolCallId": call_id, "toolName": self.names.get(call_id, "unknown"),
                       "content": [{"type": "text", "text": _output_text(payload.get("output"))}],
                       "isError": code is not None and code != 0,
                       "timestamp": iso_to_ms(item.obj.get("timestamp")) or 0}
            self._emit(Record(item.line, item.offset, self._entry(item, "message", message=message)))
        elif kind == "message":  # developer / system: the harness's instructions, not a turn
            self._emit(Record(item.line, item.offset, self._entry(item, "custom",
                                                                  customType=f"codex/{role}", data=payload)))
        else:
            self._emit(Record(item.line, item.offset, self._entry(item, "custom",
                                                                  customType=f"codex/response_item/{kind}",
                                                                  data=payload)))

    def _event(self, item: Record, payload: dict) -> None:
        kind = payload.get("type") if isinstance(payload.get("type"), str) else str(payload.get("type"))
        if kind == "token_count":
            info = payload.get("info")
            if isinstance(info, dict):
                total = info.get("total_token_usage")
                if total != self.last_total:
                    self.last_total = total
                    if isinstance(total, dict) and usage_of(total)["totalTokens"]:
                        self.total_tokens = usage_of(total)["totalTokens"]
                    target = self.held.obj["message"] if self.held is not None else self.last_assistant
                    if target is not None and target["usage"]["totalTokens"] == 0:
                        target["usage"] = usage_of(info.get("last_token_usage"))
                    self._close()
        elif kind == "exec_command_end" and isinstance(payload.get("exit_code"), int):
            self.exit_codes[str(payload.get("call_id"))] = payload["exit_code"]
            while len(self.exit_codes) > 1024:
                self.exit_codes.popitem(last=False)
        elif kind == "turn_aborted" and self.last_assistant is not None:
            self.last_assistant["stopReason"] = "aborted"
        elif kind == "user_message" and self.user_items == 0 and isinstance(payload.get("message"), str):
            self._close()  # the prompt is only here: it is a turn
            self.conversation = True
            message = {"role": "user", "content": [{"type": "text", "text": payload["message"]}],
                       "timestamp": iso_to_ms(item.obj.get("timestamp")) or 0}
            self._emit(Record(item.line, item.offset, self._entry(item, "message", message=message)))
            self.user_items = 1
            self.event_prompt = payload["message"]
            return
        self._custom(item, f"event_msg/{kind}", payload)

    def _compacted(self, item: Record, payload: dict) -> None:
        self._close()
        history = payload.get("replacement_history")
        summary = payload.get("message") if isinstance(payload.get("message"), str) else ""
        entry = self._entry(item, "compaction", summary=summary or "(Codex replaced the history with the items "
                            "that follow)", firstKeptEntryId=f"L{item.line}", tokensBefore=self.total_tokens,
                            details={"source": "codex/compacted"})
        self._emit(Record(item.line, item.offset, entry))
        for n, replaced in enumerate(history if isinstance(history, list) else []):
            if isinstance(replaced, dict):
                self.suffix = f".{n}"
                self._item(item, replaced)
        self._close()
        self.suffix = ""
        self.user_items = 0  # the history was replaced: the next prompt is a new one
