"""No-progress detection: nearly identical outputs, in a row, with no new changes."""

from __future__ import annotations

from agentls.engine.loop.stall import (
    EDGE_TOKENS,
    ProgressTracker,
    nearly_identical,
    similarity,
    tokens,
)


def test_normalisation_ignores_case_spacing_and_numbers() -> None:
    assert tokens("Attempt 3:  took\n41 ms") == tokens("attempt 12: took 7 ms")
    assert similarity("Still Failing", "still   failing") == 1.0


def test_similarity_threshold() -> None:
    base = " ".join(f"word{chr(97 + i % 26)}" for i in range(60))
    one_word_changed = base.replace("worda", "other", 1)
    assert nearly_identical(base, one_word_changed)
    assert not nearly_identical("I fixed the parser.", "I fixed the lexer and the tests.")
    assert not nearly_identical("short", "")


def test_long_outputs_are_compared_on_their_edges() -> None:
    assert len(tokens("x " * (3 * EDGE_TOKENS))) == 2 * EDGE_TOKENS


def test_stops_after_limit_nearly_identical_outputs_without_changes() -> None:
    tracker = ProgressTracker(3)
    assert not tracker.observe("Checked the code, attempt 1.", changed=False)
    assert not tracker.observe("Checked the code, attempt 2.", changed=False)
    assert tracker.observe("Checked the code, attempt 3.", changed=False)


def test_a_change_anywhere_in_the_window_is_progress() -> None:
    tracker = ProgressTracker(3)
    assert not tracker.observe("same", changed=True)
    assert not tracker.observe("same", changed=False)
    assert not tracker.observe("same", changed=False)
    assert tracker.observe("same", changed=False)  # the change has left the window


def test_a_different_output_breaks_the_run() -> None:
    tracker = ProgressTracker(2)
    assert not tracker.observe("reading files", changed=False)
    assert not tracker.observe("now writing the tests for the parser", changed=False)
    assert tracker.observe("now writing the tests for the parser", changed=False)


def test_a_limit_of_one_behaves_like_two() -> None:
    tracker = ProgressTracker(1)
    assert tracker.limit == 2
    assert not tracker.observe("same", changed=False)
    assert tracker.observe("same", changed=False)
