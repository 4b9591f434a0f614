"""WordPiece training on the pair-merge engine (bbpe.pairmerge), as HF tokenizers'
``WordPieceTrainer`` trains (it wraps its ``BpeTrainer`` with a continuing prefix:
models/wordpiece/trainer.rs, models/bpe/trainer.rs), with the seed's likelihood score too.

1. The words: each text normalized and pre-tokenized as the tokenizer will encode it (the
   codec's ``count_words``), counted.
2. The alphabet (``kept_alphabet``): every char of the words counted by their counts,
   ``initial_alphabet`` as infinitely frequent, ``limit_alphabet`` the most frequent; the
   special tokens first, then the alphabet by code point.
3. The continuing forms: ``##c`` for each kept char ``c`` that follows another char in
   some word. HF adds them in the order it meets them while walking its word map, which
   changes from run to run (a hash map); bbpe adds them by code point, after the alphabet.
4. Each word as symbols: its first char's token, then the ``##`` form of each next char;
   a char outside the alphabet is left out (the next char keeps its ``##`` form, as in HF,
   which looks at a char's place in the word, not among the kept ones).
5. The merges (``train_merges``): ``score="frequency"``, BpeTrainer's (the pair of the
   greatest count, ties to the smaller ids); ``score="likelihood"``, the seed's (the pair
   of the greatest ``count(ab) / (count(a) * count(b))``, compared exactly, ties to the
   smaller ids). A merge's token is the left part's text and the right part's without its
   prefix (``un`` + ``##aff`` = ``unaff``, ``##aff`` + ``##able`` = ``##affable``).

For the engine a token is spelled by code points: a continuing token by its text without
the prefix, any other token by a mark (a code point past Unicode) and its text, so that
concatenating two spellings spells the merge's token as HF's strings do, and a merge
spelling an existing token (a special token) takes its id.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ..common.arguments import trainer_ints
from ..common.hf_spec import AddedToken
from ..common.progress import ProgressFn, stages
from ..pairmerge.alphabet import INFINITE, kept_alphabet
from ..pairmerge.train import WordTypes, offsets, train_merges
from ._codec import OPTIONS, WordPieceCodec
from .formats import bert_template
from .spec import BERT_ROLES, TRAINING_SPECIALS, BertNormalizer, WordPieceSpec

BERT_UNCASED = BertNormalizer()
MARK = 0x110000  # spells a token that starts a word (no code point of text is this large)
SCORES = ("likelihood", "frequency")
_BLOCK_LINES = 1 << 14
_CODE_POINTS = 0x110000


@dataclass(frozen=True)
class Settings:
    """``WordPiece.train``'s settings, checked."""

    vocab_size: int = 30000
    min_frequency: int = 2
    special_tokens: tuple[str, ...] = TRAINING_SPECIALS
    limit_alphabet: int | None = 1000
    initial_alphabet: tuple[str, ...] = ()
    score: str = "likelihood"
    normalizer: BertNormalizer = BERT_UNCASED
    prefix: str = "##"

    @classmethod
    def checked(cls, vocab_size: Any, min_frequency: Any, special_tokens: Any, limit_alphabet: Any,
                initial_alphabet: Any, score: Any, normalizer: BertNormalizer, prefix: Any) -> Settings:
        trainer_ints(("vocab_size", vocab_size, False), ("min_frequency", min_frequency, False),
                     ("limit_alphabet", limit_alphabet, True))
        if score not in SCORES:
            raise ValueError(f"score: {score!r} is not one of {', '.join(map(repr, SCORES))}")
        if not isinstance(prefix, str):
            raise TypeError(f"wordpieces_prefix: expected a str, got {type(prefix).__name__}")
        specials = (special_tokens,) if isinstance(special_tokens, str) else tuple(special_tokens or ())
        for i, token in enumerate(specials):
            if not isinstance(token, str) or not token:
                raise ValueError(f"special_tokens[{i}]: {token!r} is not a non-empty str")
        chars = (initial_alphabet,) if isinstance(initial_alphabet, str) else tuple(initial_alphabet or ())
        for c in chars:
            if not isinstance(c, str) or len(c) != 1 or 0xD800 <= ord(c) < 0xE000:
                raise ValueError(f"initial_alphabet: {c!r} is not one char")
        return cls(vocab_size, min_frequency, specials, limit_alphabet, chars, score, normalizer, prefix)


