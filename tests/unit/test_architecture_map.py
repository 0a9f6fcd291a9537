"""docs/ARCHITECTURE.md is the one map: every module under server/agentls is named on it by
its path inside the package (`engine/loop/agent.py`), so a new module cannot be left off."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "server" / "agentls"
MAP = REPO / "docs" / "ARCHITECTURE.md"


def modules() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        # a package's __init__ with nothing but a one-line docstring is the package, not a module
        if path.name == "__init__.py" and len(path.read_text(encoding="utf-8").splitlines()) <= 1:
            continue
        found.append(path.relative_to(PACKAGE).as_posix())
    return found


def test_every_module_is_on_the_map() -> None:
    text = MAP.read_text(encoding="utf-8")
    missing = [m for m in modules() if f"`{m}`" not in text]
    assert missing == [], ("put these on docs/ARCHITECTURE.md (the table of their package, "
                           "one line: what the module is): " + ", ".join(missing))


def test_the_map_names_no_module_that_is_gone() -> None:
    text = MAP.read_text(encoding="utf-8")
    table = text[text.index("## Every module"):]
    named = [line.split("`")[1] for line in table.splitlines() if line.startswith("| `")]
    gone = [m for m in named if not (PACKAGE / m).is_file()]
    assert gone == [], "these are on the map but not in server/agentls: " + ", ".join(gone)


# The same file name in two packages is the same role per front door (lsp, acp, cli, the
# scripted model's server): its frontend, its wire, its main, its request handlers.
SAME_ROLE = {"frontend.py", "wire.py", "main.py", "handlers.py"}


def test_no_two_modules_share_a_file_name_for_different_things() -> None:
    seen: dict[str, list[str]] = {}
    for module in modules():
        name = module.rsplit("/", 1)[-1]
        if name != "__init__.py":
            seen.setdefault(name, []).append(module)
    shared = {name: paths for name, paths in seen.items()
              if len(paths) > 1 and name not in SAME_ROLE}
    assert shared == {}, ("one name, different things: name each module for what it is "
                          f"(or say it is the same role per front door): {shared}")
