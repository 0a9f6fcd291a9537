"""The terminal renderer: stdout holds only the answer (or the JSON), and survives its reader
going away."""

from __future__ import annotations

import io
from pathlib import Path

from agentls.cli.render import Renderer
from agentls.engine.events import TextDelta
from agentls.workspace.changeset import FileDiff


class ClosedPipe(io.StringIO):
    """stdout whose reader went away after the first write (`agentls run … | head -c 3`)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        if self.writes > 1:
            raise BrokenPipeError(32, "Broken pipe")
        return super().write(text)


def test_a_reader_going_away_stops_the_text_not_the_run() -> None:
    out, err = ClosedPipe(), io.StringIO()
    renderer = Renderer(stdout=out, stderr=err)
    renderer.on_event(TextDelta(text="first"))
    renderer.on_event(TextDelta(text=" second"))
    renderer.on_event(TextDelta(text=" third"))
    renderer.diff([FileDiff(Path("a.py"), "update", "--- a/a.py\n+++ b/a.py\n", 1, 1)])
    renderer.line("still reporting")
    assert out.getvalue() == "first" and out.writes == 2  # nothing tried after the break
    assert "still reporting" in err.getvalue()


def test_dry_run_diff_goes_to_stdout_or_to_stderr_with_json() -> None:
    diff = [FileDiff(Path("a.py"), "update", "--- a/a.py\n+++ b/a.py\n-x\n+y\n", 1, 1)]
    out, err = io.StringIO(), io.StringIO()
    Renderer(stdout=out, stderr=err).diff(diff)
    assert out.getvalue() == "--- a/a.py\n+++ b/a.py\n-x\n+y\n" and err.getvalue() == ""
    out, err = io.StringIO(), io.StringIO()
    Renderer(json_mode=True, stdout=out, stderr=err).diff(diff)
    assert out.getvalue() == "" and "+y" in err.getvalue()
