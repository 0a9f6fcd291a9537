"""settings/view.py validates only the settings a layer gives, field by field with the models' own
rules, and must answer exactly as config.load (the whole model validated) does, or step aside
(None) so config.load answers."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agentls.devtools import config_table
from agentls.settings import config
from agentls.settings import defaults as config_defaults
from agentls.settings import view as config_view
from agentls.settings.config_files import set_dotted

PACKAGE = Path(config_defaults.__file__).resolve().parent.parent  # agentls/


def test_the_generated_table_is_current() -> None:
    expected = config_table.render(PACKAGE)
    assert (PACKAGE / "settings" / "defaults.py").read_text(encoding="utf-8") == expected, (
        "agentls/settings/defaults.py is stale: run `python -m agentls.devtools.config_table`")
    assert config_view.table_is_current()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    for name in list(os.environ):
        if name.startswith("AGENTLS_") or name == "OPENAI_BASE_URL":
            monkeypatch.delenv(name)
    return tmp_path


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tomli_w.dumps(data), encoding="utf-8")


def _same(workspace: Path, env: dict[str, str],
          flags: dict[str, Any] | None = None) -> config_view.SettingsView | None:
    """config_view's answer, checked against config.load's when it gives one."""
    try:
        view = config_view.read(workspace, env=env, flags=flags)
    except config.ConfigError as exc:
        with pytest.raises(config.ConfigError) as full:
            config.load(workspace, env=env, flags=flags)
        assert str(full.value) == str(exc)
        return None
    if view is None:
        return None
    loaded = config.load(workspace, env=env, flags=flags)
    assert view.values == loaded.settings.model_dump(mode="json")
    assert list(config.flatten(view.values)) == list(
        config.flatten(loaded.settings.model_dump(mode="json")))
    for key in config.flatten(view.values):
        assert view.source_of(key) == loaded.source_of(key), key
    assert view.notices == loaded.notices
    # The models `agentls run` gets from the view are those config.load validates, down to
    # which keys were given (an agent CLI backend passes its model only when one was set).
    made = config_view.settings_of(view)
    assert made == loaded.settings
    _same_fields_set(made, loaded.settings)
    return view


def _same_fields_set(made: Any, validated: Any) -> None:
    assert type(made) is type(validated)
    assert made.model_fields_set == validated.model_fields_set, type(made).__name__
    for name in type(made).model_fields:
        mine, theirs = getattr(made, name), getattr(validated, name)
        if isinstance(mine, BaseModel):
            _same_fields_set(mine, theirs)
        elif isinstance(mine, dict):
            for entry, value in mine.items():
                if isinstance(value, BaseModel):
                    _same_fields_set(value, theirs[entry])


def test_the_common_cases_are_read_without_the_full_check(home: Path) -> None:
    workspace = home / "project"
    _write(config.user_config_file(), {
        "backend": "work", "backends": {"work": {"base_url": "http://localhost:9/v1",
                                                 "model": "m", "temperature": 1}},
        "cache": {"ttl_s": 60}, "sandbox": {"env": ["LANG"]}})
    _write(workspace / ".agentls" / "config.toml", {"max_iterations": 5,
                                                    "permissions": {"default": "deny"}})
    view = _same(workspace, {"AGENTLS_CACHE__ENABLED": "false", "AGENTLS_MODEL": "other",
                             "AGENTLS_RETRY_MAX_RETRIES": "2"})
    assert view is not None
    assert view.values["backends"]["work"]["temperature"] == 1.0
    assert view.values["backends"]["work"]["model"] == "other"
    assert view.source_of("backends.work.model") == "environment"


def test_an_untrusted_project_is_screened_as_the_full_check_does(home: Path) -> None:
    workspace = home / "project"
    _write(workspace / ".agentls" / "config.toml", {"sandbox": {"network": True},
                                                    "max_iterations": 7})
    view = _same(workspace, {})
    assert view is not None and view.notices and not view.values["sandbox"]["network"]


def test_what_the_models_refuse_goes_to_the_full_check(home: Path) -> None:
    workspace = home / "project"
    for data in ({"backend": "missing"}, {"cache": {"ttl_s": -1}}, {"nope": 1},
                 {"cache": {"nope": 1}}, {"completion": {"backend": "missing"}},
                 {"backends": {"openai": {"api_key_env": 5}}},
                 {"permissions": {"tools": {"read_file": "sometimes"}}}):
        _write(config.user_config_file(), data)
        assert config_view.read(workspace, env={}) is None, data
        with pytest.raises(config.ConfigError):
            config.load(workspace, env={})


def test_nested_rules_are_the_models_own(home: Path) -> None:
    """Settings the old hand-written reader could not judge (a field validator of a nested
    model, a table of permissions) are read by the models' rules like any other."""
    workspace = home / "project"
    _write(config.user_config_file(), {
        "permissions": {"tools": {"read_file": "deny"}},
        "index": {"embedding_api_key_env": "none"},
        "mcp": {"servers": {"files": {"command": "mcp-files", "url": " "}}}})
    view = _same(workspace, {})
    assert view is not None
    assert view.values["permissions"]["tools"]["read_file"] == "deny"
    assert view.values["index"]["embedding_api_key_env"] is None
    assert view.values["mcp"]["servers"]["files"]["url"] is None


