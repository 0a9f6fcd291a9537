"""Build the static model into the package at install time: ``python -m
agentls.index.build_static`` (``make install`` runs it every time), so a fresh installation's
``index.embeddings = auto`` searches by meaning without minutes of building on first use.
The model (distilled, then trained on code: ``static_training.py``) lands in
``static_model/`` beside this file (package data: a wheel built afterwards ships it).
Nothing happens when a model of this recipe is already there (its marker file); a model of
an older recipe is rebuilt."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from agentls.index.embedding import (
    EXTRA_HINT,
    SHIPPED_STATIC_DIR,
    STATIC_RECIPE,
    EmbeddingError,
    minilm_path,
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
    if (target / "model.safetensors").exists():
        print(f"rebuilding the static model (another recipe was built): {STATIC_RECIPE}")
    start = time.perf_counter()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything loads from site-packages
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from agentls.index.static_training import build_trained_model

        losses = build_trained_model(target, minilm_path())
    except EmbeddingError as exc:
        print(f"cannot build the static model: {exc}", file=sys.stderr)
        return 1
    except ImportError as exc:
        print(f"cannot build the static model: {exc}; {EXTRA_HINT}", file=sys.stderr)
        return 1
    print(f"training loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    print(f"static model built in {time.perf_counter() - start:.0f} s: {target} "
          f"({folder_mb(target):.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
