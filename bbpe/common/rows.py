"""The batches of ``tokenizer(...)`` that the compiled framing does not build, shared by
every model: pairs of texts, token type ids, special-tokens masks, lengths, overflowing
windows with a stride and pre-split words, as transformers returns them.

Each text's ids (and spans, and word indices) arrive as lists; this module truncates them
(a pair as HF ``tokenizers`` truncates one, tokenizers/src/utils/truncation.rs), cuts
overflowing windows, puts the template around them (``Template.frame``) and pads every
column. It runs in Python, one list per row: these are the calls for fine-tuning data and
question answering, not the hot path of single texts, which ``batch.framed_lists`` and
``batch.padded_arrays`` build in compiled code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .template import Template

Span = tuple[int, int]


@dataclass
class Encoded:
    """One text's ids, with its spans (offsets) and word indices when asked."""

    ids: list[int]
    spans: list[Span] | None = None
    words: list[int] | None = None

    def part(self, start: int, stop: int) -> Encoded:
        """Items ``start:stop`` of every column."""
        return Encoded(self.ids[start:stop], None if self.spans is None else self.spans[start:stop],
                       None if self.words is None else self.words[start:stop])

    def __len__(self) -> int:
        return len(self.ids)


@dataclass
class Row:
    """One row of the batch before padding."""

    ids: list[int]
    types: list[int]
    special: list[int]
    spans: list[Span] | None
    words: list[int | None] | None
    sample: int  # the index of the text (or pair) it comes from


@dataclass(frozen=True)
class Cut:
    """How a call truncates: ``budget`` ids per text or pair (-1: no cut), which text of a
    pair gives them up (``strategy``), the end kept (``keep_end``), and the overflow."""

    budget: int = -1
    strategy: str = "longest_first"  # or "only_first", "only_second"
    keep_end: bool = False
    overflow: bool = False
    stride: int = 0


@dataclass
class Columns:
    """The rows' columns after padding, as lists of lists."""

    ids: list[list[int]] = field(default_factory=list)
    mask: list[list[int]] = field(default_factory=list)
    types: list[list[int]] = field(default_factory=list)
    special: list[list[int]] = field(default_factory=list)
    spans: list[list[Span]] = field(default_factory=list)
    words: list[list[int | None]] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    samples: list[int] = field(default_factory=list)

    def named(self) -> dict[str, list]:
        """The columns by the names transformers gives them (``input_ids`` apart)."""
        return {"token_type_ids": self.types, "attention_mask": self.mask, "special_tokens_mask": self.special,
                "offset_mapping": self.spans, "length": self.lengths, "overflow_to_sample_mapping": self.samples}


def make_cut(strategy: str | None, max_length: int | None, added: int, keep_end: bool, overflow: bool,
               stride: int) -> Cut:
    """How ``build_rows`` truncates, checked: ``max_length`` less the template's ``added``
    ids, and a stride shorter than that (transformers refuses it too)."""
    if strategy is None:
        return Cut()
    assert max_length is not None
    if max_length < added:
        raise ValueError(f"max_length={max_length} leaves no room for the template's {added} ids")
    if overflow and stride >= max_length - added:
        raise ValueError(f"stride={stride} must be less than the ids a window holds (max_length={max_length} "
                         f"less the template's {added}), as in transformers")
    return Cut(max_length - added, strategy, keep_end, overflow, stride)


def pair_lengths(n1: int, n2: int, budget: int) -> tuple[int, int]:
    """How many ids each text of a pair keeps under ``longest_first``, exactly as HF
    ``tokenizers`` computes it (truncation.rs, ``LongestFirst``): the shorter keeps all
    when it fits in half, else both get half (the longer the odd one)."""
    if n1 + n2 <= budget:
        return n1, n2
    swap = n1 > n2
    short, long = (n2, n1) if swap else (n1, n2)
    long = short if short > budget else max(short, budget - short)
    if short + long > budget:
        short = budget // 2
        long = short + budget % 2
    return (long, short) if swap else (short, long)


def windows(n: int, size: int, stride: int, keep_end: bool) -> list[tuple[int, int]]:
    """The (start, stop) windows of ``size`` ids that cover ``n`` ids, each overlapping
    the one before by ``stride``, as HF ``tokenizers``' ``Encoding::truncate`` cuts the
    overflow: from the start, or from the end with ``keep_end`` (left truncation)."""
    if n <= size:
        return [(0, n)]
    step = size - stride
    spans = []
    for start in range(0, n, step):
        spans.append((start, min(start + size, n)))
        if start + size >= n:
            break
    if keep_end:  # the same windows, counted from the end
        spans = [(n - stop, n - start) for start, stop in spans]
    return spans


