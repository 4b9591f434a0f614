"""What ``tokenizer(...)`` returns, shared by every model: a ``BatchEncoding`` (transformers'
dict of columns, with ``word_ids()`` for pre-split words), one text's rows unwrapped, or the
columns as 2-D int64 arrays (``"np"``) or torch tensors (``"pt"``; torch is imported only
then: ``import bbpe`` never imports it)."""

from __future__ import annotations

import numpy as np


class BatchEncoding(dict):
    """What ``tokenizer(texts)`` returns: a dict of ``input_ids``, ``attention_mask`` and,
    when asked, ``offset_mapping``, whose keys are also attributes (as in transformers)."""

    _word_ids: list[list[int | None]] | None = None

    def __getattr__(self, name: str) -> object:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def word_ids(self, batch_index: int = 0) -> list[int | None]:
        """For each token of row ``batch_index``, the index of the word it belongs to (None
        for template and padding tokens), as transformers gives it; with
        ``is_split_into_words=True`` only (bbpe models have no words of their own)."""
        if self._word_ids is None:
            raise ValueError("word_ids() needs a call with is_split_into_words=True: bbpe models split no words")
        return list(self._word_ids[batch_index])

    def __reduce__(self) -> tuple:
        return (_batch_encoding, (dict(self), self._word_ids))


def _batch_encoding(data: dict, word_ids: list | None) -> BatchEncoding:
    out = BatchEncoding(data)
    out._word_ids = word_ids
    return out


def finished(out: dict, single: bool, tensors: str | None, words: list | None = None) -> BatchEncoding:
    """The call's ``BatchEncoding``: one text's rows unwrapped (lists), or the columns as
    2-D arrays (``"np"``, int64; the rows must be of one length) or torch tensors (``"pt"``)."""
    if tensors is not None:
        out = {name: _tensor(name, value, tensors) for name, value in out.items()}
    elif single:
        out = {name: value[0] for name, value in out.items()}
        words = words[0] if words is not None else None
    encoding = BatchEncoding(out)
    if words is not None:
        encoding._word_ids = [words] if single and tensors is None else words
    return encoding


def _tensor(name: str, value: object, tensors: str) -> object:
    if not isinstance(value, np.ndarray):
        try:
            value = np.array(value, dtype=np.int64)
        except ValueError:
            raise ValueError(f"return_tensors={tensors!r} needs rows of one length, but the {name} rows differ: "
                             "pass padding=True") from None
    if tensors == "np":
        return value
    try:
        import torch  # the [torch] extra: never imported by import bbpe
    except ImportError:
        raise ImportError("return_tensors='pt' needs torch: pip install 'bbpe[torch]'") from None
    return torch.from_numpy(value)
