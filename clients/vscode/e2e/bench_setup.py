"""What the VS Code end-to-end run needs besides its static script (run by e2e/run.mjs).

* A stored session of TURNS turns in the workspace's ``.agentls/state.db``, titled
  ``BENCH_TITLE``, written through the engine's own SessionStore (as if those turns had
  happened): the panel opens it from its History button (its latest 200 turns, one page),
  streams a long answer into those 200 turns, then shows the 200 before them from its
  "Earlier turns (800 more)" control.
* The scripted model's script: e2e/script.yaml plus one step answering
  ``LONG_PROMPT`` with a LINES-line Markdown answer (paragraphs and code blocks), streamed in
  small pieces, so the panel's time per chunk can be compared early and late in the answer.
* REVIEW_FILES files of REVIEW_LINES lines under ``review_bench/`` and the steps answering
  ``REVIEW_PROMPT`` with an edit of REVIEW_HUNKS lines in each (one hunk each): the edit the
  review in the editor draws and decides for the bench (20 files, 200 hunks); and
  ``review_bench/big.py`` (BIG_LINES lines), rewritten for ``BIG_PROMPT`` with every tenth
  line changed (2,000 hunks).
* Under ``review_bench/floor/``, each of those two edits' first file as its review shows it
  (every changed line's old text above its new one: 110 and 22,000 lines): the e2e opens
  them with the review's decorations and nothing else, the floor under the review's drawing.

Usage: python bench_setup.py WORKSPACE SCRIPT_IN SCRIPT_OUT
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

from agentls.engine.sessions.store import SessionStore
from agentls.llm.messages import Message

TURNS = 1000  # the panel opens the latest 200 (one page of agentls/turns)
LINES = 2000
BENCH_TITLE = "Bench: a 1,000-turn conversation"
LONG_PROMPT = "Stream the long answer"
CHUNK = 32  # characters per streamed piece: ~1,230 pieces for the 2,000 lines
DELAY_S = 0.004
REVIEW_PROMPT = "Review twenty files"
REVIEW_FILES = 20
REVIEW_LINES = 100
REVIEW_HUNKS = 10  # per file: lines 5, 15, ..., 95
BIG_PROMPT = "Review the big file"
BIG_LINES = 20_000  # review_bench/big.py: 2,000 hunks, one every 10 lines


def review_files(workspace: Path) -> None:
    folder = workspace / "review_bench"
    folder.mkdir(exist_ok=True)
    for f in range(1, REVIEW_FILES + 1):
        lines = [f"value_{f}_{k} = {k}\n" for k in range(REVIEW_LINES)]
        (folder / f"f{f:02}.py").write_text("".join(lines), encoding="utf-8")
    (folder / "big.py").write_text(big_text(doubled=False), encoding="utf-8")
    floor = folder / "floor"
    floor.mkdir(exist_ok=True)
    step = REVIEW_LINES // REVIEW_HUNKS
    (floor / "f01.py").write_text(laid_out([(f"value_1_{k} = {k}", k % step == step // 2)
                                            for k in range(REVIEW_LINES)]), encoding="utf-8")
    (floor / "big.py").write_text(laid_out([(f"big_{k} = {k}", k % 10 == 5) for k in range(BIG_LINES)]),
                                  encoding="utf-8")


def laid_out(lines: list[tuple[str, bool]]) -> str:
    """A file as the review shows its edit: each changed line, then its doubled value."""
    return "".join(f"{line}\n{line} * 2\n" if changed else f"{line}\n" for line, changed in lines)


def big_text(doubled: bool) -> str:
    return "".join(f"big_{k} = {k}{' * 2' if doubled and k % 10 == 5 else ''}\n"
                   for k in range(BIG_LINES))


def review_steps() -> list[dict[str, object]]:
    calls = [{"name": "edit_file", "arguments": {
        "path": f"review_bench/f{f:02}.py",
        "edits": [{"search": f"value_{f}_{k} = {k}\n", "replace": f"value_{f}_{k} = {k} * 2\n"}
                  for k in range(5, REVIEW_LINES, REVIEW_LINES // REVIEW_HUNKS)]}}
        for f in range(1, REVIEW_FILES + 1)]
    return [
        {"name": "review-bench", "match": {"user": REVIEW_PROMPT, "tool_results": False},
         "times": "*", "reply": {"text": "Doubling ten values in each of twenty files.",
                                 "tool_calls": calls}},
        {"name": "review-bench-done", "match": {"user": REVIEW_PROMPT, "tool": "edit_file"},
         "times": "*", "reply": {"text": "Twenty files changed."}},
        {"name": "review-big", "match": {"user": BIG_PROMPT, "tool_results": False},
         "times": "*", "reply": {
             "text": "Doubling every tenth value of big.py.", "chunk_size": 1 << 20, "delay_s": 0,
             "tool_calls": [
             {"name": "write_file", "arguments": {"path": "review_bench/big.py",
                                                  "content": big_text(doubled=True),
                                                  "mode": "overwrite"}}]}},
        {"name": "review-big-done", "match": {"user": BIG_PROMPT, "tool": "write_file"},
         "times": "*", "reply": {"text": "big.py changed."}},
    ]


def long_answer(lines: int = LINES) -> str:
    """Sections of a heading, a paragraph and a short code block, cut at ``lines`` lines."""
    out: list[str] = []
    k = 0
    while len(out) < lines:
        k += 1
        out += [f"### Step {k}", "",
                f"Step {k} changes `value_{k}` so that the total stays **consistent** when "
                f"the input grows; see the function below.", "",
                "```python", f"def step_{k}(x):", f"    return x + {k}", "```", ""]
    text = "\n".join(out[:lines])
    # Close a fence the cut left open, so the answer is well-formed Markdown.
    return text + "\n```\n" if text.count("```") % 2 else text + "\n"


def seed(workspace: Path) -> None:
    with SessionStore.for_workspace(workspace) as store:
        session = store.create_session(backend="openai", model="scripted-model",
                                       title=BENCH_TITLE)
        for k in range(1, TURNS + 1):
            question = f"Question {k}: what does step {k} do?"
            store.append(session.id, Message(role="user", content=question))
            store.append(session.id, Message(role="assistant", content=(
                f"Step {k} adds {k} to its input:\n\n```python\ndef step_{k}(x):\n"
                f"    return x + {k}\n```\n\nNothing else changes.")))


def script(source: Path, target: Path) -> None:
    data = yaml.safe_load(source.read_text(encoding="utf-8"))
    data["steps"][:0] = review_steps()
    data["steps"].append({
        "name": "long-answer", "match": {"user": LONG_PROMPT}, "times": "*",
        "reply": {"chunk_size": CHUNK, "delay_s": DELAY_S, "text": long_answer()},
    })
    target.write_text(json.dumps(data), encoding="utf-8")


if __name__ == "__main__":
    workspace, script_in, script_out = (Path(a) for a in sys.argv[1:4])
    seed(workspace)
    review_files(workspace)
    script(script_in, script_out)
