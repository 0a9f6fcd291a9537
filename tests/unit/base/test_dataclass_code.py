"""The compiled methods of dataclasses kept across processes (agentls/base/dataclass_code.py).

Each process here is a real one: the cache is installed once per process and written at
its exit, which is what a second process then reads."""

from __future__ import annotations

import marshal
import subprocess
import sys
import textwrap
from pathlib import Path

from agentls.base import dataclass_code

# A frozen dataclass (six generated methods) and a plain one with a default factory; the
# script prints what the cache did and checks the classes behave as dataclasses do.
SCRIPT = textwrap.dedent("""
    import dataclasses, sys
    from pathlib import Path
    from agentls.base import dataclass_code

    dataclass_code.install(Path(sys.argv[1]))
    made_before = len(dataclass_code._new)

    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int
        y: int = 2

    @dataclasses.dataclass
    class Bag:
        items: list = dataclasses.field(default_factory=list)
        name: str = "bag"

    p = Point(1)
    assert p == Point(1, 2) and p != Point(1, 3)
    assert hash(p) == hash(Point(1, 2))
    assert repr(p) == "Point(x=1, y=2)"
    try:
        p.x = 5
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("a frozen dataclass accepted an assignment")
    a, b = Bag(), Bag()
    a.items.append(1)
    assert b.items == [] and repr(b) == "Bag(items=[], name='bag')"
    assert Point.__init__.__code__.co_filename == "<string>"
    print(len(dataclass_code._new) - made_before, len(dataclass_code._used))
""")


def _run(cache: Path) -> tuple[int, int]:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(cache)], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    compiled, used = done.stdout.split()
    return int(compiled), int(used)


def test_the_second_process_compiles_nothing_and_its_classes_behave_the_same(
        tmp_path: Path) -> None:
    cache = tmp_path / "code" / "dataclasses.marshal"
    compiled, used = _run(cache)
    assert compiled == used == 9  # Point: six methods; Bag: __init__, __repr__, __eq__
    assert len(dataclass_code.load(cache)) >= 9  # written at exit
    compiled, used = _run(cache)
    assert (compiled, used) == (0, 9)


def test_the_stored_code_is_what_exec_compiles_from_the_text(tmp_path: Path) -> None:
    cache = tmp_path / "dataclasses.marshal"
    _run(cache)
    for text, code in dataclass_code.load(cache).items():
        assert code == compile(text, "<string>", "exec", dont_inherit=True)


def test_a_damaged_or_foreign_file_is_not_used_and_is_replaced(tmp_path: Path) -> None:
    cache = tmp_path / "dataclasses.marshal"
    cache.write_bytes(b"\x00not marshal at all")
    assert dataclass_code.load(cache) == {}
    assert _run(cache)[0] == 9
    assert len(dataclass_code.load(cache)) == 9

    other_build = {text: code for text, code in dataclass_code.load(cache).items()}
    cache.write_bytes(marshal.dumps(("agentls dataclass code 1|another python", other_build)))
    assert dataclass_code.load(cache) == {}
    assert _run(cache)[0] == 9


def test_an_unwritable_cache_folder_costs_only_the_compilation(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be")
    assert _run(blocker / "dataclasses.marshal") == (9, 9)
    assert _run(blocker / "dataclasses.marshal") == (9, 9)


HELPER = "import dataclasses\n\n@dataclasses.dataclass\nclass Helper:\n    a: int = 1\n"
TWO_MODULES = textwrap.dedent("""
    import dataclasses, sys
    from pathlib import Path
    from agentls.base import dataclass_code

    dataclass_code.install(Path(sys.argv[1]))
    if sys.argv[2] == "both":
        sys.path.insert(0, str(Path(sys.argv[1]).parent))
        import helper
        assert helper.Helper() == helper.Helper(1)

    @dataclasses.dataclass
    class Own:
        b: int = 2

    print(" ".join(sorted(dataclass_code._codes)))
""")


def test_a_module_s_stored_code_is_decoded_only_when_it_makes_a_dataclass(
        tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text(HELPER)
    cache = tmp_path / "dataclasses.marshal"

    def run(which: str) -> str:
        done = subprocess.run([sys.executable, "-c", TWO_MODULES, str(cache), which],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert run("both") == "__main__ helper"
    assert set(dataclass_code.read_sections(cache)) == {"__main__", "helper"}
    assert run("own") == "__main__"  # helper's section stays marshalled
