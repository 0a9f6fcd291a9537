"""The workspace fence (DESIGN.md decision 2) and the overlay reads go through."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from agentls.workspace.changeset import ChangeSet
from agentls.workspace.fence import DEFAULT_DENY, FenceError, Workspace, WorkspacePath


def write(path: Path, text: str = "x\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A project with nested ignore files, secrets, and a neighbour outside it."""
    proj = tmp_path / "proj"
    write(proj / "README.md", "# proj\n")
    write(proj / "src" / "a.py", "print('a')\n")
    write(proj / "src" / "anchored.txt")
    write(proj / ".gitignore", "build/\n*.log\n!keep.log\n/anchored.txt\n*.dat\ncache/\ndist/\n")
    write(proj / "build" / "out.js")
    write(proj / "build" / "keep.js")  # can't be re-included: its folder is excluded
    write(proj / "app.log")
    write(proj / "keep.log")
    write(proj / "anchored.txt")
    write(proj / "x.dat")
    write(proj / "cache")  # a *file* named cache: "cache/" only matches folders
    write(proj / "data" / "cache" / "blob.bin")
    write(proj / "dist" / "app.js")
    write(proj / "pkg" / ".gitignore", "generated/\n*.tmp\n!important.tmp\n!keep.dat\n")
    write(proj / "pkg" / "mod.py")
    write(proj / "pkg" / "generated" / "x.py")
    write(proj / "pkg" / "a.tmp")
    write(proj / "pkg" / "important.tmp")
    write(proj / "pkg" / "keep.dat")
    write(proj / "pkg" / "other.dat")
    write(proj / ".agentlsignore", "secrets/\nnotes/private.md\n!dist/\n")
    write(proj / "secrets" / "plan.md")
    write(proj / "notes" / "private.md")
    write(proj / "notes" / "public.md")
    write(proj / ".git" / "config", "[core]\n")
    write(proj / ".env", "API_KEY=1\n")
    write(proj / ".env.local", "API_KEY=2\n")
    write(proj / "sub" / ".env", "API_KEY=3\n")
    write(proj / "tls" / "server.pem")
    write(proj / "tls" / "server.key")
    write(proj / "id_rsa")
    write(proj / "id_rsa.pub")
    write(proj / ".agentls" / "state.db")
    write(tmp_path / "outside.txt", "secret outside\n")
    write(tmp_path / "outside_dir" / "secret.txt", "secret outside\n")
    write(tmp_path / "proj2" / "sibling.txt")  # shares the string prefix "proj"
    return proj


@pytest.fixture
def ws(root: Path) -> Workspace:
    return Workspace([root])


def refused(ws: Workspace, path: str) -> FenceError:
    with pytest.raises(FenceError) as info:
        ws.resolve(path)
    return info.value


# -- allowed paths ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "rel"),
    [
        ("src/a.py", "src/a.py"),
        ("./src/./a.py", "src/a.py"),
        ("src/../README.md", "README.md"),
        ("src\\a.py", "src/a.py"),  # Windows separators are separators
        (".\\src\\a.py", "src/a.py"),
        ("", "."),
        (".", "."),
        ("  src/a.py\n", "src/a.py"),  # stray whitespace from the model
        ("keep.log", "keep.log"),  # negation re-includes
        ("src/anchored.txt", "src/anchored.txt"),  # "/anchored.txt" only anchors at the root
        ("cache", "cache"),  # "cache/" matches folders only
        ("pkg/important.tmp", "pkg/important.tmp"),  # nested negation
        ("pkg/keep.dat", "pkg/keep.dat"),  # nested file re-includes what the root excluded
        ("dist/app.js", "dist/app.js"),  # .agentlsignore "!dist/" beats .gitignore
        ("notes/public.md", "notes/public.md"),
        (".gitignore", ".gitignore"),
        ("src/new_file.py", "src/new_file.py"),  # need not exist yet
        ("new_dir/deep/file.py", "new_dir/deep/file.py"),
    ],
)
def test_allowed(ws: Workspace, root: Path, path: str, rel: str) -> None:
    wp = ws.resolve(path)
    assert wp.rel == rel
    assert wp.root == root.resolve()
    assert wp.abs == (root / rel).resolve()
    assert wp.display == rel
    assert ws.is_visible(root / rel)


