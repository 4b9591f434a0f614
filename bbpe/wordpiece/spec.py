"""The neutral description of a WordPiece tokenizer (``WordPieceSpec``) that its file formats
read into and write from: BERT's ``vocab.txt`` with its options, HF's ``tokenizer.json``.
It holds what decides the ids, and only what bbpe applies (the readers refuse the rest)."""

from __future__ import annotations

from dataclasses import dataclass

from ..common.hf_spec import AddedToken, Template

# BertWordPieceTokenizer's special tokens, by the role transformers names them
BERT_ROLES = {"unk_token": "[UNK]", "sep_token": "[SEP]", "cls_token": "[CLS]", "pad_token": "[PAD]",
              "mask_token": "[MASK]"}
# the special tokens BertWordPieceTokenizer.train gives the first ids, in this order
TRAINING_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


@dataclass(frozen=True)
class BertNormalizer:
    """HF's ``BertNormalizer`` (normalizers/bert.rs): ``strip_accents=None`` strips when
    ``lowercase`` does (``strips``)."""

    clean_text: bool = True
    handle_chinese_chars: bool = True
    strip_accents: bool | None = None
    lowercase: bool = True

    @property
    def strips(self) -> bool:
        return self.lowercase if self.strip_accents is None else self.strip_accents


@dataclass(frozen=True)
class WordPieceSpec:
    """A WordPiece tokenizer:

    - ``tokens``: each id's token text, ids 0..n-1 (a token listed twice keeps its last id
      for encoding, as HF's map does; its earlier id still decodes to it);
    - ``unk_token``, ``prefix`` (``continuing_subword_prefix``, ``##``),
      ``max_input_chars_per_word``: the model's (models/wordpiece/mod.rs);
    - ``normalizer``: a ``BertNormalizer``, or None for none;
    - ``cleanup``: the WordPiece decoder's (decoders/wordpiece.rs); ``decoder`` False: the
      file has no decoder (HF then joins the tokens with spaces);
    - ``added_tokens``: matched whole before the model runs (HF's ``added_tokens``);
    - ``template``: the post-processor (``BertProcessing`` read as its template), or None;
    - ``unk_per_char``: the seed's encoder (a char no token starts is one unknown token, and
      the word goes on) instead of BERT's (the whole word is one unknown token).
    """

    tokens: tuple[str, ...]
    unk_token: str = "[UNK]"
    prefix: str = "##"
    max_input_chars_per_word: int = 100
    normalizer: BertNormalizer | None = BertNormalizer()
    cleanup: bool = True
    decoder: bool = True
    added_tokens: tuple[AddedToken, ...] = ()
    template: Template | None = None
    unk_per_char: bool = False

    def ids(self) -> dict[str, int]:
        """Token text -> id, the last id of a token listed twice (HF's)."""
        return {token: kid for kid, token in enumerate(self.tokens)}
