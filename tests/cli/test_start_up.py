"""What `agentls` imports before it knows the command: nothing heavy, so `--help`,
`--version` and `config` answer at once (the time itself is a benchmark figure, bench_cli)."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentls import __version__
from agentls.cli import main

HEAVY = ("openai", "pygls", "lsprotocol", "rich", "pydantic", "httpx2", "diskcache", "yaml",
         "agentls.engine", "agentls.llm", "agentls.lsp", "agentls.tools")


def imported_after(code: str, *argv: str) -> set[str]:
    """The heavy top-level modules present in sys.modules after ``code`` runs in a fresh
    interpreter (``argv`` as its sys.argv), whatever ``code`` exits with."""
    script = (
        "import atexit, json, sys\n"
        f"heavy = {HEAVY!r}\n"
        "atexit.register(lambda: print('\\n' + json.dumps(sorted(\n"
        "    h for h in heavy if any(m == h or m.startswith(h + '.') for m in sys.modules))),\n"
        "    file=sys.__stderr__))\n"
        f"sys.argv = ['agentls', *{list(argv)!r}]\n"
        f"{code}\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False, timeout=60, stdin=subprocess.DEVNULL)
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_importing_the_command_imports_nothing_heavy() -> None:
    assert imported_after("import agentls.cli.main") == set()


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["config", "--help"]])
def test_help_and_version_import_nothing_heavy(argv: list[str]) -> None:
    assert imported_after("from agentls.cli.main import main; main()", *argv) == set()


@pytest.mark.parametrize("action", [["path"], ["reset"]])
def test_config_path_and_reset_import_nothing_heavy(action: list[str], tmp_path: object) -> None:
    """They only touch files (config_files): no pydantic, no settings models."""
    code = (f"import os; os.environ['XDG_CONFIG_HOME'] = {str(tmp_path)!r}\n"
            "from agentls.cli.main import main; main()")
    assert imported_after(code, "config", *action) == set()


@pytest.mark.parametrize("action", [["get", "backend"], ["list", "--json"],
                                    ["get", "backends.work.model"]])
def test_config_reads_import_no_settings_models_with_nothing_to_check(
        action: list[str], tmp_path: Path) -> None:
    """With no config file and no AGENTLS_* variable, get and list answer from the defaults
    table made from the models (settings/view.py): nothing to validate, no pydantic."""
    code = (f"import os; os.environ['XDG_CONFIG_HOME'] = {str(tmp_path)!r}\n"
            "from agentls.cli.main import main; main()")
    assert imported_after(code, "config", *action) == set()


@pytest.mark.parametrize("action", [["get", "backend"], ["list", "--json"]])
def test_config_reads_check_given_values_with_pydantic_and_nothing_else(
        action: list[str], tmp_path: Path) -> None:
    """What a config file gives is validated by the settings models (pydantic); the
    engine, the model client, the editor server and the tools stay out."""
    user = tmp_path / "agentls" / "config.toml"
    user.parent.mkdir()
    user.write_text('backend = "work"\n[backends.work]\nbase_url = "http://localhost:9/v1"\n'
                    'model = "m"\n[cache]\nttl_s = 60\n')
    code = (f"import os; os.environ['XDG_CONFIG_HOME'] = {str(tmp_path)!r}\n"
            "from agentls.cli.main import main; main()")
    assert imported_after(code, "config", *action) == {"pydantic"}


def test_version_answers_without_importing_the_commands() -> None:
    done = subprocess.run([sys.executable, "-P", "-m", "agentls", "--version"], capture_output=True,
                          text=True, check=False, timeout=60)
    assert done.returncode == 0
    assert done.stdout.strip() == f"agentls {__version__}"


def test_top_level_help_lists_each_command_with_its_own_help() -> None:
    """`agentls --help` names the module commands without importing them: its one-line help
    for each must be the words the command's own parser uses."""
    for name, module_name in main.COMMAND_MODULES.items():
        commands = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(module_name).add_parser(commands)
        (action,) = commands._choices_actions
        assert action.help == main.COMMAND_HELP[name], name
    assert set(main.COMMAND_HELP) == set(main.COMMAND_MODULES)
    text = main.build_parser().format_help()
    for name, words in main.COMMAND_HELP.items():
        assert name in text and words.split()[0] in text