def test_absolute_path_inside_is_allowed(ws: Workspace, root: Path) -> None:
    wp = ws.resolve(str(root / "src" / "a.py"))
    assert wp.rel == "src/a.py"


def test_file_uri_is_accepted(ws: Workspace, root: Path) -> None:
    assert ws.resolve((root / "src" / "a.py").as_uri()).rel == "src/a.py"


# -- refused paths ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("../outside.txt", "OUTSIDE_WORKSPACE"),
        ("src/../../outside.txt", "OUTSIDE_WORKSPACE"),
        ("src/../../../../../../etc/passwd", "OUTSIDE_WORKSPACE"),
        ("..", "OUTSIDE_WORKSPACE"),
        ("/etc/passwd", "OUTSIDE_WORKSPACE"),
        ("..\\outside.txt", "OUTSIDE_WORKSPACE"),
        ("src\\..\\..\\outside.txt", "OUTSIDE_WORKSPACE"),
        ("C:\\Windows\\system.ini", "OUTSIDE_WORKSPACE"),
        ("\\\\server\\share\\x.txt", "OUTSIDE_WORKSPACE"),
        ("~/.ssh/id_rsa", "OUTSIDE_WORKSPACE"),
        ("src/a.py\x00.txt", "INVALID_PATH"),
        ("\x00", "INVALID_PATH"),
        ("build/out.js", "IGNORED"),  # directory pattern
        ("build", "IGNORED"),
        ("build/keep.js", "IGNORED"),
        ("build/new.js", "IGNORED"),  # not yet existing, still ignored
        ("app.log", "IGNORED"),
        ("src/deep/debug.log", "IGNORED"),
        ("anchored.txt", "IGNORED"),  # anchored pattern
        ("x.dat", "IGNORED"),
        ("pkg/other.dat", "IGNORED"),  # root pattern applies in pkg/
        ("data/cache/blob.bin", "IGNORED"),  # "cache/" at any depth
        ("pkg/generated/x.py", "IGNORED"),  # nested .gitignore, relative to pkg/
        ("pkg/a.tmp", "IGNORED"),
        ("secrets/plan.md", "IGNORED"),  # .agentlsignore
        ("notes/private.md", "IGNORED"),
        (".git/config", "DENIED"),
        (".git", "DENIED"),
        (".git/hooks/pre-commit", "DENIED"),
        (".env", "DENIED"),
        (".env.local", "DENIED"),
        (".env.production", "DENIED"),
        ("sub/.env", "DENIED"),
        ("tls/server.pem", "DENIED"),
        ("tls/server.key", "DENIED"),
        ("id_rsa", "DENIED"),
        ("id_rsa.pub", "DENIED"),
        (".agentls/state.db", "DENIED"),
        (".agentls", "DENIED"),
        # Case variants of secrets are refused even on a case-sensitive filesystem.
        (".ENV", "DENIED"),
        (".Env.Local", "DENIED"),
        (".Git/config", "DENIED"),
        (".GIT/HEAD", "DENIED"),
        ("tls/SERVER.PEM", "DENIED"),
        ("ID_RSA", "DENIED"),
        (".AgentLS/state.db", "DENIED"),
        (".git\\config", "DENIED"),
    ],
)
def test_refused(ws: Workspace, root: Path, path: str, code: str) -> None:
    err = refused(ws, path)
    assert err.code == code
    assert err.message == str(err)
    if "\x00" not in path:
        assert path.strip() in err.message or repr(path) in err.message
    if code in ("IGNORED", "DENIED") or path.startswith(".."):
        lexical = Path(os.path.normpath(root / path.replace("\\", "/")))
        assert not ws.is_visible(lexical)


