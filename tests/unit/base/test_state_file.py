"""state_file: the one atomic write of a state file (facts, the nested-agents walk, config
files, trust records, run artifacts)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from agentls.base import state_file


def test_writes_json_and_replaces_the_old_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "state" / "facts.json"
    state_file.write_json(path, {"a": 1}, parents=True)
    state_file.write_json(path, {"b": [1, 2]}, durable=False, separators=(",", ":"))

    assert path.read_text(encoding="utf-8") == '{"b":[1,2]}'
    assert [p.name for p in path.parent.iterdir()] == ["facts.json"]  # no temporary left


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.mkdir()  # os.replace cannot put a file over a folder
    with pytest.raises(OSError):
        state_file.write_text(path, "model = 'x'\n")
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]
    assert path.is_dir()


def test_without_parents_a_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        state_file.write_text(tmp_path / "nowhere" / "x.json", "{}")


def test_writers_at_once_never_share_a_temporary(tmp_path: Path) -> None:
    path = tmp_path / "trust.json"
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for _ in range(20):
                state_file.write_json(path, {"writer": n, "pad": "x" * 10_000}, durable=False)
        except BaseException as exc:  # pragma: no cover - what the test looks for
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert json.loads(path.read_text(encoding="utf-8"))["writer"] in range(4)
    assert [p.name for p in tmp_path.iterdir()] == ["trust.json"]