@dataclass(frozen=True)
class Trained:
    """What training gives: the spec, and the merges made, in order, as token texts."""

    spec: WordPieceSpec
    merges: tuple[tuple[str, str], ...]


def word_counter(normalizer: BertNormalizer) -> WordPieceCodec:
    """A codec that only counts words (no vocabulary): normalizer and pre-tokenizer."""
    bits = ((OPTIONS["clean_text"] if normalizer.clean_text else 0)
            | (OPTIONS["handle_chinese_chars"] if normalizer.handle_chinese_chars else 0)
            | (OPTIONS["strip_accents"] if normalizer.strips else 0)
            | (OPTIONS["lowercase"] if normalizer.lowercase else 0))
    return WordPieceCodec([b"[UNK]"], 0, b"##", 100, bits, [b""], [b""])


def count_texts(texts: Iterable[Any], normalizer: BertNormalizer, counts: dict[str, int] | None = None,
                name: str = "texts") -> dict[str, int]:
    """The words of texts (str or UTF-8 bytes) with their counts, added to ``counts``."""
    counts = {} if counts is None else counts
    counter = word_counter(normalizer)
    block: list = []
    done = 0
    for text in texts:
        block.append(text)
        if len(block) == _BLOCK_LINES:
            _count_block(counter, block, counts, name, done)
            done += len(block)
            block = []
    _count_block(counter, block, counts, name, done)
    return counts


def _count_block(counter: WordPieceCodec, block: list, counts: dict[str, int], name: str, first: int) -> None:
    try:
        counter.count_words(block, counts)
    except (TypeError, ValueError) as err:
        for i, text in enumerate(block):  # which one: counted again alone (into a scratch dict)
            try:
                counter.count_words([text], {})
            except (TypeError, ValueError) as inner:
                raise type(err)(f"{name}: line {first + i + 1}: {inner}") from None
        raise


def file_lines(path: str | os.PathLike[str]) -> Iterator[bytes]:
    """The lines of a file (HF's ``train`` on files: each line a text), as bytes."""
    with open(path, "rb") as f:
        yield from f


def count_files(files: Iterable[str | os.PathLike[str]], normalizer: BertNormalizer) -> dict[str, int]:
    counts: dict[str, int] = {}
    for path in files:
        count_texts(file_lines(path), normalizer, counts, os.fspath(path))
    return counts


def train(counts: dict[str, int], settings: Settings, show_progress: Any = True) -> Trained:
    """The WordPiece of these counted words (HF's WordPieceTrainer, or the seed's likelihood)."""
    prefix = settings.prefix
    chars = _Chars(counts)
    char_counts = chars.counts()
    for c in settings.initial_alphabet:
        char_counts[c] = INFINITE
    texts: list[str] = []
    ids: dict[str, int] = {}

    def add(token: str) -> int:
        if token not in ids:
            ids[token] = len(texts)
            texts.append(token)
        return ids[token]

    for token in settings.special_tokens:
        add(token)
    alphabet = kept_alphabet(char_counts, settings.limit_alphabet)
    first = {c: add(c) for c in alphabet}
    # bbpe's order of the continuing forms: by code point (HF's: its word map's, which varies)
    later = {c: add(prefix + c) for c in chars.following(first)}
    if not texts:
        raise ValueError("no token to train: the texts hold no word, and special_tokens and initial_alphabet are empty")
    words = chars.word_types(first, later)
    with stages(show_progress) as report:
        merges, _ = train_merges(words, _spellings(texts, prefix), settings.vocab_size,
                                 min_frequency=settings.min_frequency, score=settings.score,
                                 progress=cast("ProgressFn | None", report))
    made = []
    for a, b, new in merges.tolist():
        right = texts[b][len(prefix):] if prefix and texts[b].startswith(prefix) else texts[b]
        if new == len(texts):
            texts.append(texts[a] + right)
        made.append((texts[a], texts[b]))
    added = tuple(AddedToken(t, ids[t], special=True, decoded=t.encode("utf-8", "surrogatepass"))
                  for t in dict.fromkeys(settings.special_tokens))
    spec = WordPieceSpec(tuple(texts), BERT_ROLES["unk_token"], prefix, 100, settings.normalizer,
                         added_tokens=added, template=bert_template(tuple(texts)))
    return Trained(spec, tuple(made))


