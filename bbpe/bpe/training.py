"""Training a BPE as HF ``tokenizers``' ``BpeTrainer`` does, on the pair-merge engine
(``bbpe.pairmerge``): the same vocabulary, ids and merges as HF's trainer after the
matching pre-tokenizer, for the same words.

The words: each line of a file (its ``\\n`` kept, as HF's ``train`` reads files), or each
text of an iterator, is split by the pre-tokenizer, and the pieces' bytes are counted.
``pre_tokenizer="byte_level"`` is HF's ``ByteLevel(add_prefix_space=False)`` with its own
regex (GPT-2's); a tiktoken pattern name (``"cl100k_base"``...) is HF's
``Split(pattern, "isolated")`` then ``ByteLevel(use_regex=False)``: with either, a word is
its bytes as byte-level chars (``"Ġhello"``), as HF's ``ByteLevel`` gives it, and merging
starts from bytes. ``"whitespace"`` is HF's ``Whitespace`` (``\\w+|[^\\w\\s]+``, the
whitespace dropped) with no ByteLevel: a word is its text, merging starts from its chars,
and the model has no byte fallback (a char outside the alphabet is dropped when encoding,
as HF does). Special tokens in the text are split like any text: HF's trainer sees them so
too (the tokenizer learns them only after training).

The vocabulary (tokenizers/src/models/bpe/trainer.rs, ``do_train``): the special tokens,
in order; the alphabet, sorted by code point; then one token per merge. The alphabet is
every char of the words, counted by the words' counts, with ``initial_alphabet`` counted
as infinitely frequent; ``limit_alphabet`` keeps the most frequent. Among chars of equal
count at that limit HF drops in hash-map order, which changes from run to run; bbpe drops
the greater code points first. A char left out of the alphabet is left out of the words
(its neighbours become adjacent), as in HF.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..common._fast import utf8_valid_prefix
from ..common.arguments import trainer_ints
from ..common.files import write_file
from ..common.hf_spec import AddedToken
from ..common.json_fields import Fields
from ..common.progress import stages
from ..common.resources import MemoryGuard, check_training_memory
from ..errors import FormatError
from ..pairmerge.alphabet import INFINITE, kept_alphabet
from ..pairmerge.counting import WordTable, count_words, flat_words
from ..pairmerge.train import WordTypes, train_merges
from . import _pretokenize as pt
from .byte_level import ALPHABET, BYTE_CHARS, decoded_bytes, to_bytes, to_text
from .hf_json import vocab_bytes
from .patterns import HF_BYTE_LEVEL_PATTERN
from .spec import BpeSpec

# Peak memory per corpus byte: zh-large (23 MB, half a million distinct words of 25 bytes)
# trains at 32000 in 454 MB, about 20 bytes a byte; English text, whose words repeat, needs
# a few. The memory check assumes the worst.
BYTES_PER_CORPUS_BYTE = 24


@dataclass(frozen=True)
class PreTokenizer:
    """A pre-tokenizer that training takes by name: its regex, and whether merging starts
    from chars (HF's Whitespace, no ByteLevel) or from bytes shown as byte-level chars."""

    name: str
    pattern: str
    char_units: bool = False

    @classmethod
    def named(cls, name: Any) -> PreTokenizer:
        """"byte_level" (HF ByteLevel's regex), "whitespace" (HF's Whitespace) or one of
        tiktoken's names."""
        if name == "byte_level":
            return cls(name, HF_BYTE_LEVEL_PATTERN)
        if name == "whitespace":
            return cls(name, pt.WHITESPACE_PATTERN, char_units=True)
        if isinstance(name, str) and name in pt.TIKTOKEN_PATTERNS:
            return cls(name, pt.TIKTOKEN_PATTERNS[name])
        names = ", ".join(["byte_level", "whitespace", *pt.TIKTOKEN_PATTERNS])
        raise ValueError(f"pre_tokenizer: {name!r} is not one of {names}")

    @property
    def units(self) -> int:
        """How many distinct units there are (bytes, or code points)."""
        return 0x110000 if self.char_units else 256

    def unit_text(self, unit: int) -> str:
        """A unit as the vocabulary shows it: the char, or the byte's byte-level char."""
        return chr(unit) if self.char_units else BYTE_CHARS[unit]

    def word_bytes(self, word: str) -> bytes | None:
        """A word as ``count_words`` writes it, as bytes (None: not such a word)."""
        return word.encode("utf-8") if self.char_units else to_bytes(word)

    def word_text(self, data: bytes) -> str:
        """A word's bytes as ``count_words`` writes it: its text, or byte-level text."""
        return data.decode("utf-8") if self.char_units else to_text(data)

    @property
    def word_form(self) -> str:
        """How an error describes the words that ``word_bytes`` takes."""
        return "text" if self.char_units else "byte-level text (GPT-2's byte-level chars, such as 'Ġhello')"


class WordCounter:
    """Counts the pre-tokenized words of texts under one of the compiled pre-tokenizers:
    files on threads, into a word table (bbpe.pairmerge.counting); texts one by one, into a
    dict."""

    def __init__(self, pattern: str) -> None:
        self.pid = pt.compiled_pattern(pattern)
        if not self.pid:  # PreTokenizer.named gives only patterns that a scanner runs
            raise ValueError(f"no compiled pre-tokenizer runs the pattern {pattern!r}")
        self.counts: Counter[bytes] = Counter()
        self.table = WordTable()

    def add(self, text: bytes) -> None:
        """Counts one text (UTF-8), split whole."""
        self.counts.update(pt.split(text, self.pid))

    def _piece_ends(self, data: np.ndarray, start: int, stop: int, out: np.ndarray) -> int:
        return pt.line_piece_ends(data, start, stop, self.pid, out)

    def add_file(self, path: str | os.PathLike[str], progress: Any = None, done: int = 0, total: int = 0) -> int:
        """Counts each line of the file (HF's ``train`` on files: lines with their
        ``\\n``); returns ``done`` plus the bytes read."""
        name = os.fspath(path)
        with open(name, "rb") as f:
            raw = f.read()
        valid, _ = utf8_valid_prefix(raw)
        if valid < len(raw):
            raise ValueError(f"{name}: byte {valid}: not UTF-8 (the byte {raw[valid]:#04x} starts no char "
                             "or its char is cut)")
        report = None if progress is None else (lambda at: progress("scan", done + at, total))
        count_words(self.table, np.frombuffer(raw, dtype=np.uint8), self._piece_ends, b"\n", progress=report)
        return done + len(raw)

    def words(self) -> WordBytes:
        """What was counted, as arrays (the dict's words after the table's)."""
        if self.counts:
            self.table.add_counts(self.counts)
            self.counts.clear()
        return WordBytes(*self.table.arrays())


BYTE_LEVEL = PreTokenizer.named("byte_level")


@dataclass(frozen=True)
class Settings:
    """BpeTrainer's settings, checked (``checked``) for a pre-tokenizer: ``special_tokens``
    and ``initial_alphabet`` as tuples (an iterator given for either is read once). The
    initial alphabet is by default all 256 byte-level chars with a byte-level pre-tokenizer
    (HF's ``ByteLevelBPETokenizer`` trains with ``ByteLevel.alphabet()``), none with
    "whitespace" (BpeTrainer's default)."""

    vocab_size: int
    min_frequency: int = 0
    special_tokens: tuple[str, ...] = ()
    limit_alphabet: int | None = None
    initial_alphabet: tuple[str, ...] = BYTE_CHARS
    max_token_length: int | None = None
    pre_tokenizer: PreTokenizer = BYTE_LEVEL

    @classmethod
    def checked(cls, vocab_size: Any, min_frequency: Any = 0, special_tokens: Iterable[str] | None = None,
                limit_alphabet: Any = None, initial_alphabet: Iterable[str] | None = None,
                max_token_length: Any = None, pre_tokenizer: Any = "byte_level") -> Settings:
        trainer_ints(("vocab_size", vocab_size, False), ("min_frequency", min_frequency, False),
                     ("limit_alphabet", limit_alphabet, True), ("max_token_length", max_token_length, True))
        pre = PreTokenizer.named(pre_tokenizer)
        return cls(vocab_size, min_frequency, _special_tuple(special_tokens), limit_alphabet,
                   _initial_chars(initial_alphabet, pre), max_token_length, pre)


def _special_tuple(special_tokens: Iterable[str] | None) -> tuple[str, ...]:
    specials = () if special_tokens is None else (special_tokens,) if isinstance(special_tokens, str) else \
        tuple(special_tokens)
    for i, token in enumerate(specials):
        if not isinstance(token, str) or not token:
            raise ValueError(f"special_tokens[{i}]: {token!r} is not a non-empty str")
    return specials


def _initial_chars(initial_alphabet: Iterable[str] | None, pre: PreTokenizer) -> tuple[str, ...]:
    if initial_alphabet is None:
        return () if pre.char_units else BYTE_CHARS
    chars = (initial_alphabet,) if isinstance(initial_alphabet, str) else tuple(initial_alphabet)
    for c in chars:
        if not isinstance(c, str) or len(c) != 1:
            raise ValueError(f"initial_alphabet: {c!r} is not one char")
        if 0xD800 <= ord(c) < 0xE000:
            raise ValueError(f"initial_alphabet: {c!r} is a lone surrogate, not a char of text")
        if not pre.char_units and c not in ALPHABET:
            raise ValueError(f"initial_alphabet: {c!r} (U+{ord(c):04X}) is not a byte-level char: the words are "
                             "bytes shown as GPT-2's byte-level chars (the byte 0xE4 is 'ä', the space 'Ġ')")
    return chars


class WordBytes:
    """Counted words as flat arrays: word ``w`` is ``data[starts[w]:starts[w + 1]]``
    (uint8), seen ``counts[w]`` times."""

    def __init__(self, data: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> None:
        self.data, self.starts, self.counts = data, starts, counts

    @classmethod
    def from_counts(cls, counts: Mapping[bytes, int]) -> WordBytes:
        return cls(*flat_words(counts))

    def units(self, char_units: bool) -> tuple[np.ndarray, np.ndarray]:
        """The words as units: (each unit, each word's start among them and one more). The
        units are the bytes, or with ``char_units`` the code points of the UTF-8 words."""
        if not char_units:
            return self.data, self.starts
        code_points = np.frombuffer(self.data.tobytes().decode("utf-8").encode("utf-32-le"), dtype=np.uint32)
        chars_before = np.concatenate([[0], np.cumsum((self.data & 0xC0) != 0x80, dtype=np.int64)])
        return code_points, chars_before[self.starts]

    def unit_counts(self, units: np.ndarray, starts: np.ndarray, size: int) -> np.ndarray:
        """How often each unit (< ``size``) occurs, counted by the words' counts (int64),
        a slice of words at a time so the weights never take more than a few MB."""
        total = np.zeros(size, dtype=np.int64)
        step = 1 << 16
        for first in range(0, len(self.counts), step):
            last = min(first + step, len(self.counts))
            part = units[starts[first]:starts[last]]
            weights = np.repeat(self.counts[first:last], np.diff(starts[first:last + 1]))
            total += np.rint(np.bincount(part, weights=weights, minlength=size)).astype(np.int64)
        return total


def train_words(words: WordBytes, settings: Settings, progress: Any = None) -> BpeSpec:
    """The spec of the BPE that HF's BpeTrainer makes from these counted words (counts >= 1).
    Their bytes are dropped once they are symbols (``words.data`` is empty after)."""
    pre = settings.pre_tokenizer
    specials = list(settings.special_tokens)
    units, starts = words.units(pre.char_units)
    unit_counts = words.unit_counts(units, starts, pre.units)
    seen = np.flatnonzero(unit_counts)  # (every count is at least 1)
    char_counts: dict[str, int] = {pre.unit_text(u): int(unit_counts[u]) for u in seen.tolist()}
    for c in settings.initial_alphabet:
        char_counts[c] = INFINITE
    texts: list[str] = []
    ids: dict[str, int] = {}
    for token in specials + kept_alphabet(char_counts, settings.limit_alphabet):
        if token not in ids:
            ids[token] = len(texts)
            texts.append(token)
    if not texts:  # HF makes a model that drops every char: refused rather than made
        raise ValueError(f"no token to train: the {pre.name} pre-tokenizer found no word in the texts, and "
                         "special_tokens and initial_alphabet are empty")
    unit_ids = np.full(pre.units, -1, dtype=np.int32)
    unit_ids[seen] = [ids.get(pre.unit_text(u), -1) for u in seen.tolist()]
    symbols = unit_ids[units]
    del units
    if (unit_ids[seen] < 0).any():  # chars left out of the alphabet leave the words
        kept = symbols >= 0
        # each word's start among the kept symbols: the kept ones before its first unit
        kept_before = np.concatenate([[0], np.cumsum(kept, dtype=np.int64)])
        starts = kept_before[starts]
        symbols = np.ascontiguousarray(symbols[kept])
    words.data = np.empty(0, dtype=np.uint8)  # the symbols hold the words now: free the bytes before the engine runs
    types = WordTypes(symbols, starts, words.counts)
    merges, _ = train_merges(types, texts, settings.vocab_size, min_frequency=settings.min_frequency,
                             max_token_length=settings.max_token_length, progress=progress)
    for a, b, new in merges.tolist():
        if new == len(texts):
            texts.append(texts[a] + texts[b])
    # HF's merges are a map: a pair merged twice keeps its later rank
    rank = {(a, b): i for i, (a, b, _) in enumerate(merges.tolist())}
    ordered = tuple(sorted(rank, key=rank.__getitem__))
    if pre.char_units:
        return _char_spec(texts, ordered, specials, ids)
    try:
        tokens, unreachable = vocab_bytes(texts, set(specials), Fields("the trained vocabulary"), field="vocab")
    except FormatError as err:  # a special token outside the byte-level alphabet, spelled by a merge too
        raise ValueError(f"special_tokens: {str(err).split('offset 0: ', 1)[-1]}: a special token whose chars are not "
                         "byte-level chars has its UTF-8 as its bytes, and bbpe's byte-level BPE cannot hold two "
                         "tokens of the same bytes (HF can: the merged one is never produced from text)") from None
    added = tuple(AddedToken(token, ids[token], decoded=decoded_bytes(token)) for token in dict.fromkeys(specials))
    return BpeSpec(tokens=tokens, merges=ordered, pattern=pre.pattern, gaps=True, ignore_merges=False,
                   added_tokens=added, decoder="ByteLevel", text_form="byte_level", unreachable=unreachable)


def _char_spec(texts: list[str], merges: tuple[tuple[int, int], ...], specials: list[str],
               ids: dict[str, int]) -> BpeSpec:
    """The spec of a BPE trained over chars (HF's Whitespace, no ByteLevel): the tokens are
    their text's UTF-8, no decoder (HF's decode joins the tokens with spaces)."""
    added = tuple(AddedToken(token, ids[token], decoded=token.encode("utf-8")) for token in dict.fromkeys(specials))
    return BpeSpec(tokens=tuple(t.encode("utf-8") for t in texts), merges=merges, pattern=pt.WHITESPACE_PATTERN,
                   ignore_merges=False, added_tokens=added, decoder=None, text_form="chars")


def word_counts_from(counts: Mapping[str, int] | Mapping[bytes, int] | Iterable[tuple[str | bytes, int]],
                     pre: PreTokenizer) -> Counter[bytes]:
    """Counts of pre-tokenized words, keyed by bytes: a key that is a str is the word as
    ``count_file_words`` gives it (byte-level chars, HF's form, ``"Ġhello"``; with
    "whitespace" its text), a bytes key the word's bytes. Counts of the same word add up."""
    items = counts.items() if isinstance(counts, Mapping) else counts
    out: Counter[bytes] = Counter()
    for i, item in enumerate(items):
        try:
            word, count = item
        except (TypeError, ValueError):
            raise ValueError(f"counts[{i}]: {item!r} is not a (word, count) pair") from None
        if isinstance(word, str):
            try:
                data = pre.word_bytes(word)
            except UnicodeEncodeError:
                data = None
            if data is None:
                raise ValueError(f"counts: the word {word!r} is not {pre.word_form}; give its bytes to count it as is")
        elif isinstance(word, bytes):
            data = word
        else:
            raise TypeError(f"counts: a word is a str or bytes, got {type(word).__name__}")
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
            raise ValueError(f"counts[{word!r}]: {count!r} is not a count (an int >= 0)")
        if count and data:
            out[data] += int(count)
    return out


def train(sources: Any, source: str, settings: Settings, show_progress: bool | Any = True,
          memory_check: bool = True) -> BpeSpec:
    """Counts the words of ``sources`` (``source``: "files", "texts" or "counts", which are
    counted already) and trains on them, with progress bars or the caller's callback; memory
    that runs out is one InsufficientMemoryError naming the stage (``MemoryGuard``)."""
    pre = settings.pre_tokenizer
    with stages(show_progress) as report, MemoryGuard(_sources_name(sources, source), report).watching() as guard:
        if source == "counts":
            words = WordBytes.from_counts(word_counts_from(sources, pre))
        else:
            counter = WordCounter(pre.pattern)
            if source == "files":
                _count_files(counter, sources, guard.progress, memory_check)
            else:
                _count_texts(counter, sources)
            words = counter.words()
            del counter  # its tables: the arrays hold the words now
        return train_words(words, settings, guard.progress)


def _sources_name(sources: Any, source: str) -> str:
    """How an error names what was trained on."""
    if source != "files":
        return f"training on {source}"
    paths = [sources] if isinstance(sources, (str, os.PathLike)) else list(sources)
    return os.fspath(paths[0]) + (f" and {len(paths) - 1} more" if len(paths) > 1 else "") if paths else "files"


def _count_files(counter: WordCounter, files: Any, report: Any, memory_check: bool = True) -> None:
    paths = [files] if isinstance(files, (str, os.PathLike)) else list(files)
    if not paths:
        raise ValueError("files: no file given")
    for path in paths:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"files: expected paths, got {type(path).__name__}")
    total = sum(os.path.getsize(p) for p in paths)
    if memory_check:
        from ..pairmerge.kernels import AHEAD_OF_TIME

        check_training_memory(_sources_name(paths, "files"), total, jit=not AHEAD_OF_TIME,
                              per_byte=BYTES_PER_CORPUS_BYTE)
    done = 0
    if report:
        report("scan", 0, total)
    for path in paths:
        done = counter.add_file(path, report, done, total)
    if report:
        report("scan", total, total)


def _count_texts(counter: WordCounter, texts: Any) -> None:
    if isinstance(texts, (str, bytes)):
        raise TypeError("texts: expected an iterable of str, got one str (wrap it in a list)")
    for i, text in enumerate(texts):
        if isinstance(text, str):
            try:
                text = text.encode("utf-8")
            except UnicodeEncodeError as err:
                raise ValueError(f"texts[{i}]: char {err.start}: a lone surrogate is not text") from None
        elif not isinstance(text, bytes):
            raise TypeError(f"texts[{i}]: expected str, got {type(text).__name__}")
        counter.add(text)


def count_file_words(files: Any, pre_tokenizer: str = "byte_level", show_progress: bool | Any = True) -> dict[str, int]:
    """The pre-tokenized words of the files with their counts (the files' counts added up),
    in the order first seen, words as byte-level text (HF's form, ``"Ġhello"``) or, with
    "whitespace", as their text: what ``train_from_counts`` takes, to give what training on
    the files gives."""
    pre = PreTokenizer.named(pre_tokenizer)
    counter = WordCounter(pre.pattern)
    with stages(show_progress) as report:
        _count_files(counter, files, report, memory_check=False)
    words = counter.words()
    data = words.data.tobytes()
    starts = words.starts.tolist()
    return {pre.word_text(data[starts[w]:starts[w + 1]]): count for w, count in enumerate(words.counts.tolist())}


def write_counts(counts: Mapping[str, int], path: str | os.PathLike[str]) -> None:
    """Word counts as a TSV file, ``word<TAB>count`` a line, the most frequent first (then
    by word): words in byte-level text, or split by "whitespace", hold no tab, newline or
    space. Written whole or not at all."""
    lines = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    data = "".join(f"{word}\t{count}\n" for word, count in lines).encode("utf-8")
    write_file(path, data, is_file=False)


def read_counts(paths: Iterable[str | os.PathLike[str]], pre_tokenizer: str = "byte_level") -> Counter[bytes]:
    """The counts of TSV files as ``write_counts`` writes them for ``pre_tokenizer``, added
    up; a line that is not ``word<TAB>count`` is a ValueError naming the file and line."""
    pre = PreTokenizer.named(pre_tokenizer)
    out: Counter[bytes] = Counter()
    for path in paths:
        name = os.fspath(path)
        with open(name, "rb") as f:
            data = f.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise ValueError(f"{name}: byte {err.start}: not UTF-8") from None
        for number, line in enumerate(text.removesuffix("\n").split("\n") if text else [], 1):
            word, tab, count = line.partition("\t")
            if not tab or not count.isdigit() or not word:
                raise ValueError(f"{name}: line {number}: {line[:60]!r} is not word<TAB>count")
            key = pre.word_bytes(word)
            if key is None:
                raise ValueError(f"{name}: line {number}: {word[:60]!r} is not {pre.word_form}")
            out[key] += int(count)
    return out
