"""Every relative link in the README, docs/ and the clients' pages resolves: the file (or
folder) exists, and a `#fragment` names a heading of the page it points to (GitHub's
anchors). Links inside code (fenced blocks, `inline code`) are not links; http(s) and mailto
links are not checked (no network in the tests)."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The front door, the docs, and each client's own page.
PAGES = sorted(
    [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "clients").glob("*/README.md"),
     *(ROOT / "clients").glob("*/CHANGELOG.md")]
)

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1[ \t]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.DOTALL)
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.MULTILINE)
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)


def prose(text: str) -> str:
    """The text without code: fenced blocks and code spans blanked (same length elsewhere)."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return CODE_SPAN.sub("", text)


def links(text: str) -> list[str]:
    body = prose(text)
    return INLINE.findall(body) + DEFINITION.findall(body)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text (links' words, code without backticks),
    lower-cased, punctuation dropped except '-' and '_', spaces to '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)
    keep = []
    for ch in text.lower():
        if ch in " -_" or unicodedata.category(ch)[0] in "LNM":
            keep.append(ch)
    return "".join(keep).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found: set[str] = set(HTML_ANCHOR.findall(text))
    seen: dict[str, int] = {}
    for _, heading in HEADING.findall(text):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def broken(page: Path, root: Path = ROOT) -> list[str]:
    """What is wrong with `page`'s relative links, one line each (paths relative to root)."""
    out = []
    for target in links(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, flags=re.IGNORECASE):
            continue  # http:, https:, mailto: …
        path_part, _, fragment = target.partition("#")
        dest = (page.parent / unquote(path_part)).resolve() if path_part else page
        if not dest.exists():
            shown = dest.relative_to(root) if dest.is_relative_to(root) else dest
            out.append(f"{target}: no {shown}")
            continue
        if fragment and dest.suffix == ".md" and unquote(fragment).lower() not in anchors(dest):
            out.append(f"{target}: no heading #{fragment} in {dest.relative_to(root)}")
    return out


def test_pages_are_found() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in PAGES}
    assert {"README.md", "docs/ARCHITECTURE.md", "clients/vscode/README.md",
            "clients/neovim/README.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(page: Path) -> None:
    assert broken(page) == []


def test_the_checker_catches_what_it_should(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "A.md").write_text(
        "# Title\n\n## In the editor: `agentls serve`\n\n## Two\n## Two\n")
    page = tmp_path / "README.md"
    page.write_text(
        "[ok](docs/A.md) [ok](docs/A.md#in-the-editor-agentls-serve) [ok](docs/A.md#two-1)\n"
        "[ok](#here) ![ok](docs) [web](https://example.com/x.md) `[code](gone.md)`\n"
        "```\n[fenced](gone.md)\n```\n"
        "## Here\n"
        "[bad](docs/B.md) [bad](docs/A.md#nowhere) [bad](#there)\n"
        "[ref]: docs/C.md\n"
    )
    found = broken(page, root=tmp_path)
    assert [f.split(":")[0] for f in found] == [
        "docs/B.md", "docs/A.md#nowhere", "#there", "docs/C.md"]
