"""`harnesskit config get|set|list`: the config files, comments and order kept."""

from __future__ import annotations

from pathlib import Path

import click

from harnesskit import config as cfg

from .errors import Fail
from .screen import echo


@click.group("config")
def config() -> None:
    """Read and change harnesskit's configuration.

    The user file is $HARNESSKIT_HOME/config.yaml (default ~/.harnesskit/config.yaml); a project's
    .harnesskit.yaml (here or in a parent directory) wins over it. Keys: model, base_url,
    session_dir, fsync, tools, context_window, and compaction.enabled, compaction.reserve_tokens,
    compaction.keep_recent_tokens (a `compaction:` mapping in the file).

    \b
    Examples:
      harnesskit config get model
      harnesskit config set model openai:llama3
      harnesskit config set --project fsync always
      harnesskit config set compaction.keep_recent_tokens 8000
      harnesskit config set context_window 32768
      harnesskit config list
    """


@config.command("get")
@click.argument("key")
def get(key: str) -> None:
    """Print the value in effect for KEY (empty when unset)."""
    if key not in cfg.KEYS:
        raise Fail(f"unknown config key {key!r} (known: {', '.join(cfg.KEYS)})")
    try:
        value = cfg.load_config().get(key)
    except cfg.ConfigError as error:
        raise Fail(str(error)) from None
    echo(cfg.shown(value))


@config.command("set")
@click.argument("key")
@click.argument("value")
@click.option("--project", is_flag=True,
              help="Write the project's .harnesskit.yaml (the nearest one, else ./) instead of the user file.")
def set_(key: str, value: str, project: bool) -> None:
    """Set KEY to VALUE in the user (or project) config file, keeping its comments and order."""
    # the nearest project file, the one in effect: a new ./.harnesskit.yaml would shadow all of it
    path = (cfg.project_config_path() or Path(cfg.PROJECT_FILE).resolve()) if project else cfg.user_config_path()
    try:
        cfg.set_value(path, key, value)
    except cfg.ConfigError as error:
        raise Fail(str(error)) from None
    except OSError as error:
        raise Fail(f"{path}: {error.strerror or error}") from None
    echo(f"{key} = {value} ({path})")


@config.command("list")
def list_() -> None:
    """Every key, its value in effect, and where it came from."""
    try:
        loaded = cfg.load_config()
    except cfg.ConfigError as error:
        raise Fail(str(error)) from None
    for key in cfg.KEYS:
        value = loaded.get(key)
        echo(f"{key} = {cfg.shown(value)}  ({loaded.sources.get(key, 'default')})")
