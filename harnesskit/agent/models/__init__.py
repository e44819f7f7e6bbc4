"""Models the loop can talk to, behind one small streaming protocol.

Model modules are imported only when a spec asks for them: ``openai`` alone costs over a second
of start-up, which ``inspect``/``validate`` must never pay.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from harnesskit.agent.tools import Tool


#: every HTTP model request ends within this many seconds overall (config: request_timeout)
DEFAULT_REQUEST_TIMEOUT = 600.0
#: and after this many bytes received (config: max_reply_bytes; streamed replies take ~250 bytes a token)
DEFAULT_MAX_REPLY_BYTES = 32 * 1024 * 1024


class ModelError(Exception):
    """A model call failed; ``message`` is one readable line (it becomes ``errorMessage``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class TextChunk:
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingChunk:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallChunk:
    """One complete tool call (models assemble streamed argument fragments themselves)."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class DoneChunk:
    """The response finished; ``usage`` uses pi's keys (missing ones become zeros)."""

    stop_reason: str
    usage: dict[str, Any] | None = None
    response_id: str | None = None


Chunk = TextChunk | ThinkingChunk | ToolCallChunk | DoneChunk


class Model(Protocol):
    """What the loop needs: identity for the assistant message, and a chunk stream.

    ``messages`` is the pi context as is (custom roles included); each model converts it
    (see ``messages.to_llm_messages``). Failures raise ``ModelError``. ``max_tokens`` caps the
    reply (a summary must stay smaller than what it replaces); models that cannot cap ignore it.
    """

    api: str
    provider: str
    model_id: str

    def stream(self, messages: list[dict[str, Any]], tools: list[Tool], *,
               max_tokens: int | None = None) -> Iterator[Chunk]: ...


SPECS_HELP = "demo, script:FILE.yaml, openai:MODEL or PROVIDER:MODEL"
BUILT_IN = ("demo", "script", "openai")

DEFAULT_CONTEXT_WINDOW = 128_000
# Context windows (tokens) of models people run through an OpenAI-compatible server, by name
# prefix; the longest matching prefix wins. `context_window` in config overrides all of these.
CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-4.1": 1_047_576, "gpt-4o": 128_000, "gpt-4-turbo": 128_000, "gpt-4": 8_192, "gpt-3.5": 16_385,
    "gpt-5": 400_000, "o1": 200_000, "o3": 200_000, "o4": 200_000,
    "llama3": 8_192, "llama3.1": 131_072, "llama3.2": 131_072, "llama3.3": 131_072, "qwen2.5": 32_768,
    "qwen3": 40_960, "mistral": 32_768, "gemma2": 8_192, "gemma3": 131_072, "deepseek": 128_000, "phi3": 4_096,
}


def default_context_window(provider: str, model_id: str) -> int:
    """The window harnesskit assumes for a model when config does not say."""
    if provider == "harnesskit":
        return DEFAULT_CONTEXT_WINDOW  # the offline models have no limit; behave like a common one
    name = model_id.lower().rsplit("/", 1)[-1]
    matches = [prefix for prefix in CONTEXT_WINDOWS if name.startswith(prefix)]
    return CONTEXT_WINDOWS[max(matches, key=len)] if matches else DEFAULT_CONTEXT_WINDOW


@dataclass(frozen=True, slots=True)
class Provider:
    """A named OpenAI-compatible server (config's `providers`): where it is and its key's variable."""

    name: str
    base_url: str
    api_key_env: str | None = None


def parse_spec(spec: str, providers: Collection[str] = ()) -> tuple[str, str]:
    """(kind, rest) of a model spec, checked without building anything (no file read, no import):
    kind is demo, script, openai or the name of a provider."""
    kind, sep, rest = (spec or "").strip().partition(":")
    rest = rest.strip()
    if kind == "demo" and not sep:
        return kind, ""
    named = kind in ("script", "openai") or (kind in providers and kind not in BUILT_IN)
    if named and rest:
        return kind, rest
    if named:
        what = "FILE.yaml" if kind == "script" else "MODEL"
        raise ValueError(f"model spec {spec!r} is missing its {what} part (expected {kind}:{what})")
    raise ValueError(f"unknown model spec {spec!r} (expected {SPECS_HELP})")


def resolve_model(spec: str, *, base_url: str | None = None, api_key: str | None = None,
                  providers: Mapping[str, Provider] | None = None,
                  request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
                  max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES) -> Model:
    """Build a model from a spec string; unknown or unusable specs raise ValueError. A provider's
    model talks to its base URL (unless `base_url` is given: a flag wins) and is recorded under its
    name. The limits apply to models that make network requests."""
    providers = providers or {}
    kind, rest = parse_spec(spec, providers)
    if kind == "demo":
        from harnesskit.agent.models.demo import DemoModel

        return DemoModel()
    if kind == "script":
        from harnesskit.agent.models.script import ScriptModel

        return ScriptModel.from_file(rest)
    from harnesskit.agent.models.openai import OpenAIModel

    limits: dict[str, Any] = {"timeout": request_timeout, "max_reply_bytes": max_reply_bytes}
    if kind == "openai":
        return OpenAIModel(rest, base_url=base_url, api_key=api_key, **limits)
    provider = providers[kind]
    key = api_key or (os.environ.get(provider.api_key_env) if provider.api_key_env else None)
    return OpenAIModel(rest, base_url=base_url or provider.base_url, api_key=key, provider=provider.name, **limits)


def model_spec(model: Mapping[str, Any] | None, providers: Collection[str] = ()) -> str | None:
    """The spec that recreates a recorded model (pi's provider/modelId), when harnesskit can run it."""
    if not model:
        return None
    provider, model_id = model.get("provider"), model.get("modelId")
    if provider == "harnesskit" and model_id == "demo":
        return "demo"
    if (provider == "openai" or provider in providers) and isinstance(model_id, str) and model_id:
        return f"{provider}:{model_id}"
    return None


__all__ = [
    "DEFAULT_MAX_REPLY_BYTES",
    "DEFAULT_REQUEST_TIMEOUT",
    "Chunk",
    "DoneChunk",
    "Model",
    "ModelError",
    "Provider",
    "TextChunk",
    "ThinkingChunk",
    "ToolCallChunk",
    "default_context_window",
    "model_spec",
    "parse_spec",
    "resolve_model",
]
