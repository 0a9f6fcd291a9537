"""Tests for server/agentls/sandbox/git_config_mask.py: git configuration without credentials,
and which files git reads for a repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

from agentls.sandbox.git_config_mask import ConfigMasks, repository_configs, sanitise

TOKEN = "tok_0123456789abcdef"


def test_credentials_go_and_everything_else_stays() -> None:
    text = (
        "[core]\n\tabbrev = 9\n"
        f'[remote "origin"]\n\turl = https://me:{TOKEN}@example.com/r.git\n'
        f"\tpushurl = ssh://{TOKEN}@example.com/r.git\n\tfetch = +refs/heads/*:refs/remotes/o/*\n"
        f'[http "https://example.com/"]\n\textraHeader = Authorization: Bearer {TOKEN}\n'
        f"\tsslVerify = true\n"
        f'[url "https://{TOKEN}@example.com/"]\n\tinsteadOf = https://example.com/\n'
        f'[credential "https://example.com"]\n\thelper = store\n\tusername = {TOKEN}\n'
        f"[http]\n\textraheader = X: \\\n\t\t{TOKEN}\n\tpostBuffer = 1\n"
        f"[hub] oauthtoken = {TOKEN}\n"
        "[alias] st = status\n"
    )
    clean = sanitise(text)
    assert TOKEN not in clean
    assert "url = https://example.com/r.git" in clean and "ssh://example.com/r.git" in clean
    for kept in ("abbrev = 9", "sslVerify = true", "postBuffer = 1", "st = status",
                 "fetch = +refs/heads/*", '[url "https://example.com/"]'):
        assert kept in clean, kept
    assert "credential" not in clean and "helper" not in clean


def test_git_reads_the_sanitised_file_like_the_original(tmp_path: Path) -> None:
    original = tmp_path / "config"
    original.write_text(f"[remote \"o\"]\n\turl = https://u:{TOKEN}@h/r\n[core]\n\tabbrev = 7\n")
    masks = ConfigMasks()
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    (tmp_path / "repo" / ".git" / "config").write_text(original.read_text())
    [(copy, _)] = [b for b in masks.binds(tmp_path / "repo", lambda _: True)
                        if b[1].endswith(".git/config")]
    listed = subprocess.run(["git", "config", "--file", copy, "--list"], check=True,
                            capture_output=True, text=True).stdout
    assert listed.splitlines() == ["remote.o.url=https://h/r", "core.abbrev=7"]
    assert Path(copy).stat().st_mode & 0o777 == 0o444


def test_a_worktree_s_common_config_and_includes_are_found(tmp_path: Path) -> None:
    main = tmp_path / "main"
    subprocess.run(["git", "init", "-q", str(main)], check=True)
    subprocess.run(["git", "-C", str(main), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(tmp_path / "wt")],
                   check=True)
    (main / ".git" / "more.cfg").write_text("[include]\n\tpath = deeper.cfg\n")
    (main / ".git" / "deeper.cfg").write_text("[core]\n\tabbrev = 8\n")
    subprocess.run(["git", "-C", str(main), "config", "include.path", "more.cfg"], check=True)
    found = repository_configs(tmp_path / "wt")
    assert main / ".git" / "config" in found
    assert main / ".git" / "more.cfg" in found and main / ".git" / "deeper.cfg" in found
