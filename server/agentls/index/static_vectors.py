"""The static model read from its files: an embedding table and a tokenizer.

A model2vec static model is a folder: ``model.safetensors`` (one row per token),
``tokenizer.json`` and ``config.json``. A text's vector is the mean of its tokens' rows,
normalised. model2vec's own loader imports huggingface_hub and httpx to reach a hub this
folder never needs: 0.4-0.8 s of every cold ``agentls search`` on this machine, more than
the rest of the search. So the folder is read here with safetensors and tokenizers (what
model2vec itself reads it with), and only the layout ``build_static`` writes (one
``embeddings`` tensor: no vocabulary quantisation, no token weights). The vectors are
model2vec's ``StaticModel.encode``'s, bit for bit (tests/unit/index/test_static_vectors.py).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

DEFAULT_MAX_LENGTH = 512  # tokens, as model2vec when the config names none


class StaticVectors:
    """One static model's table and tokenizer; ``encode`` as model2vec's."""

    def __init__(self, directory: Path) -> None:
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        tensors = load_file(str(directory / "model.safetensors"))
        if set(tensors) != {"embeddings"}:
            raise ValueError(f"{directory} is not a static model agentls built (tensors "
                             f"{sorted(tensors)}); build it again with `python -m "
                             "agentls.index.build_static`")
        table = tensors["embeddings"]
        if table.dtype not in (np.float16, np.float32):
            raise ValueError(f"{directory}: a {table.dtype} table (quantised) is not read "
                             "here; build the model again with `python -m "
                             "agentls.index.build_static`")
        self.dtype = table.dtype
        # Summed in float32, as numpy's mean of a float16 table is, but without widening
        # every gathered row again: the same sums, twice as fast.
        self._table = table.astype(np.float32)
        config = json.loads((directory / "config.json").read_text())
        self.normalize = bool(config.get("normalize", False))
        self.max_length: int | None = config.get("max_length", DEFAULT_MAX_LENGTH)
        self._tokenizer: Any = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self._tokenizer.no_padding()
        if self.max_length is None:
            self._tokenizer.no_truncation()
        else:
            self._tokenizer.enable_truncation(self.max_length)
        unknown = getattr(self._tokenizer.model, "unk_token", None)
        self._unknown = None if unknown is None else self._tokenizer.token_to_id(unknown)
        self._max_chars: int | None = None

    @property
    def dim(self) -> int:
        return int(self._table.shape[1])

    def _cut(self, texts: Sequence[str]) -> Sequence[str]:
        """model2vec first cuts a text at ``max_length`` times the vocabulary's median
        token length in characters (a token is at least one character, so a shorter text
        is never cut: the vocabulary is read only for a long one)."""
        if self.max_length is None or all(len(t) <= self.max_length for t in texts):
            return texts
        if self._max_chars is None:
            import numpy as np

            lengths = [len(token) for token in self._tokenizer.get_vocab()]
            self._max_chars = self.max_length * int(np.median(lengths))
        return [t[:self._max_chars] for t in texts]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text (a text without known tokens gives zeros)."""
        import numpy as np

        encodings = self._tokenizer.encode_batch_fast(list(self._cut(texts)),
                                                      add_special_tokens=False)
        ids = [[i for i in e.ids if i != self._unknown] for e in encodings]
        out = np.zeros((len(ids), self.dim), dtype=self.dtype)
        by_length: dict[int, list[int]] = defaultdict(list)
        for row, token_ids in enumerate(ids):
            if token_ids:
                by_length[len(token_ids)].append(row)
        for length, rows in by_length.items():
            sums = self._table[np.array([ids[r] for r in rows], dtype=np.int64)].sum(axis=1)
            sums /= length
            out[rows] = sums
        if not self.normalize:
            return out
        widened = out.astype(np.float32)
        norms = np.linalg.norm(widened, axis=1, keepdims=True) + 1e-32
        return (widened / norms).astype(out.dtype)