def test_case_variant_secret_files_on_disk_are_refused(ws: Workspace, root: Path) -> None:
    write(root / ".ENV", "API_KEY=shout\n")
    write(root / ".Git" / "config")
    assert refused(ws, ".ENV").code == "DENIED"
    assert not ws.is_visible(root / ".ENV")
    assert not ws.is_visible(root / ".Git" / "config")


def test_gitignore_matching_is_case_sensitive_like_git(ws: Workspace, root: Path) -> None:
    write(root / "BUILD" / "x.js")
    assert ws.resolve("BUILD/x.js").rel == "BUILD/x.js"


def test_absolute_path_outside(ws: Workspace, root: Path) -> None:
    err = refused(ws, str(root.parent / "outside.txt"))
    assert err.code == "OUTSIDE_WORKSPACE"
    assert "relative to the workspace root" in err.message


def test_sibling_folder_sharing_the_root_prefix_is_outside(ws: Workspace, root: Path) -> None:
    assert refused(ws, str(root.parent / "proj2" / "sibling.txt")).code == "OUTSIDE_WORKSPACE"
    assert refused(ws, "../proj2/sibling.txt").code == "OUTSIDE_WORKSPACE"


def test_dot_dot_that_comes_back_inside_is_allowed(ws: Workspace, root: Path) -> None:
    assert ws.resolve("../proj/src/a.py").rel == "src/a.py"


# -- symlinks -------------------------------------------------------------------------------


def test_symlinked_file_pointing_outside(ws: Workspace, root: Path) -> None:
    (root / "link.txt").symlink_to(root.parent / "outside.txt")
    err = refused(ws, "link.txt")
    assert err.code == "OUTSIDE_WORKSPACE"
    assert "symlink" in err.message
    assert not ws.is_visible(root / "link.txt")


def test_symlinked_directory_pointing_outside(ws: Workspace, root: Path) -> None:
    (root / "ext").symlink_to(root.parent / "outside_dir", target_is_directory=True)
    assert refused(ws, "ext/secret.txt").code == "OUTSIDE_WORKSPACE"
    assert refused(ws, "ext").code == "OUTSIDE_WORKSPACE"
    assert refused(ws, "ext/new.txt").code == "OUTSIDE_WORKSPACE"  # writes can't escape either
    assert not ws.is_visible(root / "ext" / "secret.txt")


def test_dangling_symlink_pointing_outside(ws: Workspace, root: Path) -> None:
    (root / "dangling").symlink_to(root.parent / "not_there.txt")
    assert refused(ws, "dangling").code == "OUTSIDE_WORKSPACE"


def test_symlink_to_dev_null_is_refused(ws: Workspace, root: Path) -> None:
    (root / "null").symlink_to("/dev/null")
    assert refused(ws, "null").code == "OUTSIDE_WORKSPACE"


def test_symlinked_file_inside_is_allowed_and_resolves_to_target(ws: Workspace, root: Path) -> None:
    (root / "alias.py").symlink_to(root / "src" / "a.py")
    wp = ws.resolve("alias.py")
    assert wp.rel == "src/a.py"
    assert ws.read_text(wp) == "print('a')\n"


def test_symlinked_directory_inside_is_allowed(ws: Workspace, root: Path) -> None:
    (root / "lib").symlink_to(root / "src", target_is_directory=True)
    assert ws.resolve("lib/a.py").rel == "src/a.py"
    assert ws.is_visible(root / "lib" / "a.py")


def test_symlink_to_a_secret_is_refused(ws: Workspace, root: Path) -> None:
    (root / "notes.txt").symlink_to(root / ".env")
    assert refused(ws, "notes.txt").code == "DENIED"
    (root / "out_link").symlink_to(root / "build", target_is_directory=True)
    assert refused(ws, "out_link/out.js").code == "IGNORED"