def test_a_module_command_still_gets_its_own_options() -> None:
    done = subprocess.run([sys.executable, "-P", "-m", "agentls", "sessions", "--help"],
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0
    assert "--limit" in done.stdout


def test_product_code_imports_openai_only_through_the_deferred_import() -> None:
    """A plain ``import openai`` anywhere in the product, imported first, would build all of
    openai.types again (~230 ms of every start that reaches the engine)."""
    import ast
    from pathlib import Path

    package = Path(main.__file__).resolve().parents[1]
    plain = []
    for path in sorted(package.rglob("*.py")):
        if "devtools" in path.parts:
            continue
        tree = ast.parse(path.read_text())
        for_types = {id(node) for guard in ast.walk(tree) if isinstance(guard, ast.If)
                     and isinstance(guard.test, ast.Name) and guard.test.id == "TYPE_CHECKING"
                     for node in ast.walk(guard)}
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if id(node) not in for_types and any(n.split(".")[0] == "openai" for n in names):
                plain.append(f"{path.relative_to(package)}:{node.lineno}")
    assert plain == []


def printed_after_run_imports(expression: str) -> str:
    """What ``print(expression)`` writes in a fresh interpreter once it has imported what
    `agentls run` imports before its first request (``sys`` is there to use)."""
    code = ("from agentls.cli.main import _command\n_command('run')\n"
            "import agentls.cli.headless, agentls.engine.loop.agent, sys\n"
            f"print({expression})")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    return done.stdout.strip()


def test_agentls_run_imports_openai_without_its_unused_types() -> None:
    printed = printed_after_run_imports(
        "'openai.types.eval_create_params' in sys.modules, 'openai' in sys.modules")
    assert printed.split() == ["False", "True"]


def test_agentls_run_imports_the_search_index_only_when_it_searches() -> None:
    # The index's modules (SQLite FTS, vectors, the embedders) wait for the first
    # search_semantic call or index.chat_context: a run that searches nothing skips them.
    # Only the chooser of an embedder from the settings (index/from_settings.py, which
    # imports nothing of the index itself) is there from the start.
    printed = printed_after_run_imports(
        "sorted(m for m in sys.modules if m.startswith('agentls.index.'))")
    assert printed == "['agentls.index.from_settings']"


def test_agentls_run_imports_the_response_cache_only_when_it_is_consulted() -> None:
    # An agent run is not answered from the cache by default (cache.agent_runs): diskcache
    # is imported, and the cache opened, by the first request that may be (llm/pool.py);
    # so is the cache's module (llm/cache.py: its keys, its records). test_run_cache.py's
    # runs are answered from it.
    printed = printed_after_run_imports(
        "[m in sys.modules for m in ('diskcache', 'agentls.llm.cache')]")
    assert printed == "[False, False]"


def test_agentls_run_imports_the_tools_code_only_when_a_tool_is_called() -> None:
    # The first request carries the tools' schemas as data (tools/tool_schemas.py); the
    # built-ins' models and code (file tools, patching, search) wait for their first call.
    printed = printed_after_run_imports(
        "sorted(m for m in ('agentls.tools.builtin', 'agentls.tools.files', "
        "'agentls.tools.search.text', 'agentls.tools.edit.patch', 'agentls.tools.edit.matching') "
        "if m in sys.modules)")
    assert printed == "[]"


def test_agentls_run_imports_the_code_intel_tools_only_for_a_check_or_a_call() -> None:
    # engine/check.py takes tools/code_intel.py's summary helpers when it checks; a run
    # makes its CheckState before the first request without them. Nor is the resolver of
    # attachments there (engine/prompt/references.py): `agentls run` attaches nothing.
    printed = printed_after_run_imports(
        "sorted(m for m in ('agentls.tools.code_intel', 'agentls.engine.prompt.references') "
        "if m in sys.modules)")
    assert printed == "[]"


def test_a_check_builds_none_of_the_code_intel_tools_models() -> None:
    # The parameter models of diagnostics, definition, references ... are built on a
    # tool's first call, not when a check imports their module for its helpers.
    printed = printed_after_run_imports(
        "[m.__pydantic_complete__ for m in (__import__('agentls.tools.code_intel').tools"
        ".code_intel.DiagnosticsParams, sys.modules['agentls.tools.code_intel'].PositionParams)]")
    assert printed == "[False, False]"


def test_agentls_run_imports_the_mcp_client_only_with_an_mcp_server() -> None:
    # With no MCP server configured (nor brought by the session) the hub, its connections
    # and the sandboxed launch are never needed: the engine makes the hub on first use.
    printed = printed_after_run_imports(
        "sorted(m for m in sys.modules if m.startswith(('agentls.tools.mcp', 'mcp')))")
    assert printed == "[]"


def test_agentls_run_asks_the_model_before_loading_the_language_server_client_or_tools(
        tmp_path: Path) -> None:
    # With lsp.detect on (the default) and basedpyright beside AgentLS (the dev extra), a
    # Python project is covered and the code-intel tools are offered; deciding that (root
    # markers, a PATH lookup: langservers/servers.py) loads none of the LSP client.
    # lsprotocol, pygls and the running servers wait for the first question or the check.
    # The modules are taken when the process connects to the model (an audit hook).
    from urllib.parse import urlsplit

    from tests.cli.headless_helpers import make_project, scripted_env

    from agentls.devtools.replay.command import ReplayServer
    from agentls.devtools.startup_probe import modules_at_connect

    project = make_project(tmp_path / "project")
    (project / "pyproject.toml").write_text("[project]\nname = 'calc'\n")
    with ReplayServer({"steps": [{"times": "*", "reply": {"text": "Nothing to do."}}]}) as model:
        done, loaded = modules_at_connect(
            ["run", "-", "--cwd", str(project), "--quiet"], urlsplit(model.base_url).port or 0,
            tmp_path / "modules.txt", env=scripted_env(model), stdin="Look at calc.",
            prefixes=("lsprotocol", "pygls", "agentls."))
        assert done.returncode == 0, done.stderr
        offered = {t["function"]["name"] for t in model.requests[0].body.get("tools", [])}
    assert "agentls.langservers.specs" in loaded  # it did decide which servers cover it
    assert not [m for m in loaded if m.startswith(("lsprotocol", "pygls"))
                or m.removeprefix("agentls.langservers.") in ("client", "running_server",
                                                              "fleet")], loaded
    if (Path(sys.executable).parent / "basedpyright-langserver").exists():
        assert "diagnostics" in offered
    # Nor the tools' code, the code-intel tools' module or the resolver of attachments: the
    # first request of a run that attaches nothing needs none of them.
    assert not [m for m in loaded if m in ("agentls.tools.builtin", "agentls.tools.files",
                                           "agentls.tools.code_intel",
                                           "agentls.engine.prompt.references")], loaded
    # Nor what only the model's answer needs: the diff of the changes, the disk writer
    # (workspace/line_diff.py, line_matcher.py, disk_writer.py: the ChangeSet imports them
    # on use), the done marker of `agentls loop` (cli/report.py names it for types only) and
    # the check of the run's own work (engine/check.py, made on the first answer without a
    # tool call). They load and work after the answer: test_run.py's
    # test_run_streams_text_writes_the_change_and_lists_it and
    # test_dry_run_shows_the_diff_and_writes_nothing (diff, writer), test_loop.py's
    # test_marker_loop_runs_until_a_final_done_line (the marker), and test_check.py's
    # test_a_type_error_is_told_before_the_turn_ends_and_the_fix_lands_in_the_same_change.
    assert not [m for m in loaded if m in DEFERRED_UNTIL_THE_ANSWER], loaded


DEFERRED_UNTIL_THE_ANSWER = ("agentls.workspace.line_diff", "agentls.workspace.line_matcher",
                             "agentls.workspace.disk_writer",
                             "agentls.engine.loop.done_marker", "agentls.engine.check")


def test_agentls_run_imports_what_only_the_answer_needs_after_it() -> None:
    printed = printed_after_run_imports(
        f"sorted(m for m in {DEFERRED_UNTIL_THE_ANSWER!r} if m in sys.modules)")
    assert printed == "[]"


@pytest.mark.parametrize(("flags", "reads"), [([], 1), (["--model", "other-model"], 2)])
def test_agentls_run_reads_the_settings_again_only_for_a_choice_they_did_not_make(
        tmp_path: Path, flags: list[str], reads: int) -> None:
    # The backend and model a run uses go on top of the layers; when they are what the
    # layers chose already (no --backend, --model or session), the first read stands.
    from tests.cli.headless_helpers import last_json, make_project, scripted_env

    from agentls.devtools.replay.command import ReplayServer

    project = make_project(tmp_path / "project")
    code = (
        "import atexit, sys\n"
        "from agentls.settings import view\n"
        "reads, read = [], view.read\n"
        "view.read = lambda *a, **k: reads.append(k.get('flags')) or read(*a, **k)\n"
        "atexit.register(lambda: print('\\n', len(reads), file=sys.__stderr__))\n"
        f"sys.argv = ['agentls', 'run', '-', '--cwd', {str(project)!r}, '--json', "
        f"*{flags!r}]\n"
        "from agentls.cli.main import main\n"
        "sys.exit(main())\n")
    with ReplayServer({"models": "*", "steps": [{"times": "*", "reply": {"text": "Done."}}]}
                      ) as model:
        done = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True,
                              text=True, env=scripted_env(model), input="Look at calc.",
                              check=False, timeout=60, start_new_session=True)
        asked = [request.body["model"] for request in model.requests]
    assert done.returncode == 0, done.stderr
    assert int(done.stderr.strip().splitlines()[-1]) == reads
    assert last_json(done.stdout)["model"] == asked[0]
    assert asked[0] == ("other-model" if flags else "scripted-model")