class _Chars:
    """The counted words' chars, laid end to end as code points (numpy, so that a corpus of
    a million distinct words is read in a few array passes, not char by char in Python)."""

    def __init__(self, counts: dict[str, int]) -> None:
        words = list(counts)
        lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        self.counts_ = np.fromiter(counts.values(), dtype=np.int64, count=len(words))
        self.starts = offsets(lengths, len(words))
        points = np.frombuffer("".join(words).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        # each distinct char once (by code point), and which one each char of the words is:
        # through a table over every code point (np.unique would sort them all)
        present = np.zeros(_CODE_POINTS, dtype=bool)
        present[points] = True
        self.distinct = np.flatnonzero(present)
        rank = np.cumsum(present, dtype=np.int32) - 1
        self.which = rank[points]
        self.first = np.zeros(len(points), dtype=bool)  # a word's first char
        self.first[self.starts[:-1][lengths > 0]] = True

    def counts(self) -> dict[str, int]:
        """Each char's count: its occurrences weighted by their words' counts."""
        totals = np.zeros(len(self.distinct), dtype=np.int64)
        np.add.at(totals, self.which, np.repeat(self.counts_, np.diff(self.starts)))
        return dict(zip(map(chr, self.distinct.tolist()), totals.tolist()))

    def following(self, kept: dict[str, int]) -> list[str]:
        """The kept chars that follow another char in some word, by code point."""
        seen = np.zeros(len(self.distinct), dtype=bool)
        seen[self.which[~self.first]] = True
        return [c for c in map(chr, self.distinct[seen].tolist()) if c in kept]

    def word_types(self, first: dict[str, int], later: dict[str, int]) -> WordTypes:
        """Each word as symbols: its first char's token, then the continuing form of each
        next char; a char outside the alphabet left out (the next keeps its continuing
        form: HF looks at a char's place in the word, not among the kept ones)."""
        as_first = np.full(len(self.distinct), -1, dtype=np.int64)
        as_later = np.full(len(self.distinct), -1, dtype=np.int64)
        for k, c in enumerate(map(chr, self.distinct.tolist())):
            as_first[k] = first.get(c, -1)
            as_later[k] = later.get(c, -1)
        symbols = np.where(self.first, as_first[self.which], as_later[self.which])
        kept = symbols >= 0
        kept_before = np.zeros(len(kept) + 1, dtype=np.int64)  # kept symbols before each char
        np.cumsum(kept, out=kept_before[1:])
        return WordTypes(symbols[kept].astype(np.int32), kept_before[self.starts], self.counts_)


def _spellings(texts: list[str], prefix: str) -> tuple[np.ndarray, np.ndarray]:
    """What each token spells for the engine: a continuing token its text without the
    prefix, any other the mark and its text (no mark with an empty prefix, where HF's
    continuing and first forms are the same string)."""
    parts = []
    for token in texts:
        if prefix and token.startswith(prefix):
            parts.append([ord(c) for c in token[len(prefix):]])
        else:
            parts.append(([MARK] if prefix else []) + [ord(c) for c in token])
    content = np.fromiter((c for part in parts for c in part), dtype=np.int32, count=sum(map(len, parts)))
    return content, offsets(map(len, parts), len(parts))