def test_secret_name_pointing_at_a_harmless_file_is_still_refused(
    ws: Workspace, root: Path
) -> None:
    (root / "sub" / "id_rsa_link").symlink_to(root / "README.md")
    assert refused(ws, "sub/id_rsa_link").code == "DENIED"


def test_symlink_loop(ws: Workspace, root: Path) -> None:
    (root / "loop_a").symlink_to(root / "loop_b")
    (root / "loop_b").symlink_to(root / "loop_a")
    assert refused(ws, "loop_a").code == "INVALID_PATH"


def test_root_given_through_a_symlink(root: Path, tmp_path: Path) -> None:
    alias = tmp_path / "alias_root"
    alias.symlink_to(root, target_is_directory=True)
    ws = Workspace([alias])
    assert ws.roots == (root.resolve(),)
    assert ws.resolve(str(alias / "src" / "a.py")).rel == "src/a.py"
    assert refused(ws, str(alias / ".env")).code == "DENIED"


# -- special files ---------------------------------------------------------------------------


def test_fifo_is_not_a_file(ws: Workspace, root: Path) -> None:
    os.mkfifo(root / "pipe")
    err = refused(ws, "pipe")
    assert err.code == "NOT_A_FILE"
    assert "FIFO" in err.message
    assert not ws.is_visible(root / "pipe")


def test_device_file_inside_workspace_is_not_a_file(ws: Workspace, root: Path) -> None:
    null = os.stat("/dev/null")
    try:
        os.mknod(root / "devnull", 0o666 | (null.st_mode & 0o170000), null.st_rdev)
    except PermissionError:
        pytest.skip("creating a device node needs privileges")
    assert refused(ws, "devnull").code == "NOT_A_FILE"


# -- several roots ----------------------------------------------------------------------------


@pytest.fixture
def two_roots(root: Path, tmp_path: Path) -> tuple[Workspace, Path]:
    lib = tmp_path / "lib"
    write(lib / "util.py", "def f(): ...\n")
    write(lib / ".gitignore", "*.gen\n")
    write(lib / "x.gen")
    write(lib / ".env")
    return Workspace([root, lib]), lib


def test_multiple_roots_select_by_folder_name(two_roots: tuple[Workspace, Path]) -> None:
    ws, lib = two_roots
    wp = ws.resolve("lib/util.py")
    assert (wp.root, wp.rel, wp.display) == (lib.resolve(), "util.py", "lib/util.py")
    assert ws.resolve("proj/src/a.py").display == "proj/src/a.py"
    assert ws.resolve("lib").display == "lib"


def test_multiple_roots_relative_path_uses_first_root(
    two_roots: tuple[Workspace, Path], root: Path
) -> None:
    ws, _ = two_roots
    wp = ws.resolve("src/a.py")
    assert wp.root == root.resolve()
    assert wp.display == "proj/src/a.py"


def test_multiple_roots_absolute_path_in_second_root(two_roots: tuple[Workspace, Path]) -> None:
    ws, lib = two_roots
    assert ws.resolve(str(lib / "util.py")).display == "lib/util.py"


def test_multiple_roots_each_has_its_own_fence(two_roots: tuple[Workspace, Path]) -> None:
    ws, lib = two_roots
    assert refused(ws, "lib/x.gen").code == "IGNORED"
    assert refused(ws, "lib/.env").code == "DENIED"
    assert refused(ws, "lib/../outside.txt").code == "OUTSIDE_WORKSPACE"
    assert not ws.is_visible(lib / "x.gen")
    assert ws.resolve("lib/../proj/src/a.py").display == "proj/src/a.py"  # '..' into a root


def test_symlink_from_one_root_into_another_is_allowed(
    two_roots: tuple[Workspace, Path], root: Path
) -> None:
    ws, lib = two_roots
    (root / "shared").symlink_to(lib, target_is_directory=True)
    wp = ws.resolve("shared/util.py")
    assert wp.display == "lib/util.py"
    assert refused(ws, "shared/x.gen").code == "IGNORED"