def test_defaults_alone_import_no_pydantic(home: Path) -> None:
    """No config file, no AGENTLS_* variable: the defaults table answers, nothing validates."""
    import subprocess
    import sys

    code = ("import sys; from pathlib import Path\n"
            "from agentls.settings import view as config_view\n"
            "view = config_view.read(Path(sys.argv[1]), env={})\n"
            "assert view is not None and view.values['backend'] == 'openai'\n"
            "print(any(m == 'pydantic' or m.startswith('pydantic.') for m in sys.modules))")
    env = {**os.environ, "XDG_CONFIG_HOME": str(home / "config")}
    done = subprocess.run([sys.executable, "-c", code, str(home / "project")], env=env,
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_no_key_variable_and_a_base_url_from_the_environment_are_read_as_the_full_check_does(
        home: Path) -> None:
    workspace = home / "project"
    _write(config.user_config_file(), {"backends": {"openai": {"api_key_env": ""}}})
    env = {"AGENTLS_BACKENDS__LOCAL__BASE_URL": "http://127.0.0.1:8000/v1",
           "AGENTLS_BACKENDS__LOCAL__API_KEY_ENV": " none ", "AGENTLS_BACKEND": "local"}
    view = _same(workspace, env, {"backends.local.model": "scripted-model"})
    assert view is not None
    assert view.values["backends"]["openai"]["api_key_env"] is None
    assert view.values["backends"]["local"]["api_key_env"] is None
    # Not a URL: the key's own check says why, in the view as in config.load.
    with pytest.raises(config.ConfigError, match="AGENTLS_BACKENDS__LOCAL__BASE_URL"):
        config_view.read(workspace, env={**env, "AGENTLS_BACKENDS__LOCAL__BASE_URL":
                                         "localhost:8000"})
    assert _same(workspace, {**env, "AGENTLS_BACKENDS__LOCAL__BASE_URL": "localhost:8000"}) is None


_NAMES = st.sampled_from(["openai", "ollama", "work"])
_VALUES = st.one_of(
    st.integers(-5, 200_000), st.floats(-1, 3, allow_nan=False), st.booleans(),
    st.sampled_from(["openai", "work", "json", "marker", "deny", "allow", "ask", "auto",
                     "required", "off", "static", "", "x"]),
    st.lists(st.sampled_from(["git", "LANG", "a b"]), max_size=2))
_TEXTS = st.sampled_from(["true", "no", "5", "-1", "0.5", "1e3", "none", "[\"a\"]", "a,b",
                          " 7 ", "json", "deny", "1_000", "x", "", " NULL ", "MY_KEY",
                          "http://127.0.0.1:8/v1", "localhost:8000/v1", "https://h/v1 "])


def _fitting(key: str) -> st.SearchStrategy[Any]:
    """Values the key's field gives as examples (mostly valid), or any of the usual ones."""
    examples = config.key_info(key).info.examples or []
    return st.sampled_from(examples) if examples else _VALUES


@st.composite
def _layer(draw: st.DrawFn) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key in draw(st.lists(st.sampled_from(config_defaults.KEYS), max_size=4)):
        value = draw(st.one_of(_fitting(key), _fitting(key), _fitting(key), _VALUES))
        set_dotted(data, key.replace("<name>", draw(_NAMES)), value)
    return data


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(user=_layer(), project=_layer(),
       env=st.dictionaries(st.sampled_from([
           "AGENTLS_CACHE__TTL_S", "AGENTLS_CACHE_ENABLED", "AGENTLS_BACKEND",
           "AGENTLS_BACKENDS__WORK__MODEL", "AGENTLS_BACKENDS__OPENAI__TEMPERATURE",
           "AGENTLS_SANDBOX__ENV", "AGENTLS_MODEL", "AGENTLS_PERMISSIONS__DEFAULT",
           "AGENTLS_RETRY__BASE_DELAY_S", "AGENTLS_BACKENDS__WORK__BASE_URL",
           "AGENTLS_BACKENDS__WORK__API_KEY_ENV", "AGENTLS_BACKENDS__OPENAI__API_KEY_ENV",
           "AGENTLS_INDEX__EMBEDDING_API_KEY_ENV", "AGENTLS_BACKENDS__WORK__TYPE"]), _TEXTS,
           max_size=3),
       flags=st.dictionaries(st.sampled_from([
           "backend", "max_iterations", "cache.enabled", "timeout_ms",
           "backends.work.model", "backends.openai.model"]),
           st.sampled_from(["work", "openai", 3, 0, True, False, "m"]), max_size=2))
def test_any_layers_read_as_the_full_check_reads_them(
        home: Path, user: dict[str, Any], project: dict[str, Any], env: dict[str, str],
        flags: dict[str, Any]) -> None:
    workspace = home / "project"
    _write(config.user_config_file(), user)
    _write(workspace / ".agentls" / "config.toml", project)
    for on_top in ({}, flags):
        try:
            config.load(workspace, env=env, flags=on_top)
        except config.ConfigError:
            # An invalid configuration is never read past: the view steps aside or raises
            # alike.
            view = None
            with contextlib.suppress(config.ConfigError):
                view = config_view.read(workspace, env=env, flags=on_top)
            assert view is None
            continue
        _same(workspace, env, on_top)
