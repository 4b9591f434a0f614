"""HF tokenizers' BPE training in plain Python: the reference the pair-merge engine
(``bbpe.pairmerge``) is checked against, step for step.

It follows tokenizers/src/models/bpe/trainer.rs (``BpeTrainer::do_train``) and word.rs
(``Word::merge``) line by line, slowly and readably:

- the vocabulary starts with the special tokens, then the alphabet sorted by code point;
- each word is its characters' ids (characters outside the alphabet dropped, so their
  neighbours become adjacent);
- a pair's count is kept by deltas and never reset, not even when the pair is merged;
- the queue holds entries (count, pair, the words to merge it in): the greatest count
  first, then the smallest pair of ids; an entry whose count is stale goes back with the
  current one (a negative count read as an unsigned 64-bit number, as Rust's ``as u64``
  does); a merge touches only the words of its entry, and a pair made again later (by
  another merge that spells the same token) gets an entry of its own, so a pair can be
  merged twice, the later rank winning;
- a merge's new pairs count only when their length in characters stays under
  ``max_token_length``, while the pairs it breaks always lose their count.
"""

from __future__ import annotations

import heapq
import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping

U64 = 1 << 64


def merge_word(word: list[int], a: int, b: int, new: int, lengths: list[int], max_length: int) -> list:
    """Word::merge: merges every (a, b) of ``word`` left to right, in place; returns the
    pair changes [((x, y), +1 or -1)] in the order HF makes them."""
    changes = []
    i = 0
    while i < len(word):
        if word[i] == a and i + 1 < len(word) and word[i + 1] == b:
            if i > 0:
                changes.append(((word[i - 1], a), -1))
                if lengths[word[i - 1]] + lengths[new] < max_length:
                    changes.append(((word[i - 1], new), 1))
            word[i:i + 2] = [new]
            if i < len(word) - 1:
                changes.append(((b, word[i + 1]), -1))
                if lengths[word[i + 1]] + lengths[new] < max_length:
                    changes.append(((new, word[i + 1]), 1))
        i += 1
    return changes


def merge_loop(words: list[list[int]], counts: list[int], tokens: list[str], vocab: dict[str, int],
               vocab_size: int, min_frequency: int = 0, max_token_length: int | None = None,
               tie: str = "ids") -> list[tuple[int, int, int]]:
    """The merge loop of do_train over ``words`` (lists of token ids, changed in place) with
    ``counts``; ``tokens`` (id -> string) and ``vocab`` (string -> id) grow with each new
    token. Returns the merges made, in order, as (a, b, new id).

    ``tie`` orders pairs of equal count: "ids", the smaller (a, b) first (HF's); or
    "first_seen", the pair whose count was first touched first (words in order, then the
    changes of each merge in order)."""
    max_length = U64 if max_token_length is None else max_token_length
    lengths = [len(t) for t in tokens]
    pair_counts: dict[tuple[int, int], int] = defaultdict(int)
    where: dict[tuple[int, int], set[int]] = defaultdict(set)
    first_seen: dict[tuple[int, int], int] = {}
    for w, word in enumerate(words):
        for pair in itertools.pairwise(word):
            first_seen.setdefault(pair, len(first_seen))
            pair_counts[pair] += counts[w]
            where[pair].add(w)
    # heapq is a min-heap: the key (-count, pair) puts the greatest count, then the
    # smallest pair, first (trainer.rs's Ord for Merge); the serial number only keeps
    # entries with equal keys apart
    queue: list = []
    serial = 0

    def push(count: int, pair: tuple[int, int], pos: set[int]) -> None:
        nonlocal serial
        order = pair if tie == "ids" else first_seen.setdefault(pair, len(first_seen))
        heapq.heappush(queue, (-count, order, serial, pair, pos))
        serial += 1

    for pair, pos in where.items():
        if pair_counts[pair] > 0:
            push(pair_counts[pair], pair, pos)
    merges = []
    while len(vocab) < vocab_size and queue:
        negative, _, _, pair, pos = heapq.heappop(queue)
        current = pair_counts[pair] % U64  # `as u64`
        if -negative != current:
            push(current, pair, pos)
            continue
        if current < 1 or min_frequency > current:
            break
        token = tokens[pair[0]] + tokens[pair[1]]
        new = vocab.get(token, len(tokens))
        if token not in vocab:
            vocab[token] = new
            tokens.append(token)
            lengths.append(lengths[pair[0]] + lengths[pair[1]])
        merges.append((pair[0], pair[1], new))
        where = defaultdict(set)
        for w in sorted(pos):
            for changed, change in merge_word(words[w], pair[0], pair[1], new, lengths, max_length):
                first_seen.setdefault(changed, len(first_seen))
                pair_counts[changed] += change * counts[w]
                if change > 0:
                    where[changed].add(w)
        for changed, changed_pos in where.items():
            if pair_counts[changed] > 0:
                push(pair_counts[changed], changed, changed_pos)
    return merges


def alphabet(word_counts: Mapping[str, int], limit_alphabet: int | None, initial_alphabet: Iterable[str]) -> list[str]:
    """compute_alphabet: the characters by count (weighted by the words' counts), those of
    ``initial_alphabet`` counted as infinite; the least frequent dropped down to
    ``limit_alphabet``; the rest sorted by code point. HF drops among equal counts in hash-map
    order; here the greater code points go first (bbpe's rule)."""
    char_counts: dict[str, int] = defaultdict(int)
    for word, count in word_counts.items():
        for c in word:
            char_counts[c] += count
    for c in initial_alphabet:
        char_counts[c] = U64
    kept = sorted(char_counts, key=lambda c: (char_counts[c], -ord(c)))
    if limit_alphabet is not None and len(kept) > limit_alphabet:
        kept = kept[len(kept) - limit_alphabet:]
    return sorted(kept)


def train(word_counts: Mapping[str, int], vocab_size: int, min_frequency: int = 0, special_tokens: Iterable[str] = (),
          limit_alphabet: int | None = None, initial_alphabet: Iterable[str] = (),
          max_token_length: int | None = None) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """BpeTrainer::do_train on counted words: (vocabulary, merges as pairs of strings, in
    rank order)."""
    tokens: list[str] = []
    vocab: dict[str, int] = {}
    for token in list(special_tokens) + alphabet(word_counts, limit_alphabet, initial_alphabet):
        if token not in vocab:
            vocab[token] = len(tokens)
            tokens.append(token)
    words = [[vocab[c] for c in word if c in vocab] for word in word_counts]
    counts = list(word_counts.values())
    merges = merge_loop(words, counts, tokens, vocab, vocab_size, min_frequency, max_token_length)
    # model.merges is a map: a pair merged twice keeps its later rank
    rank = {(a, b): i for i, (a, b, _) in enumerate(merges)}
    ordered = sorted(rank, key=rank.__getitem__)
    return vocab, [(tokens[a], tokens[b]) for a, b in ordered]
