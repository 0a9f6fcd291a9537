"""Settings: precedence, validation messages, and the `agentls config` command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentls.settings import config


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-P", "-m", "agentls", *args],
        capture_output=True, text=True, cwd=cwd, check=False,
    )


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_defaults_without_any_file(tmp_path: Path) -> None:
    loaded = config.load(tmp_path, env={})
    assert loaded.settings.backend == "openai"
    assert loaded.settings.max_iterations == 25
    assert loaded.settings.retry.max_retries == 3
    assert loaded.settings.retry.base_delay_s == 1.0
    assert loaded.settings.retry.max_delay_s == 30.0
    assert loaded.source_of("max_iterations") == "default"


def test_precedence_default_user_workspace_env_client_flags(tmp_path: Path) -> None:
    write(
        config.user_config_file(),
        "max_iterations = 2\ntimeout_ms = 1000\nno_progress_limit = 4\n[cache]\nttl_s = 10\n",
    )
    write(config.workspace_config_file(tmp_path), "max_iterations = 3\ntimeout_ms = 2000\n")
    env = {"AGENTLS_MAX_ITERATIONS": "4", "AGENTLS_CACHE__MAX_MB": "7"}
    loaded = config.load(tmp_path, env=env, client={"max_iterations": 5},
                         flags={"retry.max_retries": 0})
    s = loaded.settings
    assert s.max_iterations == 5  # client beats env, workspace and user
    assert s.timeout_ms == 2000  # workspace beats user
    assert s.no_progress_limit == 4  # user beats default
    assert s.cache.ttl_s == 10 and s.cache.max_mb == 7
    assert s.retry.max_retries == 0  # flags beat everything
    assert loaded.source_of("max_iterations") == "client"
    assert loaded.source_of("timeout_ms").startswith("workspace")
    assert loaded.source_of("cache.max_mb") == "environment"
    assert loaded.source_of("retry.max_retries") == "command line"
    assert config.load(tmp_path, env=env, flags={"max_iterations": 9}).settings.max_iterations == 9


def test_env_single_underscore_form_and_backend_keys(tmp_path: Path) -> None:
    env = {
        "AGENTLS_CACHE_TTL_S": "5",
        "AGENTLS_BACKENDS__LOCAL__BASE_URL": "http://127.0.0.1:9/v1",
        "AGENTLS_BACKEND": "local",
        "AGENTLS_MODEL": "my-model",
        "AGENTLS_SOMETHING_ELSE": "ignored",
    }
    s = config.load(tmp_path, env=env).settings
    assert s.cache.ttl_s == 5
    assert s.backend == "local"
    assert s.active_backend.base_url == "http://127.0.0.1:9/v1"
    assert s.active_backend.model == "my-model"  # AGENTLS_MODEL follows the active backend
    assert s.backends["openai"].model == "gpt-4o-mini"


def test_openai_base_url_sets_the_openai_backend(tmp_path: Path) -> None:
    s = config.load(tmp_path, env={"OPENAI_BASE_URL": "http://proxy:1/v1"}).settings
    assert s.backends["openai"].base_url == "http://proxy:1/v1"


def test_bad_env_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(config.ConfigError, match=r"AGENTLS_TIMEOUT_MS.*greater than 0"):
        config.load(tmp_path, env={"AGENTLS_TIMEOUT_MS": "-1"})


@pytest.mark.parametrize(
    ("key", "raw", "expected"),
    [
        ("timeout_ms", "120000", 120000),
        ("cache.enabled", "false", False),
        ("completion_mode", "json", "json"),
        ("backends.ollama.api_key_env", "none", None),
        ("backends.local.temperature", "0.5", 0.5),
    ],
)
def test_parse_value_accepts(key: str, raw: str, expected: object) -> None:
    assert config.parse_value(key, raw) == expected


@pytest.mark.parametrize(
    ("key", "raw", "fragment"),
    [
        ("timeout_ms", "0", "greater than 0"),
        ("timeout_ms", "1.5", "valid integer"),
        ("timeout_ms", "abc", "valid integer"),
        ("completion_mode", "xml", "'marker' or 'json'"),
        ("backends.openai.temperature", "3", "less than or equal to 2"),
        ("cache.enabled", "maybe", "valid boolean"),
    ],
)
def test_parse_value_refuses_with_expected_form_and_example(
    key: str, raw: str, fragment: str
) -> None:
    with pytest.raises(config.ConfigError) as info:
        config.parse_value(key, raw)
    message = str(info.value)
    assert fragment in message
    assert f"Example: agentls config set {key} " in message


def test_unknown_key_lists_valid_keys() -> None:
    with pytest.raises(config.ConfigError) as info:
        config.key_info("foo")
    assert "unknown key 'foo'" in str(info.value)
    assert "timeout_ms" in str(info.value) and "backends.<name>.model" in str(info.value)


def test_api_keys_are_refused_as_config_keys() -> None:
    with pytest.raises(config.ConfigError, match="never stored in configuration"):
        config.key_info("backends.openai.api_key")


def test_unparseable_file_names_file_line_and_reset(tmp_path: Path) -> None:
    path = config.user_config_file()
    write(path, 'backend = "openai"\n\nmax_iterations = 3x\n')
    with pytest.raises(config.ConfigError) as info:
        config.load(tmp_path, env={})
    message = str(info.value)
    assert str(path) in message and "line 3" in message and "agentls config reset" in message


def test_invalid_value_in_file_names_key_and_file(tmp_path: Path) -> None:
    write(config.workspace_config_file(tmp_path), "max_iterations = 0\n")
    with pytest.raises(config.ConfigError) as info:
        config.load(tmp_path, env={})
    assert "max_iterations" in str(info.value)
    assert str(config.workspace_config_file(tmp_path)) in str(info.value)


def test_backend_must_be_configured(tmp_path: Path) -> None:
    with pytest.raises(config.ConfigError, match="backend 'nope' is not configured"):
        config.load(tmp_path, env={"AGENTLS_BACKEND": "nope"})


def test_cli_set_get_list_path_reset(tmp_path: Path) -> None:
    done = run_cli("config", "set", "timeout_ms", "120000", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert run_cli("config", "get", "timeout_ms", cwd=tmp_path).stdout.strip() == "120000"
    assert "timeout_ms = 120000" in config.user_config_file().read_text()

    listing = json.loads(run_cli("config", "list", "--json", cwd=tmp_path).stdout)
    assert listing["timeout_ms"]["value"] == 120000
    assert listing["timeout_ms"]["source"].startswith("user")
    assert listing["max_iterations"] == {"value": 25, "source": "default"}

    paths = run_cli("config", "path", cwd=tmp_path).stdout
    assert str(config.user_config_file()) in paths

    reset = run_cli("config", "reset", cwd=tmp_path)
    assert reset.returncode == 0 and "defaults apply" in reset.stdout
    assert not config.user_config_file().exists()
    assert config.user_config_file().with_name("config.toml.bak").exists()
    assert run_cli("config", "get", "timeout_ms", cwd=tmp_path).stdout.strip() == "600000"


def test_cli_set_workspace_file(tmp_path: Path) -> None:
    done = run_cli("config", "set", "--workspace", "completion_mode", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert 'completion_mode = "json"' in config.workspace_config_file(tmp_path).read_text()
    assert run_cli("config", "get", "completion_mode", cwd=tmp_path).stdout.strip() == "json"


def test_cli_set_new_backend_then_select_it(tmp_path: Path) -> None:
    assert run_cli("config", "set", "backend", "mine", cwd=tmp_path).returncode != 0
    assert run_cli("config", "set", "backends.mine.base_url", "http://h:1/v1").returncode == 0
    done = run_cli("config", "set", "backend", "mine", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_cli_errors_are_non_zero_and_actionable(tmp_path: Path) -> None:
    unknown = run_cli("config", "set", "foo", "bar", cwd=tmp_path)
    assert unknown.returncode != 0
    assert "unknown key 'foo'" in unknown.stderr and "max_iterations" in unknown.stderr

    bad = run_cli("config", "set", "timeout_ms", "soon", cwd=tmp_path)
    assert bad.returncode != 0
    assert "valid integer" in bad.stderr and "Example: agentls config set timeout_ms" in bad.stderr
    assert not config.user_config_file().exists()  # nothing half-written

    write(config.user_config_file(), "max_iterations = [\n")
    broken = run_cli("config", "list", cwd=tmp_path)
    assert broken.returncode != 0
    assert "agentls config reset" in broken.stderr and "Traceback" not in broken.stderr


def test_api_key_comes_from_the_named_variable_only() -> None:
    backend = config.BackendConfig(api_key_env="MY_KEY")
    assert config.api_key(backend, {"MY_KEY": "sk-x", "OPENAI_API_KEY": "other"}) == "sk-x"
    assert config.api_key(config.BackendConfig(api_key_env=None), {"OPENAI_API_KEY": "k"}) is None


def test_permission_keys(tmp_path: Path) -> None:
    assert config.parse_value("permissions.tools.shell_exec", "allow") == "allow"
    assert config.parse_value("permissions.shell_allow", "ls, pytest -q") == ["ls", "pytest -q"]
    assert config.parse_value("permissions.shell_deny", '["sudo", "curl"]') == ["sudo", "curl"]
    with pytest.raises(config.ConfigError, match="'allow', 'ask' or 'deny'"):
        config.parse_value("permissions.tools.write_file", "sometimes")
    env = {"AGENTLS_PERMISSIONS__TOOLS__WRITE_FILE": "ask"}
    policy = config.load(tmp_path, env=env).settings.permissions
    assert policy.permission_for("write_file") == "ask"
    assert policy.permission_for("read_file") == "allow"  # defaults stay under the override


def test_cli_sets_a_tool_permission(tmp_path: Path) -> None:
    done = run_cli("config", "set", "permissions.tools.shell_exec", "deny", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert run_cli("config", "get", "permissions.tools.shell_exec",
                   cwd=tmp_path).stdout.strip() == "deny"


def test_no_key_variable_reads_back_as_none(tmp_path: Path) -> None:
    done = run_cli("config", "set", "backends.ollama.api_key_env", "none", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    got = run_cli("config", "get", "backends.ollama.api_key_env", cwd=tmp_path)
    assert got.stdout.strip() == "none"
    write(config.workspace_config_file(tmp_path), '[backends.vllm]\napi_key_env = "None"\n')
    assert config.load(tmp_path, env={}).settings.backends["vllm"].api_key_env is None


def test_bad_choice_comes_with_an_example() -> None:
    with pytest.raises(config.ConfigError) as info:
        config.parse_value("permissions.tools.shell_exec", "maybe")
    assert "Example: agentls config set permissions.tools.shell_exec allow" in str(info.value)


def test_broken_workspace_file_points_at_the_workspace_reset(tmp_path: Path) -> None:
    write(config.workspace_config_file(tmp_path), "x = [\n")
    with pytest.raises(config.ConfigError, match="`agentls config reset --workspace`"):
        config.load(tmp_path, env={})


def test_agentls_model_is_listed_as_coming_from_the_environment(tmp_path: Path) -> None:
    loaded = config.load(tmp_path, env={"AGENTLS_BACKEND": "ollama", "AGENTLS_MODEL": "m1"})
    assert loaded.settings.backends["ollama"].model == "m1"
    assert loaded.source_of("backends.ollama.model") == "environment"


def test_unconfigured_backend_names_the_key_its_source_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(config.ConfigError) as info:
        config.load(tmp_path, env={"AGENTLS_BACKEND": "nope"})
    message = str(info.value)
    assert "backend: backend 'nope' is not configured" in message
    assert "(from environment)" in message and "Value error" not in message
    assert "agentls config set backends.nope.base_url URL" in message


def test_unwritable_config_folder_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "not-a-folder").write_text("")
    with pytest.raises(config.ConfigError, match="cannot write config file"):
        config.write_config_file(tmp_path / "not-a-folder" / "config.toml",
                                 {"max_iterations": 3})


def test_config_file_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    config.set_value(path, "max_iterations", "3")
    config.set_value(path, "timeout_ms", "1000")
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]
    assert config.read_config_file(path) == {"max_iterations": 3, "timeout_ms": 1000}


def test_cli_get_of_an_unconfigured_name_says_how_to_add_it(tmp_path: Path) -> None:
    done = run_cli("config", "get", "backends.work.model", cwd=tmp_path)
    assert done.returncode == 78
    assert "agentls config set backends.work.base_url URL" in done.stderr
    tool = run_cli("config", "get", "permissions.tools.my_tool", cwd=tmp_path)
    assert tool.returncode == 78 and "permissions.default (ask)" in tool.stderr


def test_cli_set_workspace_needs_an_existing_folder(tmp_path: Path) -> None:
    missing = tmp_path / "typo"
    done = run_cli("-C", str(missing), "config", "set", "--workspace", "max_iterations", "3")
    assert done.returncode == 64 and "--cwd" in done.stderr
    assert not missing.exists()
    made = run_cli("config", "set", "--workspace", "max_iterations", "3", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "state.db*" in (tmp_path / ".agentls" / ".gitignore").read_text()


def test_a_backend_you_add_gets_no_key_unless_it_names_one(tmp_path: Path) -> None:
    env = {"AGENTLS_BACKENDS__WORK__BASE_URL": "https://llm.example.com/v1",
           "OPENAI_API_KEY": "sk-openai-only"}
    settings = config.load(tmp_path, env=env).settings
    assert settings.backends["work"].api_key_env is None
    assert config.api_key(settings.backends["work"], env) is None
    assert config.api_key(settings.backends["openai"], env) == "sk-openai-only"


def test_next_edit_is_off_until_a_model_is_set_and_names_a_known_backend() -> None:
    from pydantic import ValidationError

    from agentls.settings.models import Settings

    assert not Settings().next_edit.active
    on = Settings.model_validate({"next_edit": {"model": "zeta", "backend": "ollama"}})
    assert on.next_edit.active and on.next_edit.format == "auto"
    assert not Settings.model_validate({"next_edit": {"model": "zeta",
                                                      "enabled": False}}).next_edit.active
    with pytest.raises(ValidationError, match=r"next_edit\.backend 'nowhere' is not configured"):
        Settings.model_validate({"next_edit": {"backend": "nowhere"}})
