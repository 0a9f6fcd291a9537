"""The `agentls` command where a person waits for it: start-up and the whole `agentls run`.

Every figure is a real subprocess, timed against a floor measured in the same run and
interleaved with it, so a busy machine slows both alike:

- `--version`, `--help`, `config path`, `config get backend` (no config file, and with one),
  `config list --json` (with a config file): spawn to exit, minus ``python -c pass``. Goal:
  <= 150 ms over it.
- The import of ``agentls.cli.main`` (what every command pays), minus ``python -c pass``.
- The import of ``openai``, plainly and as AgentLS does it (its types packages deferred),
  and a bare script's first streamed request through the openai client (no goals: the
  floor under the first request of `agentls run`; `agentls run`'s own goal over it is
  <= 1.4x its time, issue 37).
- `agentls run` spawn to the first request at the scripted model server, on a 20,000-file
  git repository, minus ``python -c "import agentls"`` (no goal: issue 27 moved its first
  goal, <= 300 ms over it, onto the bare script's time above).
- ``config get|list`` with a config file beside their floor, timed in the same turns: the
  command's own import and pydantic's start-up (a one-field model validating one value);
  reading a file validates it with pydantic.
- Time to first edit: `agentls run` spawn to exit with the edit written, the scripted model
  answering at once with one edit_file call, on 1,000 / 10,000 / 20,000-file git
  repositories (no goal: it watches the whole path, not only its parts).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from agentls.devtools.replay.command import ReplayServer
from agentls.devtools.startup_probe import modules_at_connect
from bench.harness import Figure, ms

REPO = Path(__file__).resolve().parents[1]
AGENTLS = [sys.executable, "-P", "-m", "agentls"]
FLOOR = [sys.executable, "-c", "pass"]
IMPORT_FLOOR = [sys.executable, "-c", "import agentls"]
# The floor of `config get|list` reading a config file: the command's own import (what
# `--help` pays) and pydantic's start-up (import, one model, one check), made as the command
# makes its models (the collector held off: base/import_gc.py).
PYDANTIC_FLOOR = [sys.executable, "-c", "import agentls.cli.main\n"
                  "from agentls.base.import_gc import imports_without_gc\n"
                  "with imports_without_gc():\n    from pydantic import BaseModel\n"
                  "    class Settings(BaseModel):\n        backend: str = 'default'\n"
                  "Settings.model_validate({'backend': 'work'})"]
DEFERRED_OPENAI = "from agentls.llm.openai_import import import_openai; import_openai()"
# The openai client's own first request from a bare script (deferred import, one streamed
# chat completion): what any tool built on this client pays before AgentLS adds anything.
BARE_CLIENT = DEFERRED_OPENAI + """
import asyncio, sys
import openai
async def main():
    client = openai.AsyncOpenAI(api_key="k", base_url=sys.argv[1], max_retries=0)
    stream = await client.chat.completions.create(
        model="scripted-model", messages=[{"role": "user", "content": "hi"}], stream=True)
    async for _ in stream:
        pass
