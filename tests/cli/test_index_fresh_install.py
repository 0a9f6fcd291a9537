"""Meaning search on a fresh install (issue 30, item 5): a new user (empty HOME: nothing in
the user cache, no settings) runs the real `agentls index` and `agentls search` with the
default `index.embeddings = auto`, and finds the function that makes thumbnails for "shrink a
picture to a small preview" (no word shared): `auto` uses the static model `make install`
built into the package, not keywords only."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests.cli.headless_helpers import agentls

import agentls.index as semantic_package
from agentls.index.embedding import static_model_built

# Where `make install` builds the static model (build_static.py): package data.
SHIPPED_STATIC_DIR = Path(semantic_package.__file__).parent / "static_model"

FILES = {
    "media/images.py": (
        "from PIL import Image\n\n\n"
        "def make_thumbnail(path, size=128):\n"
        "    image = Image.open(path)\n"
        "    image.thumbnail((size, size))\n"
        "    return image\n"),
    "net/mail.py": (
        "import smtplib\n\n\n"
        "def send_welcome_email(address):\n"
        "    with smtplib.SMTP('localhost') as server:\n"
        "        server.sendmail('team@example.com', [address], 'Welcome!')\n"),
    "data/csv_tools.py": (
        "import csv\n\n\n"
        "def load_rows(path):\n"
        "    with open(path, newline='') as handle:\n"
        "        return list(csv.DictReader(handle))\n"),
    "auth/passwords.py": (
        "import hashlib\n\n\n"
        "def hash_secret(secret, salt):\n"
        "    return hashlib.pbkdf2_hmac('sha256', secret.encode(), salt, 200_000)\n"),
    "util/dates.py": (
        "import datetime\n\n\n"
        "def next_business_day(day):\n"
        "    day += datetime.timedelta(days=1)\n"
        "    while day.weekday() >= 5:\n"
        "        day += datetime.timedelta(days=1)\n"
        "    return day\n"),
}


def fresh_user(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLS_", "XDG_"))}
    return {**env, "HOME": str(home)}


def test_a_new_user_finds_code_by_meaning_with_the_defaults(tmp_path: Path) -> None:
    if not static_model_built(SHIPPED_STATIC_DIR):
        pytest.fail("the static model of this recipe is not built into the package: run "
                    "`make install` "
                    f"(it runs python -m agentls.index.build_static into "
                    f"{SHIPPED_STATIC_DIR})")
    project = tmp_path / "project"
    for name, text in FILES.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    env = fresh_user(tmp_path / "home")

    built = agentls("-C", str(project), "index", env=env)
    assert built.returncode == 0, built.stderr
    assert "provider static" in built.stdout, built.stdout
    assert "keywords only" not in built.stderr
    assert not (tmp_path / "home" / ".cache" / "agentls" / "models").exists()  # no distilling

    found = agentls("-C", str(project), "search", "shrink a picture to a small preview",
                    "--json", env=env)
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)
    assert result["mode"] == "hybrid", result
    # The default search loads no torch: no re-ranking model (opt-in, index.rerank = auto).
    assert result["reranked_by"] is None, result
    top = result["results"][0]
    assert (top["path"], top["symbol"]) == ("media/images.py", "make_thumbnail"), result
