"""bbpe inside transformers: ``BbpeTokenizer``, a ``transformers.PreTrainedTokenizer`` over
any bbpe tokenizer object, so that ``save_pretrained``/``from_pretrained``, ``__call__``,
``pad``, ``batch_decode`` and the data collators work with it.

    pip install 'bbpe[hf]'

    from bbpe.hf import BbpeTokenizer
    hf_tok = BbpeTokenizer(bbpe.load("model.bin"))     # or BbpeTokenizer.from_pretrained(directory)

An optional extra: ``import bbpe`` never imports this module, nor transformers. The
model's own tokens come from the bbpe tokenizer (tokens as text in ``id_to_token``'s
form); transformers' added tokens and special-token attributes (``pad_token``,
``bos_token``, ``eos_token``: by default XBBPE's ``<P>``, ``<S>``, ``</S>``) work as in any
slow tokenizer. ``save_pretrained`` writes the model as bbpe's JSON file (``bbpe.json``).
"""

from __future__ import annotations

import os
from typing import Any

try:
    from transformers import AddedToken, PreTrainedTokenizer
except ImportError as err:  # pragma: no cover - only without the extra
    raise ImportError("bbpe.hf needs transformers: pip install 'bbpe[hf]'") from err

from .common.token_text import token_bytes
from .tokenizer import Tokenizer

MODEL_FILE = "bbpe.json"


class BbpeTokenizer(PreTrainedTokenizer):
    """A transformers tokenizer whose model is a bbpe tokenizer (``tokenizer``), or the one
    saved in ``model_file`` (what ``from_pretrained`` passes)."""

    vocab_files_names = {"model_file": MODEL_FILE}  # noqa: RUF012 - transformers reads it as a class attribute
    model_input_names = ["input_ids", "attention_mask"]  # noqa: RUF012

    def __init__(self, tokenizer: Tokenizer | None = None, model_file: str | os.PathLike[str] | None = None,
                 *, pad_token: str = "<P>", bos_token: str = "<S>", eos_token: str = "</S>", **kwargs: Any) -> None:
        if tokenizer is None:
            if model_file is None:
                raise TypeError("BbpeTokenizer needs a bbpe tokenizer, or model_file (from_pretrained gives it)")
            tokenizer = Tokenizer.load(model_file)
        if not isinstance(tokenizer, Tokenizer):
            raise TypeError(f"BbpeTokenizer's first argument must be a bbpe tokenizer, got {type(tokenizer).__name__}")
        self.bbpe = tokenizer
        # the bbpe tokenizer's added special tokens, as transformers' added tokens with the
        # same ids: transformers cuts them out of the text before _tokenize sees it
        added = {kid: AddedToken(text, special=True, normalized=False)
                 for text, kid in _added_texts(tokenizer).items()}
        added.update(kwargs.pop("added_tokens_decoder", None) or {})
        super().__init__(pad_token=pad_token, bos_token=bos_token, eos_token=eos_token,
                         added_tokens_decoder=added, **kwargs)

    @property
    def vocab_size(self) -> int:
        return self.bbpe.vocab_size

    def get_vocab(self) -> dict[str, int]:
        vocab = self.bbpe.get_vocab()
        vocab.update(self.added_tokens_encoder)
        return vocab

    def _tokenize(self, text: str, **kwargs: Any) -> list[str]:
        # transformers has cut out its own added tokens already: the rest is plain text
        return self.bbpe.convert_ids_to_tokens(self.bbpe.encode(text, split_special_tokens=True))  # type: ignore[return-value]

    def _convert_token_to_id(self, token: str) -> int:
        kid = self.bbpe.token_to_id(token)
        if kid is None:
            raise KeyError(f"{token!r} is not a token of this bbpe vocabulary")
        return kid

    def _convert_id_to_token(self, index: int) -> str:
        return self.bbpe.id_to_token(index)

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        return b"".join(token_bytes(t) for t in tokens).decode("utf-8", "replace")

    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None) -> tuple[str, ...]:
        if not os.path.isdir(save_directory):
            raise NotADirectoryError(f"{save_directory}: save_pretrained needs a directory")
        path = os.path.join(save_directory, (f"{filename_prefix}-" if filename_prefix else "") + MODEL_FILE)
        self.bbpe.save(path, format="json")
        return (path,)

    def __reduce__(self) -> tuple:
        return (_rebuilt, (self.bbpe, self.init_kwargs, self.added_tokens_decoder))


def _rebuilt(tokenizer: Tokenizer, init_kwargs: dict, added: dict) -> BbpeTokenizer:
    kwargs = {k: v for k, v in init_kwargs.items() if k not in ("tokenizer", "model_file")}
    return BbpeTokenizer(tokenizer, added_tokens_decoder=added, **kwargs)


def _added_texts(tokenizer: Tokenizer) -> dict[str, int]:
    """The special tokens added to a bbpe tokenizer whose bytes are text (those transformers
    can match), text -> id."""
    out = {}
    for data, kid in tokenizer.added_special_tokens.items():
        try:
            out[data.decode("utf-8")] = kid
        except UnicodeDecodeError:
            continue
    return out