asyncio.run(main())
"""
ROUNDS = 15
RUN_ROUNDS = 7
REPO_SIZES = (1_000, 10_000, 20_000)
PROMPT = "Fix add in src/calc.py"


def _wall(command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
          ) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, check=False,
                          stdin=subprocess.DEVNULL, start_new_session=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): "
                           f"{done.stderr.decode(errors='replace')[-2000:]}")
    return elapsed


def _in_turns(commands: list[list[str]], env: dict[str, str] | None = None,
              rounds: int = ROUNDS) -> list[float]:
    """Medians (ms) of each of ``commands``, run in turns (a busy spell slows them alike)."""
    for command in commands:
        _wall(command, env)  # warm the page cache
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(rounds):
        for command, taken in zip(commands, times, strict=True):
            taken.append(_wall(command, env))
    return [ms(statistics.median(taken)) for taken in times]


def _over_floor(command: list[str], floor: list[str], env: dict[str, str] | None = None,
                rounds: int = ROUNDS) -> tuple[float, float]:
    """Medians (ms) of ``command`` and of ``floor``, run alternately."""
    base, mine = _in_turns([floor, command], env, rounds)
    return mine, base


def _start_up_figures(home: Path) -> list[Figure]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(home / "config"),
           "XDG_CACHE_HOME": str(home / "cache")}
    figures = []
    value, floor = _over_floor([sys.executable, "-c", "import agentls.cli.main"], FLOOR, env)
    figures.append(Figure("import agentls.cli.main (python -c pass as baseline)", value, "ms",
                          floor))
    # The floor under `agentls run`'s first request: the openai package (the real client the
    # product must use). Imported plainly it builds all of openai.types; AgentLS imports it
    # with those packages' __init__ files deferred (llm/openai_import.py).
    value, floor = _over_floor([sys.executable, "-c", "import openai"], FLOOR, env)
    figures.append(Figure(f"import openai, plainly (python -c pass as baseline; "
                          f"{value - floor:.0f} ms over it)", value, "ms", floor))
    value, floor = _over_floor([sys.executable, "-c", DEFERRED_OPENAI], FLOOR, env)
    figures.append(Figure(f"import openai as AgentLS does, its types packages deferred "
                          f"(python -c pass as baseline; {value - floor:.0f} ms over it)",
                          value, "ms", floor))
    # A person's config file: what `config get|list` validate (settings/view.py checks only the
    # settings a layer gives, with the models' own rules; with no file it reads the defaults).
    user = home / "configured" / "agentls" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('backend = "work"\n[backends.work]\nbase_url = "http://localhost:9/v1"\n'
                    'model = "m"\napi_key_env = "none"\n[cache]\nttl_s = 60\n'
                    '[permissions]\ndefault = "ask"\n')
    configured = {**env, "XDG_CONFIG_HOME": str(user.parent.parent)}
    for words in (["--version"], ["--help"], ["config", "path"], ["config", "get", "backend"]):
        value, floor = _over_floor([*AGENTLS, *words], FLOOR, env)
        figures.append(_start_up_figure(words, "", value, floor))
    # issue 37: get and list validate what the layers give with the settings models (pydantic)
    # instead of a second, hand-written reader. Reading a config file therefore pays
    # pydantic's own start-up on top of the command's import, timed in the same turns.
    for words in (["config", "get", "backend"], ["config", "list", "--json"]):
        floor, pydantic, value = _in_turns([FLOOR, PYDANTIC_FLOOR, [*AGENTLS, *words]],
                                           configured)
        figures.append(Figure(
            f"the command's import and pydantic's start-up, beside `agentls "
            f"{' '.join(words)}` with a config file (import agentls.cli.main, then pydantic, "
            f"a one-field model validating one value; python -c pass as baseline; "
            f"{pydantic - floor:.0f} ms over it)", pydantic, "ms", floor))
        figures.append(_start_up_figure(
            words, f" with a config file ({value - pydantic:.0f} ms over the command's import "
            "and pydantic's start-up, timed in the same turns)", value, floor))
    return figures


def _start_up_figure(words: list[str], where: str, value: float, floor: float) -> Figure:
    over = value - floor
    return Figure(f"`agentls {' '.join(words)}`{where} spawn to exit (python -c pass as "
                  f"baseline; {over:.0f} ms over it)", value, "ms", floor,
                  "<= 150 ms over baseline", over <= 150)


# --- agentls run on generated repositories -----------------------------------------------------


def make_repository(root: Path, files: int) -> None:
    """``files`` small Python files in folders of 100, plus the one the task edits, in git."""
    for folder in range(max(1, files // 100)):
        package = root / "src" / f"pkg_{folder:03d}"
        package.mkdir(parents=True)
        for index in range(min(100, files)):
            (package / f"mod_{index:03d}.py").write_text(
                f"def f_{index}(x):\n    return x + {index}\n")
    (root / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "README.md").write_text("# a generated project\n")
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.email=b@example.com", "-c", "user.name=bench", "commit", "-qm",
                  "init"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


EDIT_SCRIPT = {"steps": [
    {"match": {"tool_results": False}, "times": "*", "reply": {"tool_calls": [
        {"id": "c1", "name": "edit_file", "arguments": {
            "path": "src/calc.py", "edits": [{"search": "return a - b",
                                              "replace": "return a + b"}]}}]}},
    {"match": {"tool": "edit_file"}, "times": "*", "reply": {"text": "Fixed add."}},
]}


def _scripted_env(model: ReplayServer, home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "XDG_CONFIG_HOME": str(home / "config"), "XDG_CACHE_HOME": str(home / "cache"),
        "AGENTLS_BACKENDS__SCRIPTED__BASE_URL": model.base_url,
        "AGENTLS_BACKENDS__SCRIPTED__MODEL": "scripted-model",
        "AGENTLS_BACKENDS__SCRIPTED__API_KEY_ENV": "",
        "AGENTLS_BACKEND": "scripted",
        "AGENTLS_RETRY__MAX_RETRIES": "0",
        "AGENTLS_CACHE__ENABLED": "false",
    }


def _run(root: Path, env: dict[str, str], model: ReplayServer) -> tuple[float, float]:
    calc = root / "src" / "calc.py"
    calc.write_text("def add(a, b):\n    return a - b\n")
    seen = len(model.requests)
    spawned = time.time()
    started = time.perf_counter()
    done = subprocess.run([*AGENTLS, "run", "-", "--cwd", str(root), "--quiet"], env=env,
                          input=PROMPT.encode(), capture_output=True, check=False,
                          start_new_session=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or calc.read_text() != "def add(a, b):\n    return a + b\n":
        raise RuntimeError(f"`agentls run` did not write the edit in {root} "
                           f"({done.returncode}): {done.stderr.decode(errors='replace')[-2000:]}")
    return model.requests[seen].time - spawned, elapsed


def _bare_client_first_request(model: ReplayServer, env: dict[str, str],
                               before: str = "") -> float:
    """Spawn to the request at the model of the bare script, run after ``before``."""
    seen = len(model.requests)
    spawned = time.time()
    _wall([sys.executable, "-P", "-c", before + BARE_CLIENT, model.base_url], env)
    return model.requests[seen].time - spawned


def _modules_at_first_request(root: Path, env: dict[str, str], model: ReplayServer,
                              folder: Path) -> list[str]:
    """The AgentLS modules an `agentls run` has imported when it connects to the model, in
    the order they were first imported."""
    (root / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    done, modules = modules_at_connect(["run", "-", "--cwd", str(root), "--quiet"],
                                       urlsplit(model.base_url).port or 0,
                                       folder / "modules.txt", env=env, stdin=PROMPT)
    if done.returncode != 0 or not modules:
        raise RuntimeError(f"`agentls run` did not reach the model in {root} "
                           f"({done.returncode}): {done.stderr[-2000:]}")
    return modules


def _imports_then(modules: list[str]) -> str:
    """Code importing ``modules`` as `agentls run` does (the collector held off, then the
    result frozen: base/import_gc.py), to run before the bare script."""
    return ("from agentls.base.import_gc import imports_without_gc\n"
            "with imports_without_gc():\n" + "".join(f"    import {m}\n" for m in modules))


def _run_figures(folder: Path) -> list[Figure]:
    home = folder / "home"
    figures = []
    with ReplayServer(EDIT_SCRIPT) as model:
        env = _scripted_env(model, home)
        for size in REPO_SIZES:
            root = folder / f"repo-{size}"
            root.mkdir()
            make_repository(root, size)
            _run(root, env, model)  # warm: the page cache, the session store
            firsts, totals, floors, bares, imported = [], [], [], [], []
            before, modules = "", []
            if size == REPO_SIZES[-1]:
                modules = _modules_at_first_request(root, env, model, folder)
                before = _imports_then(modules)
            # the ratio's 15 rounds: one run to the next moves by a third here, quiet or not
            for _ in range(ROUNDS if before else RUN_ROUNDS):
                floors.append(_wall(IMPORT_FLOOR, env))
                if before:  # the ratio's baseline and its floor, interleaved with the runs
                    bares.append(_bare_client_first_request(model, env))
                    imported.append(_bare_client_first_request(model, env, before))
                first, total = _run(root, env, model)
                firsts.append(first)
                totals.append(total)
            floor = ms(statistics.median(floors))
            first, total = ms(statistics.median(firsts)), ms(statistics.median(totals))
            if size == REPO_SIZES[-1]:
                over = first - floor
                figures.append(Figure(
                    f"`agentls run` on {size:,} files: spawn to the first request at the "
                    f"model (python -c 'import agentls' as baseline; {over:.0f} ms over it)",
                    first, "ms", floor))
                bare = ms(statistics.median(bares))
                figures.append(Figure(
                    "a bare script's first request through the openai client: spawn to the "
                    "request at the model (the floor under the figure above; python -c "
                    f"'import agentls' as baseline; {bare - floor:.0f} ms over it)", bare,
                    "ms", floor))
                # Its first goal (<= 300 ms over 'import agentls') was absolute and moved
                # with the machine's speed (+18 % from one hour to another here, for the bare
                # script as for `agentls run`); the ratio to the bare script's time moves
                # less, as long as the two are timed in turns (measured after the runs
                # instead, at load 6-8, the ratio of one tree went from 1.2x to 2.2x).
                # issue 27 re-based its goal on this floor (<= 1.3x the bare script's time);
                # issue 37 took out the process-wide dataclasses patch that bought ~45 ms of
                # it (DESIGN.md decision 19) and set the goal at <= 1.4x.
                # The floor under the goal: the bare script run after importing the AgentLS
                # modules a run has at its first request (and what they import), nothing
                # else: the run's own work is what it adds over this.
                floor_imports = ms(statistics.median(imported))
                figures.append(Figure(
                    f"the bare script after importing the {len(modules)} "
                    "AgentLS modules `agentls run` has loaded at its first request (the floor "
                    f"of the goal below: its imports alone, {floor_imports / bare:.2f}x the "
                    "bare script's time; bare script as baseline)", floor_imports, "ms",
                    bare))
                figures.append(Figure(
                    f"`agentls run` on {size:,} files: spawn to the first request, the bare "
                    f"script's time as baseline ({first - bare:.0f} ms more, "
                    f"{first / bare:.2f}x: AgentLS's own imports, settings, session store, "
                    f"project facts, request; its imports alone {floor_imports / bare:.2f}x)",
                    first, "ms", bare, "<= 1.4x baseline", first <= 1.4 * bare))
            figures.append(Figure(
                f"`agentls run` on {size:,} files: time to first edit (spawn to exit with the "
                "edit written, instant scripted model)", total, "ms", floor))
    return figures


def run() -> list[Figure]:
    with tempfile.TemporaryDirectory() as folder:
        figures = _start_up_figures(Path(folder))
        figures += _run_figures(Path(folder))
    return figures


if __name__ == "__main__":
    for figure in run():
        print(f"{figure.name}: {figure.value:.1f} {figure.unit} (baseline {figure.baseline}) "
              f"{figure.goal} met={figure.met}")
