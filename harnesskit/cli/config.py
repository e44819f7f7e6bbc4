"""`harnesskit config get|set|unset|list|path`: the config files, comments and order kept."""

from __future__ import annotations

from pathlib import Path

import click

from harnesskit import config as cfg

from . import render
from .errors import Fail
from .screen import echo


@click.group("config")
def config() -> None:
    """Read and change harnesskit's configuration.

    The user file is $HARNESSKIT_HOME/config.yaml (default ~/.harnesskit/config.yaml); a project's
    .harnesskit.yaml (here or in a parent directory) wins over it. Keys: model, base_url,
    session_dir, fsync, tools, context_window, compaction.enabled, compaction.reserve_tokens,
    compaction.keep_recent_tokens (a `compaction:` mapping in the file), and named servers as
    providers.NAME.base_url and providers.NAME.api_key_env (then --model NAME:MODEL talks to that
    server, and `continue` finds it again). Every value is checked before it is written.

    \b
    Examples:
      harnesskit config get model
      harnesskit config set model openai:llama3
      harnesskit config set --project fsync always
      harnesskit config set compaction.keep_recent_tokens 8000
      harnesskit config set context_window 32768
      harnesskit config set providers.local.base_url http://localhost:11434/v1
      harnesskit config set model local:llama3
      harnesskit config unset model
      harnesskit config list --json
      harnesskit config path
    """


def _load() -> cfg.Config:
    try:
        return cfg.load_config()
    except cfg.ConfigError as error:
        raise Fail(str(error)) from None


def _target(project: bool) -> Path:
    # the nearest project file, the one in effect: a new ./.harnesskit.yaml would shadow all of it
    return (cfg.project_config_path() or Path(cfg.PROJECT_FILE).resolve()) if project else cfg.user_config_path()


PROJECT = click.option("--project", is_flag=True,
                       help="The project's .harnesskit.yaml (the nearest one, else ./) instead of the user file.")


@config.command("get")
@click.argument("key")
def get(key: str) -> None:
    """Print the value in effect for KEY: the project file's, else the user file's, else the
    default (an empty line when there is none). Exit 2 for an unknown key.

    \b
    Examples:
      harnesskit config get model               # demo when nothing is set
      harnesskit config get providers.local.base_url
    """
    try:
        cfg.check_value(key, None)
    except cfg.ConfigError as error:
        raise Fail(str(error)) from None
    value = _load().get(key)
    echo(render.json_line(value) if isinstance(value, dict) else cfg.shown(value))


@config.command("set")
@click.argument("key")
@click.argument("value")
@PROJECT
def set_(key: str, value: str, project: bool) -> None:
    """Set KEY to VALUE in the user (or project) config file, keeping its comments and order.

    VALUE is checked first: a model spec must parse, tools must exist, fsync must be a policy,
    URLs must be http(s); nothing is written otherwise.

    \b
    Examples:
      harnesskit config set tools calc,read
      harnesskit config set providers.local.base_url http://localhost:8080/v1
      harnesskit config set providers.local.api_key_env LOCAL_API_KEY
    """
    path = _target(project)
    try:
        cfg.set_value(path, key, value, providers=_load().providers())
    except cfg.ConfigError as error:
        raise Fail(str(error)) from None
    except OSError as error:
        raise Fail(f"{path}: {error.strerror or error}") from None
    echo(f"{key} = {value} ({path})")


@config.command("unset")
@click.argument("key")
@PROJECT
def unset(key: str, project: bool) -> None:
    """Remove KEY from the user (or project) config file, so the next one down applies.

    \b
    Examples:
      harnesskit config unset model
      harnesskit config unset --project fsync
    """
    path = _target(project)
    try:
        removed = cfg.unset_value(path, key)
    except cfg.ConfigError as error:
        raise Fail(str(error)) from None
    except OSError as error:
        raise Fail(f"{path}: {error.strerror or error}") from None
    echo(f"{key} removed ({path})" if removed else f"{key} was not set in {path}")


@config.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: key -> {value, source}.")
def list_(as_json: bool) -> None:
    """Every key, its value in effect, and where it came from.

    \b
    Examples:
      harnesskit config list
      harnesskit config list --json | jq -r .model.value
    """
    rows = _load().rows()
    if as_json:
        echo(render.json_line({key: {"value": value, "source": source} for key, value, source in rows}))
        return
    for key, value, source in rows:
        echo(f"{key} = {cfg.shown(value)}  ({source})")


@config.command("path")
@PROJECT
def path(project: bool) -> None:
    """Print the path of the user config file (or the project's in effect), existing or not.

    \b
    Examples:
      harnesskit config path
      $EDITOR "$(harnesskit config path)"
    """
    if project:
        found = cfg.project_config_path()
        if found is None:
            raise Fail(f"no {cfg.PROJECT_FILE} here or in a parent directory", 1)
        echo(str(found))
        return
    echo(str(cfg.user_config_path()))
