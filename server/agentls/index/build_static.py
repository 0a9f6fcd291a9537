"""Build the static model into the package at install time: ``python -m
agentls.index.build_static`` (``make install`` runs it), so a fresh installation's
``index.embeddings = auto`` searches by meaning without the minutes of distillation on first
use. The model lands in ``static_model/`` beside this file (package data: a wheel built
afterwards ships it). Nothing happens when it is already there."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from agentls.index.embedding import (
    SHIPPED_STATIC_DIR,
    EmbeddingError,
    distil_static,
    static_model_built,
)


def folder_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentls.index.build_static",
                                     description=__doc__)
    parser.add_argument("target", nargs="?", type=Path, default=SHIPPED_STATIC_DIR,
                        help="folder to build into (default: the package's static_model/)")
    args = parser.parse_args(argv)
    target: Path = args.target
    if static_model_built(target):
        print(f"static model already built: {target} ({folder_mb(target):.1f} MB)")
        return 0
    start = time.perf_counter()
    try:
        distil_static(target)
    except EmbeddingError as exc:
        print(f"cannot build the static model: {exc}", file=sys.stderr)
        return 1
    print(f"static model built in {time.perf_counter() - start:.0f} s: {target} "
          f"({folder_mb(target):.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
