"""bench/bench_vscode.py reports the e2e run's timings, or says they were not measured."""

from __future__ import annotations

import json
from pathlib import Path

from bench import bench_vscode


def test_figures_from_an_e2e_run(tmp_path: Path) -> None:
    path = tmp_path / "vscode_e2e.json"
    path.write_text(json.dumps({
        "measuredAt": "2026-11-23T20:00:00Z", "samples": 5, "activationToInitializeMs": 812.5,
        "commandToFirstTokenShownMs": 140.0, "serverFirstTokenMs": 60.0,
    }))
    activation, first_token, streaming = bench_vscode.run(path)
    assert streaming.unit == "not measured" and "no 1,000th chunk" in streaming.name
    assert activation.value == 812.5 and activation.unit == "ms"
    assert "2026-11-23T20:00:00Z" in activation.name
    assert (first_token.value, first_token.baseline, first_token.met) == (140.0, 60.0, True)


def test_over_the_goal_is_not_met(tmp_path: Path) -> None:
    path = tmp_path / "vscode_e2e.json"
    path.write_text(json.dumps({"commandToFirstTokenShownMs": 500.0,
                                "serverFirstTokenMs": 100.0}))
    first_token, _ = bench_vscode.run(path)
    assert first_token.met is False


def test_the_per_chat_overhead_decides_when_recorded(tmp_path: Path) -> None:
    path = tmp_path / "vscode_e2e.json"
    path.write_text(json.dumps({"commandToFirstTokenShownMs": 500.0, "serverFirstTokenMs": 100.0,
                                "overheadMs": 250.0}))
    first_token, _ = bench_vscode.run(path)
    assert first_token.met is True


def test_without_an_e2e_run_the_figures_say_not_measured(tmp_path: Path) -> None:
    figures = bench_vscode.run(tmp_path / "missing.json")
    assert len(figures) == 3
    for figure in figures:
        assert "not measured" in figure.name and "make e2e-vscode" in figure.name
        assert figure.unit == "not measured" and figure.met is None


def test_a_broken_results_file_is_reported_not_raised(tmp_path: Path) -> None:
    path = tmp_path / "vscode_e2e.json"
    path.write_text("{not json")
    assert all("unreadable" in f.name for f in bench_vscode.run(path))
    path.write_text(json.dumps({"samples": 0}))
    assert all("no timings" in f.name for f in bench_vscode.run(path))


def test_streaming_is_flat_when_chunk_1000_is_within_1_5x_of_chunk_10(tmp_path: Path) -> None:
    path = tmp_path / "vscode_e2e.json"
    run = {"activationToInitializeMs": 800.0,
           "streaming": {"chunks": 1232, "turns": 201, "chunk10Ms": 2.0, "chunk1000Ms": 2.9}}
    path.write_text(json.dumps(run))
    _, streaming = bench_vscode.run(path)
    assert (streaming.value, streaming.baseline, streaming.met) == (2.9, 2.0, True)
    assert "1232 chunks after 200 turns" in streaming.name
    run["streaming"]["chunk1000Ms"] = 3.1  # type: ignore[index]
    path.write_text(json.dumps(run))
    assert bench_vscode.run(path)[1].met is False


def test_opening_a_long_history_sums_its_three_parts(tmp_path: Path) -> None:
    path = tmp_path / "vscode_e2e.json"
    path.write_text(json.dumps({"activationToInitializeMs": 800.0, "historyOpen": {
        "requestMs": 60.0, "extensionMs": 30.0, "webviewMs": 70.0, "turns": 200,
        "total": 1000}}))
    history = next(f for f in bench_vscode.run(path) if f.name.startswith(bench_vscode.HISTORY))
    assert (history.value, history.met) == (160.0, True)
    assert "request 60 ms, extension 30 ms, webview 70 ms" in history.name


def test_the_review_in_the_editor_has_two_goals(tmp_path: Path) -> None:
    path = tmp_path / "vscode_e2e.json"
    run = {"activationToInitializeMs": 800.0, "review": {
        "files": 20, "hunks": 200, "drawnMs": 120.0, "openMs": 70.0, "textMs": 90.0,
        "marksMs": 120.0, "lensesMs": 400.0, "keepMs": 30.0, "keepExtensionMs": 6.0}}
    path.write_text(json.dumps(run))
    figures = bench_vscode.run(path)
    drawn = next(f for f in figures if f.name.startswith(bench_vscode.REVIEW_DRAWN))
    keep = next(f for f in figures if f.name.startswith(bench_vscode.REVIEW_KEEP))
    assert (drawn.value, drawn.met, keep.value, keep.met) == (120.0, True, 30.0, True)
    assert ("20 files, 200 hunks; the extension's part 70 ms; text 90 ms; gutter marks 120 ms; "
            "CodeLens 400 ms]") in drawn.name
    assert "the extension's part 6 ms" in keep.name
    run["review"].update(drawnMs=151.0, keepMs=50.5)  # type: ignore[attr-defined]
    path.write_text(json.dumps(run))
    assert [f.met for f in bench_vscode.run(path) if "review" in f.name.lower()] == [False, False]


def test_the_2000_hunk_file_reports_its_drawing_and_a_goal_for_keeping(tmp_path: Path) -> None:
    path = tmp_path / "vscode_e2e.json"
    path.write_text(json.dumps({"activationToInitializeMs": 800.0, "reviewBig": {
        "files": 1, "hunks": 2000, "drawnMs": 900.0, "keepMs": 60.0}}))
    figures = bench_vscode.run(path)
    drawn = next(f for f in figures if f.name.startswith(bench_vscode.REVIEW_BIG_DRAWN))
    keep = next(f for f in figures if f.name.startswith(bench_vscode.REVIEW_BIG_KEEP))
    assert (drawn.value, drawn.goal, drawn.met) == (900.0, "", None)
    assert (keep.value, keep.met) == (60.0, False)


def test_the_review_s_drawing_has_its_floor_as_baseline(tmp_path: Path) -> None:
    path = tmp_path / "vscode_e2e.json"
    path.write_text(json.dumps({"activationToInitializeMs": 800.0, "review": {
        "files": 20, "hunks": 200, "rounds": 3, "drawnMs": 280.0, "floorMs": 250.0,
        "floorLines": 111, "floorRanges": 20}, "reviewBig": {
        "files": 1, "hunks": 2000, "rounds": 1, "drawnMs": 1200.0, "floorMs": 500.0,
        "floorLines": 22001, "floorRanges": 4000}}))
    figures = bench_vscode.run(path)
    drawn = next(f for f in figures if f.name.startswith(bench_vscode.REVIEW_DRAWN))
    big = next(f for f in figures if f.name.startswith(bench_vscode.REVIEW_BIG_DRAWN))
    assert (drawn.baseline, drawn.ratio, drawn.met) == (250.0, 1.12, False)
    floor = f"{bench_vscode.FLOOR} (111 lines, 20 ranges): 250 ms, medians of 3 rounds]"
    assert floor in drawn.name
    assert (big.baseline, big.ratio, big.goal) == (500.0, 2.4, "")
    assert "(22001 lines, 4000 ranges): 500 ms]" in big.name