# -- ignore rules: configuration and freshness -----------------------------------------------


def test_custom_deny_list_replaces_the_default(root: Path) -> None:
    ws = Workspace([root], deny=("*.secret", "!public.secret"))
    assert ws.resolve(".env").rel == ".env"
    write(root / "a.secret")
    write(root / "public.secret")
    assert refused(ws, "a.secret").code == "DENIED"
    assert refused(ws, "A.SECRET").code == "DENIED"
    assert ws.resolve("public.secret").rel == "public.secret"
    assert ws.deny == ("*.secret", "!public.secret")
    assert ".env" in DEFAULT_DENY


def test_edited_gitignore_is_picked_up(ws: Workspace, root: Path) -> None:
    assert ws.is_visible(root / "README.md")
    write(root / ".gitignore", (root / ".gitignore").read_text() + "README.md\n")
    assert not ws.is_visible(root / "README.md")
    err = refused(ws, "README.md")
    assert err.code == "IGNORED"
    assert ".gitignore" in err.message and "README.md" in err.message


def test_new_nested_gitignore_is_picked_up(ws: Workspace, root: Path) -> None:
    assert ws.is_visible(root / "src" / "a.py")
    write(root / "src" / ".gitignore", "a.py\n")
    err = refused(ws, "src/a.py")
    assert err.code == "IGNORED"
    assert "src/.gitignore" in err.message


def test_ignored_message_tells_the_model_what_to_do(ws: Workspace) -> None:
    err = refused(ws, "pkg/generated/x.py")
    assert "pkg/.gitignore" in err.message
    assert "'generated/'" in err.message


def test_denied_message_names_the_pattern(ws: Workspace) -> None:
    err = refused(ws, ".env.local")
    assert "'.env.*'" in err.message
    assert "deny list" in err.message


def test_gitignore_that_is_a_fifo_does_not_hang(tmp_path: Path) -> None:
    proj = tmp_path / "p"
    write(proj / "a.py")
    os.mkfifo(proj / ".gitignore")
    ws = Workspace([proj])
    assert ws.resolve("a.py").rel == "a.py"


def test_root_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a directory"):
        Workspace([tmp_path / "missing"])
    with pytest.raises(ValueError):
        Workspace([])


def test_non_string_path_is_invalid(ws: Workspace) -> None:
    with pytest.raises(FenceError) as info:
        ws.resolve(42)  # type: ignore[arg-type]
    assert info.value.code == "INVALID_PATH"


def test_workspace_path_display_single_root() -> None:
    wp = WorkspacePath(Path("/r"), Path("/r/a/b.py"), "a/b.py")
    assert wp.display == "a/b.py"
    assert WorkspacePath(Path("/r"), Path("/r/a"), "a", "r").display == "r/a"


# -- the overlay ---------------------------------------------------------------------------


def test_read_text_is_exact(ws: Workspace, root: Path) -> None:
    (root / "crlf.txt").write_bytes(b"one\r\ntwo\r\nno newline")
    assert ws.read_text(ws.resolve("crlf.txt")) == "one\r\ntwo\r\nno newline"


def test_undecodable_bytes_round_trip(ws: Workspace, root: Path) -> None:
    raw = b"caf\xe9 ok\n"
    (root / "latin1.txt").write_bytes(raw)
    wp = ws.resolve("latin1.txt")
    assert ws.read_bytes(wp) == raw
    ws.stage_write(wp, ws.read_text(wp) + "more\n")
    assert ws.read_bytes(wp) == raw + b"more\n"


def test_reads_prefer_changeset_then_open_document_then_disk(ws: Workspace, root: Path) -> None:
    wp = ws.resolve("src/a.py")
    assert ws.read_text(wp) == "print('a')\n"
    ws.open_document(root / "src" / "a.py", "print('buffer')\n", 7)
    assert ws.read_text(wp) == "print('buffer')\n"
    assert ws.document(wp.abs) == ("print('buffer')\n", 7)
    ws.stage_write(wp, "print('pending')\n")
    assert ws.read_text(wp) == "print('pending')\n"
    assert ws.read_bytes(wp) == b"print('pending')\n"
    ws.changeset.clear()
    ws.close_document(wp.abs)
    assert ws.document(wp.abs) is None
    assert ws.read_text(wp) == "print('a')\n"


