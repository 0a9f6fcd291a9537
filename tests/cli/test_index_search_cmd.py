"""`agentls index` and `agentls search` as a person runs them (keywords only here; the
vector path is covered in tests/unit/index and tests/engine)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.cli.headless_helpers import agentls


def env() -> dict[str, str]:
    return {**os.environ, "AGENTLS_INDEX__EMBEDDINGS": "none"}


def test_index_status_search(tmp_path: Path) -> None:
    (tmp_path / "net.py").write_text("def retryRateLimit(call):\n    return call()\n")
    (tmp_path / ".gitignore").write_text("secret.py\n")
    (tmp_path / "secret.py").write_text("def rate_limit_secret(): pass\n")

    built = agentls("-C", str(tmp_path), "index", env=env())
    assert built.returncode == 0, built.stderr
    assert "indexed 2 files" in built.stdout and "provider none" in built.stdout

    status = agentls("-C", str(tmp_path), "index", "--status", "--json", env=env())
    report = json.loads(status.stdout)
    assert report["files"] == 2 and report["provider"] == "none"

    found = agentls("-C", str(tmp_path), "search", "where do we retry rate limits", "--json",
                    env=env())
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)
    assert result["mode"] == "bm25"
    assert [(h["path"], h["symbol"]) for h in result["results"]] == [("net.py",
                                                                      "retryRateLimit")]
    text = agentls("-C", str(tmp_path), "search", "rate limit", env=env())
    assert "net.py:1-2" in text.stdout and "retryRateLimit" in text.stdout

    rebuilt = agentls("-C", str(tmp_path), "index", "--rebuild", env=env())
    assert rebuilt.returncode == 0 and "2 files read" in rebuilt.stdout


def test_bad_top_k_is_a_usage_error(tmp_path: Path) -> None:
    done = agentls("-C", str(tmp_path), "search", "x", "-k", "0", env=env())
    assert done.returncode == 64 and "--top-k" in done.stderr