def kept(item: Encoded, size: int, keep_end: bool) -> Encoded:
    """The first ``size`` items of a text, or its last with ``keep_end``."""
    if len(item) <= size:
        return item
    return item.part(len(item) - size, len(item)) if keep_end else item.part(0, size)


def build_rows(firsts: list[Encoded], seconds: list[Encoded] | None, template: Template, cut: Cut) -> list[Row]:
    """The rows of a batch of texts (``seconds`` None) or of pairs: truncated, cut into
    overflowing windows, in the template."""
    rows: list[Row] = []
    for sample, first in enumerate(firsts):
        second = None if seconds is None else seconds[sample]
        for a, b in _truncated(first, second, cut):
            rows.append(_framed(a, b, template, sample))
    return rows


def _truncated(first: Encoded, second: Encoded | None, cut: Cut) -> list[tuple[Encoded, Encoded | None]]:
    """The (first, second) parts a text or pair gives: itself cut to the budget, or with
    ``overflow`` every window."""
    if cut.budget < 0:
        return [(first, second)]
    if second is None:
        if not cut.overflow:
            return [(kept(first, cut.budget, cut.keep_end), None)]
        return [(first.part(a, b), None) for a, b in windows(len(first), cut.budget, cut.stride, cut.keep_end)]
    if cut.strategy == "longest_first":
        if cut.overflow:
            raise ValueError("return_overflowing_tokens with a pair needs truncation='only_first' or "
                             "'only_second' (which text overflows), as in transformers")
        n1, n2 = pair_lengths(len(first), len(second), cut.budget)
        return [(kept(first, n1, cut.keep_end), kept(second, n2, cut.keep_end))]
    # only_first / only_second: one text gives up what the other leaves
    cut_first = cut.strategy == "only_first"
    moving, fixed = (first, second) if cut_first else (second, first)
    size = cut.budget - len(fixed)
    if len(moving) + len(fixed) <= cut.budget:
        return [(first, second)]
    if size <= 0 or cut.overflow and size <= cut.stride:
        raise ValueError(f"truncation={cut.strategy!r}: the {'second' if cut_first else 'first'} text takes "
                         f"{len(fixed)} of the {cut.budget} ids left by max_length, leaving "
                         f"{max(size, 0)} for the {'first' if cut_first else 'second'}"
                         + (f" (no more than stride={cut.stride})" if cut.overflow and size > 0 else ""))
    parts = ([moving.part(a, b) for a, b in windows(len(moving), size, cut.stride, cut.keep_end)] if cut.overflow
             else [kept(moving, size, cut.keep_end)])
    return [(part, fixed) if cut_first else (fixed, part) for part in parts]


def _framed(a: Encoded, b: Encoded | None, template: Template, sample: int) -> Row:
    ids, types, special = template.frame(a.ids, None if b is None else b.ids)
    spans = words = None
    if a.spans is not None:
        framed, _, _ = template.frame(a.spans, None if b is None else b.spans)
        spans = [(0, 0) if is_special else span for span, is_special in zip(framed, special)]
    if a.words is not None:
        framed, _, _ = template.frame(a.words, None if b is None else b.words)
        words = [None if is_special else word for word, is_special in zip(framed, special)]
    return Row(ids, types, special, spans, words, sample)


def padded(rows: list[Row], width: int, pad_id: int, left: bool) -> Columns:
    """Every row padded to ``width`` (-1: not padded) on the left or right: ids with
    ``pad_id``, the mask and token types with 0, the special-tokens mask with 1 (as
    transformers pads them), offsets with (0, 0), word indices with None."""
    out = Columns()
    for row in rows:
        n = len(row.ids)
        pad = max(0, width - n)
        out.ids.append(_put(row.ids, pad_id, pad, left))
        out.mask.append(_put([1] * n, 0, pad, left))
        out.types.append(_put(row.types, 0, pad, left))
        out.special.append(_put(row.special, 1, pad, left))
        if row.spans is not None:
            out.spans.append(_put(row.spans, (0, 0), pad, left))
        if row.words is not None:
            out.words.append(_put(row.words, None, pad, left))
        out.lengths.append(n)
        out.samples.append(row.sample)
    return out


def _put(items: list, filler: object, pad: int, left: bool) -> list:
    """``items`` with ``pad`` fillers before (``left``) or after them."""
    return [filler] * pad + items if left else items + [filler] * pad