def test_open_document_through_a_symlinked_path(ws: Workspace, root: Path) -> None:
    (root / "lib").symlink_to(root / "src", target_is_directory=True)
    ws.open_document(root / "lib" / "a.py", "buffer\n", 1)
    assert ws.read_text(ws.resolve("src/a.py")) == "buffer\n"


def test_missing_file(ws: Workspace) -> None:
    wp = ws.resolve("src/missing.py")
    assert not ws.exists(wp)
    with pytest.raises(FenceError) as info:
        ws.read_text(wp)
    assert info.value.code == "NOT_FOUND"
    assert "list_files" in info.value.message


def test_missing_file_with_root_name_prefix_gets_a_hint(ws: Workspace) -> None:
    with pytest.raises(FenceError) as info:
        ws.read_text(ws.resolve("proj/src/a.py"))
    assert "'src/a.py'" in info.value.message


def test_directory_is_not_readable(ws: Workspace) -> None:
    wp = ws.resolve("src")
    assert ws.is_dir(wp) and ws.exists(wp)
    with pytest.raises(FenceError) as info:
        ws.read_text(wp)
    assert info.value.code == "IS_A_DIRECTORY"


def test_overlay_deleted_and_created(ws: Workspace) -> None:
    old = ws.resolve("src/a.py")
    ws.stage_delete(old)
    assert not ws.exists(old)
    with pytest.raises(FenceError) as info:
        ws.read_text(old)
    assert info.value.code == "NOT_FOUND"
    assert "deleted" in info.value.message

    new = ws.resolve("fresh/dir/new.py")
    assert ws.stage_write(new, "x = 1\n") == "create"
    assert ws.exists(new) and not ws.is_dir(new)
    assert ws.read_text(new) == "x = 1\n"
    folder = ws.resolve("fresh/dir")
    assert ws.exists(folder) and ws.is_dir(folder)


def test_stage_rename(ws: Workspace) -> None:
    src, dst = ws.resolve("src/a.py"), ws.resolve("src/b.py")
    ws.stage_rename(src, dst)
    assert not ws.exists(src)
    assert ws.read_text(dst) == "print('a')\n"
    with pytest.raises(FenceError) as info:
        ws.stage_rename(dst, ws.resolve("README.md"))
    assert info.value.code == "ALREADY_EXISTS"


def test_stage_write_under_a_file_is_refused(ws: Workspace) -> None:
    with pytest.raises(FenceError) as info:
        ws.stage_write(ws.resolve("README.md/x.py"), "")
    assert info.value.code == "INVALID_PATH"
    assert "'README.md' is a file" in info.value.message


def test_base_of(ws: Workspace, root: Path) -> None:
    wp = ws.resolve("src/a.py")
    base = ws.base_of(wp)
    assert base.kind == "sha256"
    assert base.sha256 == hashlib.sha256(b"print('a')\n").hexdigest()
    assert base.text == "print('a')\n"

    ws.open_document(wp.abs, "print('buffer')\n", 3)
    base = ws.base_of(wp)
    assert (base.kind, base.version, base.text) == ("version", 3, "print('buffer')\n")
    assert base.sha256 == hashlib.sha256(b"print('a')\n").hexdigest()

    assert ws.base_of(ws.resolve("src/nope.py")).kind == "absent"


def test_base_is_the_first_one_read(ws: Workspace, root: Path) -> None:
    wp = ws.resolve("src/a.py")
    ws.stage_write(wp, "one\n")
    write(root / "src" / "a.py", "changed underneath\n")
    ws.stage_write(wp, "two\n")
    assert ws.base_of(wp).text == "print('a')\n"


