"""The static model read from its files: an embedding table and a tokenizer.

A model2vec static model is a folder: ``model.safetensors`` (one row per token),
``tokenizer.json`` and ``config.json``. A text's vector is the mean of its tokens' rows,
normalised. model2vec's own loader imports huggingface_hub and httpx to reach a hub this
folder never needs: 0.4-0.8 s of every cold ``agentls search`` on this machine, more than
the rest of the search. So the folder is read here with safetensors and tokenizers (what
model2vec itself reads it with), and only the layout ``build_static`` writes (one
``embeddings`` tensor: no vocabulary quantisation, no token weights). The vectors are
model2vec's ``StaticModel.encode``'s, bit for bit (tests/unit/index/test_static_vectors.py).

Tokenizing is most of embedding a first index (about 80 µs a chunk here). Code is ASCII
and repeats its words, so a batch's ASCII texts are cut into words here, by the rules of
the BERT normaliser and pre-tokeniser for ASCII (control characters dropped, lower case,
split at spaces and at each punctuation mark), and each word's word pieces are the
tokenizer's, asked once per word and kept: the same ids as the tokenizer's for the whole
text (a property test over arbitrary ASCII), a quarter of the time. Other texts, and
tokenizers of another kind, go to the tokenizer whole.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

DEFAULT_MAX_LENGTH = 512  # tokens, as model2vec when the config names none
WORD_BATCH = 16  # texts in a batch from which words are looked up (a query goes whole)
WORDS_KEPT = 200_000  # word -> word pieces; past it the table starts again
# The BERT normaliser (clean_text) drops control characters but \t \n \r, which split.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# The BERT pre-tokeniser on ASCII: runs of letters and digits; each punctuation mark alone.
_WORD = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]")
_BERT_NORMALISER = {"type": "BertNormalizer", "clean_text": True, "lowercase": True}


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
        self._words: dict[str, list[int]] | None = {} if self._bert_words() else None
        # Added tokens are matched in the raw text before anything else: such a text goes
        # to the tokenizer whole.
        self._added = [t.content for t in self._tokenizer.get_added_tokens_decoder().values()]

    def _bert_words(self) -> bool:
        """Whether this tokenizer cuts ASCII text as ``_CONTROL`` and ``_WORD`` do (BERT's
        lower-casing normaliser and pre-tokeniser) and every added token is matched in the
        raw text."""
        tokenizer = self._tokenizer
        if type(tokenizer.normalizer).__name__ != "BertNormalizer" or type(
                tokenizer.pre_tokenizer).__name__ != "BertPreTokenizer":
            return False
        normaliser = json.loads(tokenizer.normalizer.__getstate__())
        if any(normaliser.get(key) != value for key, value in _BERT_NORMALISER.items()):
            return False
        return not any(t.normalized for t in tokenizer.get_added_tokens_decoder().values())

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

        unknown = self._unknown
        ids = [[i for i in token_ids if i != unknown] if unknown in token_ids else token_ids
               for token_ids in self._token_ids(self._cut(texts))]
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

    def _token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """The tokenizer's ids of each text (truncated to ``max_length``)."""
        words = self._words
        if words is None or len(texts) < WORD_BATCH:
            return [e.ids for e in self._tokenizer.encode_batch_fast(
                list(texts), add_special_tokens=False)]
        split = [_WORD.findall(_CONTROL.sub("", text).lower())
                 if text.isascii() and not any(a in text for a in self._added) else None
                 for text in texts]
        whole = iter([e.ids for e in self._tokenizer.encode_batch_fast(
            [t for t, w in zip(texts, split, strict=True) if w is None],
            add_special_tokens=False)])
        if len(words) > WORDS_KEPT:
            words.clear()
        new = list({w for found in split if found is not None for w in found} - words.keys())
        for word, encoding in zip(new, self._tokenizer.encode_batch_fast(
                new, add_special_tokens=False), strict=True):
            words[word] = encoding.ids
        limit = self.max_length
        out = []
        for found in split:
            if found is None:
                out.append(next(whole))
                continue
            token_ids = [i for w in found for i in words[w]]
            out.append(token_ids if limit is None else token_ids[:limit])
        return out
