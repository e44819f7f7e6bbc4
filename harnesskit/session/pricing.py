"""What a model's tokens cost, for messages that do not say it themselves (`harnesskit usage`).

Prices are US dollars per million tokens: input, output, cache read, cache write. They were
taken on TAKEN from SOURCE; they change, so config may override or add any model (`pricing:` in
config.yaml, the same four keys). A model that is not in the table has no price: reports show it
as unpriced, never as free.

Names are matched exactly after dropping a provider prefix (`anthropic/`, `openai/`) and a date
suffix (`-20250929`, `@20250929`): no prefix matching, since `claude-opus-4` and `claude-opus-4-5`
cost different amounts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

TAKEN = "2026-12-01"
SOURCE = ("the vendors' published API price lists (Anthropic: docs.anthropic.com/en/docs/about-claude/pricing; "
          "OpenAI: platform.openai.com/docs/pricing), as also carried by LiteLLM's "
          "model_prices_and_context_window.json")


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cache_read: float
    cache_write: float

    def cost(self, input: int, output: int, cache_read: int, cache_write: int) -> float:
        return (input * self.input + output * self.output + cache_read * self.cache_read
                + cache_write * self.cache_write) / 1_000_000


# OpenAI bills no cache writes (cached input is read at a discount); Anthropic's cache writes are the
# 5-minute ones (1.25x input).
PRICES: dict[str, Price] = {
    "claude-opus-4": Price(15, 75, 1.5, 18.75),
    "claude-opus-4-1": Price(15, 75, 1.5, 18.75),
    "claude-opus-4-5": Price(5, 25, 0.5, 6.25),
    "claude-sonnet-4": Price(3, 15, 0.3, 3.75),
    "claude-sonnet-4-5": Price(3, 15, 0.3, 3.75),
    "claude-3-7-sonnet": Price(3, 15, 0.3, 3.75),
    "claude-3-5-sonnet": Price(3, 15, 0.3, 3.75),
    "claude-haiku-4-5": Price(1, 5, 0.1, 1.25),
    "claude-3-5-haiku": Price(0.8, 4, 0.08, 1),
    "gpt-5": Price(1.25, 10, 0.125, 0),
    "gpt-5-codex": Price(1.25, 10, 0.125, 0),
    "gpt-5.1": Price(1.25, 10, 0.125, 0),
    "gpt-5.1-codex": Price(1.25, 10, 0.125, 0),
    "gpt-5-mini": Price(0.25, 2, 0.025, 0),
    "gpt-5-nano": Price(0.05, 0.4, 0.005, 0),
    "gpt-4.1": Price(2, 8, 0.5, 0),
    "gpt-4.1-mini": Price(0.4, 1.6, 0.1, 0),
    "gpt-4.1-nano": Price(0.1, 0.4, 0.025, 0),
    "gpt-4o": Price(2.5, 10, 1.25, 0),
    "gpt-4o-mini": Price(0.15, 0.6, 0.075, 0),
    "o3": Price(2, 8, 0.5, 0),
    "o4-mini": Price(1.1, 4.4, 0.275, 0),
}

_PROVIDER = re.compile(r"^(?:anthropic|openai|azure|bedrock|vertex_ai)[/.]")
_DATE = re.compile(r"(?:[-@]\d{8}|-\d{4}-\d{2}-\d{2})$")


def canonical(model: str) -> str:
    return _DATE.sub("", _PROVIDER.sub("", model.strip().lower()))


def parse_overrides(value: object) -> dict[str, Price]:
    """`pricing:` from config: {model: {input, output, cache_read, cache_write}}; ValueError if malformed."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError("pricing must map model names to {input, output, cache_read, cache_write}")
    prices: dict[str, Price] = {}
    for model, fields in value.items():
        if not isinstance(fields, Mapping):
            raise ValueError(f"pricing.{model}: expected input, output, cache_read, cache_write per million tokens")
        numbers = []
        for key in ("input", "output", "cache_read", "cache_write"):
            number = fields.get(key, 0)
            if isinstance(number, bool) or not isinstance(number, int | float) or number < 0:
                raise ValueError(f"pricing.{model}.{key}: a price per million tokens, not {number!r}")
            numbers.append(float(number))
        prices[canonical(str(model))] = Price(*numbers)
    return prices


def price_of(model: str | None, overrides: Mapping[str, Price] | None = None) -> Price | None:
    if not model:
        return None
    name = canonical(model)
    if overrides and name in overrides:
        return overrides[name]
    return PRICES.get(name)
