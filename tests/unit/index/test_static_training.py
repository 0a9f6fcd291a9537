"""The static model's trainer (index/static_training.py): its corpus, its training, its PCA,
the recipe marker that makes an install rebuild a model of another recipe. Small and fast:
torch is in the dev environment; the teacher and the distillation are not run here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agentls.index import build_static
from agentls.index.embedding import (
    RECIPE_MARKER,
    STATIC_RECIPE,
    StaticEmbedder,
    static_model_built,
    write_recipe_marker,
)
from agentls.index.static_training import (
    Recipe,
    corpus_files,
    corpus_texts,
    docstrings,
    loss_of,
    pca,
    replace_folder,
    train,
    zipf_weights,
)

pytest.importorskip("torch")


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


LIBRARY = {
    "shelf/queue.py": "class Queue:\n    '''First in, first out.'''\n\n"
                      "    def push(self, item):\n        self.items.append(item)\n"
                      "        return len(self.items)\n",
    "shelf/csvout.py": "def rows_to_csv(rows):\n    '''Rows as comma separated text.'''\n"
                       "    return '\\n'.join(','.join(map(str, row)) for row in rows)\n",
    "tests/test_queue.py": "def test_push_appends_the_item():\n    assert Queue().push(1) == 1\n",
    "shelf/tests/test_csv.py": "def test_rows_to_csv_joins():\n    assert rows_to_csv([]) == ''\n",
    "idlelib/editor.py": "def open_the_editor_window(root):\n    return root.window(1, 2)\n",
}


def library(root: Path) -> Path:
    for path, text in LIBRARY.items():
        write(root / path, text)
    return root


def test_the_corpus_skips_tests_and_tool_folders(tmp_path: Path) -> None:
    paths = [path for path, _ in corpus_files(library(tmp_path))]
    assert paths == ["shelf/csvout.py", "shelf/queue.py"]


def test_each_definition_comes_with_its_name_and_its_docstring(tmp_path: Path) -> None:
    texts = corpus_texts(list(corpus_files(library(tmp_path))), definitions=10)
    assert "shelf/csvout.py\nrows to csv" in texts  # the name alone, identifiers as words
    assert "rows as comma separated text." in texts  # the docstring alone (lower case)
    assert any(t.startswith("shelf/queue.py\nqueue\n") for t in texts)  # the chunk itself
    assert not any("test" in t for t in texts)
    assert docstrings(LIBRARY["shelf/queue.py"]) == {"Queue": "First in, first out."}


def test_the_sample_is_seeded(tmp_path: Path) -> None:
    files = list(corpus_files(library(tmp_path)))
    assert corpus_texts(files, 1) == corpus_texts(files, 1)
    assert len(corpus_texts(files, 1)) in (2, 3)  # one definition: chunk, name, docstring


def tiny_problem() -> tuple[np.ndarray, list[list[int]], np.ndarray]:
    rng = np.random.default_rng(7)
    table = rng.normal(size=(40, 16)).astype(np.float32)
    ids = [list(rng.integers(0, 40, size=int(n))) for n in rng.integers(2, 8, size=60)]
    targets = rng.normal(size=(60, 16)).astype(np.float32)
    return table, ids, targets / np.linalg.norm(targets, axis=1, keepdims=True)


def test_training_lowers_the_loss() -> None:
    table, ids, targets = tiny_problem()
    trained, losses = train(table, ids, targets, Recipe(epochs=6, batch=8, learning_rate=0.05))
    assert len(losses) == 7
    assert losses[-1] < losses[0] * 0.8
    assert loss_of(trained, ids, targets) == pytest.approx(losses[-1], abs=1e-5)
    assert loss_of(trained, ids, targets) < loss_of(table, ids, targets)


def test_the_same_seed_gives_the_same_table() -> None:
    table, ids, targets = tiny_problem()
    recipe = Recipe(epochs=2, batch=8, learning_rate=0.05)
    first, _ = train(table, ids, targets, recipe)
    again, _ = train(table, ids, targets, recipe)
    other, _ = train(table, ids, targets, recipe, seed=1)
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)


def test_pca_keeps_the_largest_axes_with_a_fixed_sign() -> None:
    rng = np.random.default_rng(3)
    table = (rng.normal(size=(200, 6)) * [5, 3, 1, 0.5, 0.2, 0.1]).astype(np.float32)
    projected = pca(table, 3)
    assert projected.shape == (200, 3)
    variances = projected.var(axis=0)
    assert variances[0] > variances[1] > variances[2]
    # A table's mirror image has the same axes: the sign fix gives the same projection.
    assert np.allclose(pca(-table, 3), -projected, atol=1e-4)
    assert np.allclose(pca(table, 3), projected)


def test_zipf_weights_are_model2vecs() -> None:
    from model2vec.distill.inference import compute_weights

    assert np.allclose(zipf_weights(50, 1e-4)[:, 0], compute_weights(50, 1e-4))


def test_the_recipe_in_the_marker_and_the_model_name_is_the_default_recipes() -> None:
    assert Recipe().describe() == STATIC_RECIPE
    assert STATIC_RECIPE in StaticEmbedder.model


def test_a_model_of_another_recipe_is_not_built(tmp_path: Path) -> None:
    model = tmp_path / "static_model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"x")
    assert not static_model_built(model)  # an install from before the marker
    write_recipe_marker(model, "model2vec, pca 256")
    assert not static_model_built(model)
    write_recipe_marker(model)
    assert static_model_built(model)
    assert (model / RECIPE_MARKER).read_text().strip() == STATIC_RECIPE


def test_build_static_returns_at_once_when_the_recipe_is_built(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "static_model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"x")
    write_recipe_marker(model)
    assert build_static.main([str(model)]) == 0
    assert "already built" in capsys.readouterr().out


def test_a_rebuilt_folder_replaces_the_old_one_whole(tmp_path: Path) -> None:
    old, new = tmp_path / "static_model", tmp_path / "static_model.tmp1"
    write(old / "model.safetensors", "old")
    write(old / "stale.json", "old")
    write(new / "model.safetensors", "new")
    replace_folder(new, old)
    assert sorted(p.name for p in old.iterdir()) == ["model.safetensors"]
    assert (old / "model.safetensors").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["static_model"]
