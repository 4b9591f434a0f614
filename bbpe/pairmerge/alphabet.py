"""The first tokens of a pair-merge trainer: the alphabet HF's trainers keep (trainer.rs
``compute_alphabet``), shared by every model trained on the engine."""

from __future__ import annotations

from collections.abc import Mapping

INFINITE = 1 << 64  # HF counts an initial_alphabet char as usize::MAX


def kept_alphabet(char_counts: Mapping[str, int], limit_alphabet: int | None) -> list[str]:
    """The chars kept (the most frequent ``limit_alphabet``; ties: the smaller code points,
    where HF drops in hash-map order), sorted by code point. An initial_alphabet char
    counts ``INFINITE``."""
    kept = sorted(char_counts, key=lambda c: (char_counts[c], -ord(c)))
    if limit_alphabet is not None and len(kept) > limit_alphabet:
        kept = kept[len(kept) - limit_alphabet:]
    return sorted(kept)
