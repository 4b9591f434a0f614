"""The neutral description of a byte-level BPE tokenizer that every file format reads into
and writes from (``BpeSpec``): tiktoken's ranks, HF's ``tokenizer.json``, GPT-2's
``vocab.json`` + ``merges.txt``.

It holds what decides the ids, and only what bbpe applies: the readers refuse any stage of
a file that would encode differently (bbpe.bpe.hf_json), so a spec means the same ids as
its file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ..common.hf_spec import AddedToken, Template


@dataclass(frozen=True)
class BpeSpec:
    """A byte-level BPE tokenizer, as every format describes it.

    The model:

    - ``tokens``: the bytes of each id of the model's vocabulary, ids 0..n-1 (distinct, not
      empty). Added tokens whose ids are past n are in ``added_tokens`` only.
    - ``merges``: HF's merges as (left id, right id) in rank order (the first merges first;
      the token they make is the one of their bytes together, which is in ``tokens``), or
      None for tiktoken's ranks, where merging two parts gives the token of their bytes, if
      any, and its id is the rank.
    - ``ignore_merges``: a piece that is itself a token is that token, without merging
      (tiktoken: always True; HF: the model's ``ignore_merges``).
    - ``unk_id``, ``fuse_unk``: HF's ``unk_token`` (as the id of that vocabulary token) for a
      byte that is no token, and whether a run of such bytes is one unk; ``unk_id`` None: the
      byte is dropped, as HF does without an unk token.
    - ``unreachable``: ids of ``tokens`` that the model never produces from text; only an
      added token gives them, and their bytes are what they decode to. HF: vocabulary tokens
      whose str is not in the byte-level alphabet (added tokens HF also put in the model's
      vocabulary, such as DeepSeek's ``<｜begin▁of▁sentence｜>``: no byte-level piece spells
      them), their bytes being their UTF-8. tiktoken: a gap in the ranks that a special
      token fills (p50k_base's ``<|endoftext|>``, 50256), its bytes being the token's.

    The text around it:

    - ``pattern``: the pre-tokenizer's regex, in the ``regex`` package's dialect (an HF Split
      pattern, which HF compiles with Oniguruma, is translated: bbpe.bpe.onig), or None: each
      text (between added tokens) is one piece. ``patterns.pattern_name`` names the known ones.
    - ``gaps``: whether the text that no match covers is kept as pieces (HF's Split
      ``Isolated``, ByteLevel's own regex) or dropped (tiktoken; HF's Split ``Removed`` with
      ``invert``). The known patterns cover every char, so it only matters for others.
    - ``add_prefix_space``: HF ByteLevel's: a space is put before each text (each stretch
      between added tokens) that does not start with one, before it is split.
    - ``normalizer``: None, or ``"NFC"`` (Qwen2's files): each stretch of text between added
      tokens is NFC-normalized before it is split (HF normalizes after taking the added
      tokens out; an added token with ``normalized`` is refused with a normalizer).
    - ``added_tokens``: in the file's order (tiktoken: in id order).

    What HF does after and around encoding (the facade's to apply):

    - ``template``: the post-processor's template, or None.
    - ``trim_offsets``, ``trim_offsets_prefix_space``: HF's ByteLevel (or Roberta)
      post-processor trims the spaces off the offsets of tokens (``process_offsets`` in
      pre_tokenizers/byte_level.rs), keeping one leading space of the first token when its
      ``add_prefix_space`` (the second flag) is set. Both False without such a post-processor.
    - ``decoder``: ``"ByteLevel"``: ids decode to their tokens' bytes, joined (tiktoken, HF's
      ByteLevel decoder); None: HF without a decoder, which joins the token strings with
      spaces (``"HelloĠworld"`` for two tokens). Only the ids' bytes matter to bbpe's decode.
    - ``truncation``, ``padding``: HF's sections as the file has them (None: none), not
      applied by the readers: HF's ``Tokenizer.encode`` would truncate and pad with them.
    - ``text_form``: how a token is shown as a str: ``"byte_level"`` (HF: GPT-2's
      byte-to-unicode chars, ``"Ġhello"``), ``"bytes"`` (tiktoken: tokens are bytes), or
      ``"chars"``: HF's BPE without ByteLevel (its ``Whitespace`` pre-tokenizer), whose
      tokens are text (their bytes its UTF-8) and whose merging starts from chars, not bytes:
      a char that is no token is unknown (``unk_id``, or dropped).
    """

    tokens: tuple[bytes, ...]
    merges: tuple[tuple[int, int], ...] | None = None
    pattern: str | None = None
    gaps: bool = False
    add_prefix_space: bool = False
    ignore_merges: bool = True
    unk_id: int | None = None
    fuse_unk: bool = False
    normalizer: Literal["NFC"] | None = None
    added_tokens: tuple[AddedToken, ...] = ()
    template: Template | None = None
    trim_offsets: bool = False
    trim_offsets_prefix_space: bool = False
    decoder: Literal["ByteLevel"] | None = "ByteLevel"
    truncation: Mapping[str, object] | None = None
    padding: Mapping[str, object] | None = None
    text_form: Literal["byte_level", "bytes", "chars"] = "byte_level"
    unreachable: frozenset[int] = frozenset()

    @property
    def char_units(self) -> bool:
        """Whether merging starts from chars (``text_form`` "chars") rather than bytes."""
        return self.text_form == "chars"

    @property
    def special_tokens(self) -> dict[str, int]:
        """Each added token's content and id (special or not: both are matched alike)."""
        return {token.content: token.id for token in self.added_tokens}

    @property
    def n_ids(self) -> int:
        """One more than the largest id: the model's tokens and the added ones."""
        return max([len(self.tokens) - 1, *(t.id for t in self.added_tokens)]) + 1
