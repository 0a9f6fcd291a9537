"""CI-like (issue 38): the MCP and sandbox tests pass in a fresh checkout under /tmp.

The sandbox mounts an empty /tmp, so a checkout there (what `mktemp -d` gives CI) hid the
test servers' scripts from the sandboxed servers and 18 MCP tests failed. This clones the
committed tree into a `mktemp -d` folder and runs those test files there, with the same
interpreter and the checkout's own code (PYTHONPATH), as CI would after `make install`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from agentls.sandbox.bwrap import probe

REPO = Path(__file__).resolve().parents[2]
FILES = ["tests/unit/tools/mcp_client/test_connection.py",
         "tests/unit/tools/mcp_client/test_hub.py",
         "tests/unit/tools/test_sandboxed_shell.py"]

pytestmark = pytest.mark.skipif(not probe().available, reason="no sandbox here")


def test_mcp_and_sandbox_tests_pass_in_a_checkout_under_tmp() -> None:
    git = shutil.which("git")
    if git is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    head = subprocess.run([git, "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    checkout = Path(tempfile.mkdtemp(prefix="agentls-ci-", dir="/tmp")) / "agentls"
    try:
        subprocess.run([git, "clone", "--quiet", "--no-checkout", str(REPO), str(checkout)],
                       check=True, timeout=120)
        subprocess.run([git, "-C", str(checkout), "checkout", "--quiet", head], check=True,
                       timeout=120)
        env = {**os.environ, "PYTHONPATH": str(checkout / "server")}
        env.pop("PYTEST_ADDOPTS", None)
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *FILES],
            cwd=checkout, env=env, capture_output=True, text=True, timeout=900, check=False)
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
        assert " passed" in done.stdout and "failed" not in done.stdout
        imported = subprocess.run(
            [sys.executable, "-c", "import agentls; print(agentls.__file__)"], cwd=checkout,
            env=env, capture_output=True, text=True, check=True).stdout
        assert imported.startswith(str(checkout))  # the checkout's code was the one tested
    finally:
        shutil.rmtree(checkout.parent, ignore_errors=True)