def test_shared_changeset(root: Path) -> None:
    cs = ChangeSet()
    ws = Workspace([root], changeset=cs)
    ws.stage_write(ws.resolve("src/a.py"), "y\n")
    assert ws.changeset is cs
    assert cs.current_text(root.resolve() / "src" / "a.py") == "y\n"


def test_display_path(two_roots: tuple[Workspace, Path], root: Path) -> None:
    ws, lib = two_roots
    assert ws.display_path(lib / "util.py") == "lib/util.py"
    assert ws.display_path(root / "src" / "a.py") == "proj/src/a.py"
    assert ws.display_path(Path("/elsewhere/x")) == "/elsewhere/x"


def test_is_visible_over_a_tree_matches_resolve(ws: Workspace, root: Path) -> None:
    """list/search re-check every entry with is_visible; it must agree with resolve."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            try:
                ws.resolve(str(path))
                expected = True
            except FenceError:
                expected = False
            assert ws.is_visible(path) is expected, path


# -- listing big trees -----------------------------------------------------------------------


def _entries(folder: Path) -> list[tuple[str, os.DirEntry[str]]]:
    """Every entry under ``folder`` (not following symlinks), with its folder's path."""
    found = []
    with os.scandir(folder) as scan:
        for entry in scan:
            found.append((str(folder), entry))
            if entry.is_dir(follow_symlinks=False):
                found += _entries(Path(entry.path))
    return found


def test_the_listing_check_of_an_entry_agrees_with_the_full_check(root: Path,
                                                                  tmp_path: Path) -> None:
    """``is_visible_entry`` (no realpath, no stat) answers as ``is_visible`` does for every
    kind of entry: ignored, denied, re-included, symlinks in and out, a loop, a FIFO, and a
    second root nested in the first."""
    os.mkfifo(root / "pipe")
    (root / "link_in.py").symlink_to(root / "src" / "a.py")
    (root / "link_out.txt").symlink_to(tmp_path / "outside.txt")
    (root / "link_secret").symlink_to(root / ".env")
    (root / "link_dir").symlink_to(root / "src", target_is_directory=True)
    (root / "dangling").symlink_to(tmp_path / "missing")
    (root / "loop").symlink_to(root / "loop")
    nested = root / "vendor" / "lib"
    write(nested / ".gitignore", "*.gen\n")
    write(nested / "x.gen")
    write(nested / "ok.py")
    for ws in (Workspace([root]), Workspace([root, nested])):
        entries = _entries(root)
        assert len(entries) > 50
        disagree = [entry.path for folder, entry in entries
                    if ws.is_visible_entry(folder, entry) != ws.is_visible(Path(entry.path))]
        assert disagree == []
    assert not Workspace([root, nested]).is_visible(nested / "x.gen")  # the nested root's rule
    ws = Workspace([root])
    with ws.listing():  # each ignore file stat-ed once: the same answers
        assert [ws.is_visible_entry(f, e) for f, e in entries] == \
            [ws.is_visible(Path(e.path)) for _, e in entries]


def test_a_listing_reads_ignore_files_once_and_only_in_its_own_thread(ws: Workspace,
                                                                      root: Path) -> None:
    """Inside ``listing()`` an ignore file edited mid-walk is not stat-ed again (git reads
    them once per command); other threads, and this one after the block, see the edit."""
    readme = root / "README.md"
    assert ws.is_visible(readme)
    seen_elsewhere: list[bool] = []
    with ws.listing():
        assert ws.is_visible(readme)
        write(root / ".gitignore", (root / ".gitignore").read_text() + "README.md\n")
        with ws.listing():  # nested: still the same snapshot
            assert ws.is_visible(readme)
        worker = threading.Thread(target=lambda: seen_elsewhere.append(ws.is_visible(readme)))
        worker.start()
        worker.join()
    assert seen_elsewhere == [False]
    assert not ws.is_visible(readme)
    with ws.listing():
        assert not ws.is_visible(readme)
