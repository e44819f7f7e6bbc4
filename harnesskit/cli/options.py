"""The options chat, continue and compact share, and the settings they make with the config files
(flags win, then the project's file, then the user's): no conversation, no session file here."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import click

from harnesskit.agent.models import Model, ModelError, Provider, parse_spec, resolve_model
from harnesskit.agent.tools import Tool, select_tools
from harnesskit.config import ConfigError, limit, load_config
from harnesskit.session.format import FSYNC_POLICIES

from . import compacting
from .errors import Fail
from .screen import COLOR_CHOICES


@dataclass
class ChatOptions:
    prompts: tuple[str, ...]
    model: str | None
    base_url: str | None
    session_dir: str | None
    no_session: bool
    fsync: str | None
    tools: str | None
    cwd: str | None = None
    as_json: bool = False
    color: str = "auto"


def chat_options(command: Callable) -> Callable:
    """The options chat and continue share."""
    decorators = [
        click.option("-p", "--prompt", "prompts", multiple=True, metavar="TEXT",
                     help="Run this prompt and exit (repeatable: prompts run in order)."),
        click.option("--model", metavar="M", help="demo (default), script:FILE.yaml, openai:MODEL or PROVIDER:MODEL."),
        click.option("--base-url", metavar="URL", help="OpenAI-compatible server (else OPENAI_BASE_URL)."),
        click.option("--session-dir", metavar="DIR", help="Where sessions are kept (used flat)."),
        click.option("--no-session", is_flag=True, help="Keep the conversation in memory only."),
        click.option("--fsync", type=click.Choice(FSYNC_POLICIES), default=None,
                     help="Durability: fsync every entry, at each turn end (default), or never."),
        click.option("--tools", metavar="LIST", help="Tools offered to the model, e.g. calc,read (default all)."),
        click.option("--cwd", type=click.Path(exists=True, file_okay=False), default=None, metavar="DIR",
                     help="Work as if started in DIR: tools are confined to it, sessions kept for it."),
        click.option("--json", "as_json", is_flag=True,
                     help="Write the agent's events as JSON Lines on stdout (notes stay on stderr)."),
        click.option("--color", type=click.Choice(COLOR_CHOICES, case_sensitive=False), default="auto",
                     show_default=True, help="Colour on stderr: auto means a terminal and NO_COLOR unset."),
    ]
    return functools.reduce(lambda f, d: d(f), reversed(decorators), command)


@dataclass
class Settings:
    """Options merged with the config files (flags win, then project, then user config)."""

    options: ChatOptions
    model_spec: str
    model_given: bool
    base_url: str | None
    session_dir: str | None
    fsync: str
    tools: list[Tool]
    limits: dict[str, float | int] = field(default_factory=dict)  # request_timeout, max_reply_bytes
    providers: dict[str, Provider] = field(default_factory=dict)
    cwd: str = field(default_factory=os.getcwd)
    compaction: compacting.Limits = field(default_factory=compacting.Limits.defaults)
    reasoning: str = "auto"  # config reasoning_effort: whether /thinking reaches an openai: model

    def directory(self) -> Path:
        from harnesskit.session import store  # not with --no-session (start-up counts)

        return store.session_dir(self.cwd, self.session_dir)


def settings_from(options: ChatOptions) -> Settings:
    try:
        config = load_config()
    except ConfigError as error:
        raise Fail(str(error)) from None
    tool_names = options.tools if options.tools is not None else config.get("tools") or ""
    try:
        tools = select_tools([t.strip() for t in tool_names.split(",") if t.strip()])
    except ValueError as error:
        raise Fail(str(error)) from None
    fsync = options.fsync or config.get("fsync") or "turn"
    if fsync not in FSYNC_POLICIES:
        raise Fail(f"fsync must be one of {', '.join(FSYNC_POLICIES)}, not {fsync!r}")
    try:
        limits = {key: limit(key, config.get(key)) for key in ("request_timeout", "max_reply_bytes")}
    except ConfigError as error:
        raise Fail(str(error)) from None
    return Settings(
        options=options,
        model_spec=options.model or config.get("model") or "demo",
        model_given=options.model is not None,
        base_url=options.base_url or config.get("base_url"),
        session_dir=options.session_dir or config.get("session_dir"),
        fsync=fsync,
        tools=tools,
        limits=limits,
        providers=config.providers(),
        cwd=os.path.realpath(options.cwd) if options.cwd else os.getcwd(),
        compaction=compacting.limits_from(config),
        reasoning=config.get("reasoning_effort") or "auto",
    )


def make_model(spec: str, settings: Settings) -> Model:
    """The model of a spec: a named provider's server unless --base-url says otherwise (the
    config's base_url is for openai:MODEL only)."""
    try:
        kind, _ = parse_spec(spec, settings.providers)
        base_url = settings.options.base_url if kind in settings.providers else settings.base_url
        return resolve_model(spec, base_url=base_url, providers=settings.providers,
                             **settings.limits)  # type: ignore[arg-type]
    except (ValueError, ModelError) as error:
        raise Fail(str(error)) from None


def identity(model: Model) -> dict:
    return {"provider": model.provider, "modelId": model.model_id}
