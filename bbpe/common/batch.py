"""Batches the HF way, shared by every model: a post-processing template (BOS/EOS),
truncation, padding, attention masks and offsets, as ``transformers`` tokenizers return
them (``input_ids``, ``attention_mask``, ``offset_mapping``).

Two shapes, each built in one compiled pass. The 2-D arrays (``return_tensors="np"``) are
filled from the flat form the codec gives a batch in (all ids one after the other, and
where each text's start) without the GIL (``common._fast.pad_rows``, big batches on several
threads, each its own rows), with no Python object per token. The lists take the
encoder's own lists (``encode_batch``) and frame them (``common._fast.frame_rows``): template,
truncation, padding and masks, in lists the collector need not track, as the encoder's.

``HFBatches`` is a mixin of a model's facade (``bbpe.Tokenizer``), which provides
``encode_batch``, ``_encode_flat(texts, threads, compat, specials)`` (the flat batch, the
call's special-token arguments applied), ``_token_lengths(ids)`` (bytes per token),
``decode``,
``_template``, ``bug_compat``, ``pad_id``, ``pad_token_id`` and ``padding_side``; a model
whose tokens do not lie end to end over its text gives its offsets (``_token_spans``).

Why this module is long: ``HFBatches.__call__`` is transformers' whole call (pairs, words,
truncation with a stride, padding, tensors, offsets), and its arguments are checked here,
where users meet them; the row-by-row forms are ``rows`` and ``words``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

from ._fast import _plain_text, frame_rows, longest_row, pad_rows, plain_texts
from .arguments import int_argument
from .outputs import BatchEncoding, finished
from .resources import usable_cpus
from .rows import Columns, Encoded, Row, build_rows, make_cut, padded
from .template import NO_TEMPLATE, Template
from .threads import shared_pool
from .words import word_texts

PADDING = (False, True, "longest", "max_length", "do_not_pad")
MAX_WIDTH = 1 << 40  # no row is padded past this: a width beyond it is a mistaken max_length
# each thread that fills a padded batch takes at least this many cells (256 KB of ids), so
# two threads from 65,536 cells. Filling is writing fresh pages, which the kernel zeroes on
# first touch, and two threads fault them in about twice as fast: batches of 1000 zh-large
# lines (~240,000 cells) gain from it
FILL_CELLS_PER_THREAD = 1 << 15


@dataclass(frozen=True)
class Shape:
    """How a call cuts and pads its rows: its options, checked (``check_options``)."""

    padding: str  # "none", "longest" or "max_length"
    truncate: bool
    max_length: int | None
    pad_to_multiple_of: int | None
    pad_id: int
    left: bool  # padding_side == "left"
    mask: bool  # return_attention_mask
    keep_end: bool = False  # truncation_side == "left": a cut text keeps its last ids


TRUNCATION = (None, False, True, "longest_first", "only_first", "only_second", "do_not_truncate")


def check_options(padding: object, truncation: object, max_length: object, pad_to_multiple_of: object,
                  return_tensors: object) -> tuple[str, str | None, int | None, int | None]:
    """Validate the call's options; returns (padding as 'none'|'longest'|'max_length',
    the truncation strategy or None, max_length, pad_to_multiple_of), the sizes as ints."""
    if padding not in PADDING:
        raise ValueError(f"padding must be one of False, True, 'longest', 'max_length', 'do_not_pad', got {padding!r}")
    if truncation not in TRUNCATION:
        raise ValueError("truncation must be None, False, True, 'longest_first', 'only_first', 'only_second' or "
                         f"'do_not_truncate', got {truncation!r}")
    if return_tensors not in (None, "np", "pt"):
        raise ValueError(f"return_tensors must be None, 'np' or 'pt', got {return_tensors!r}")
    max_length = int_argument("max_length", max_length, "a positive int", 1)
    pad_to_multiple_of = int_argument("pad_to_multiple_of", pad_to_multiple_of, "a positive int", 1)
    mode = "none" if padding in (False, "do_not_pad") else "max_length" if padding == "max_length" else "longest"
    if truncation is None:  # transformers: max_length alone, without padding, truncates (tokenization_utils_base)
        truncation = max_length is not None and padding is False
    strategy = None if truncation in (False, "do_not_truncate") else "longest_first" if truncation is True \
        else str(truncation)
    if mode == "max_length" and max_length is None:
        raise ValueError("padding='max_length' needs max_length")
    if strategy and max_length is None:
        raise ValueError("truncation needs max_length (bbpe models have no model_max_length)")
    if strategy and mode != "none" and pad_to_multiple_of and max_length % pad_to_multiple_of:  # type: ignore[operator]
        raise ValueError(f"truncation and padding are both on, but the truncation length ({max_length}) is not a "
                         f"multiple of pad_to_multiple_of ({pad_to_multiple_of}): rows would be longer than it "
                         "(transformers refuses it too)")
    return mode, strategy, max_length, pad_to_multiple_of


def row_bounds(longest: int, template: Template, shape: Shape) -> tuple[int, int]:
    """(cap, width) for a batch whose longest text has ``longest`` ids: how many ids of each
    text are kept (-1: all; the template's ids count against ``max_length``), and the width
    the rows are padded to, the template's ids included (-1: not padded). With
    ``padding="max_length"`` and no truncation a longer row stays longer, as in
    transformers."""
    cap = -1
    if shape.truncate:
        assert shape.max_length is not None
        if shape.max_length < template.extra:
            raise ValueError(f"max_length={shape.max_length} leaves no room for the template's {template.extra} ids")
        if shape.max_length - template.extra < longest:  # else nothing is cut (max_length may be 1e30)
            cap = longest = shape.max_length - template.extra
    if shape.padding == "none":
        return cap, -1
    width = longest + template.extra
    if shape.padding == "max_length":
        assert shape.max_length is not None
        width = shape.max_length
    multiple = shape.pad_to_multiple_of
    if multiple and width % multiple:
        width += multiple - width % multiple
    if width > MAX_WIDTH:
        raise ValueError(f"the rows would be padded to {width} ids, more than {MAX_WIDTH}: check max_length "
                         f"({shape.max_length}) and pad_to_multiple_of ({multiple})")
    return cap, width


def framed_lists(rows: list[list[int]], template: Template, shape: Shape,
                 spans: list[list[tuple[int, int]]] | None = None) -> dict[str, object]:
    """The batch of texts whose ids are ``rows`` as lists (``return_tensors=None``): each
    truncated, the template added, padded (``common._fast.frame_rows``, one C pass whose lists the
    collector need not track); with ``spans`` (each text's offsets) the offsets framed the
    same way, (0, 0) under template and padding tokens."""
    cap, width = row_bounds(max(map(len, rows), default=0), template, shape)
    left = shape.left
    ids, masks = frame_rows(rows, template.prefix, template.suffix, cap, width, shape.pad_id, left, shape.mask,
                            shape.keep_end)
    out: dict[str, object] = {"input_ids": ids}
    if masks is not None:
        out["attention_mask"] = masks
    if spans is not None:
        before, after, framed = [(0, 0)] * len(template.prefix), [(0, 0)] * len(template.suffix), []
        for pairs, row in zip(spans, ids):
            inner = before + kept_part(pairs, cap, shape.keep_end) + after
            padding_pairs = [(0, 0)] * (len(row) - len(inner))
            framed.append(padding_pairs + inner if left else inner + padding_pairs)
        out["offset_mapping"] = framed
    return out


def padded_arrays(flat: np.ndarray, starts: np.ndarray, template: Template, shape: Shape,
                  spans: np.ndarray | None = None, threads: int = 1) -> dict[str, np.ndarray]:
    """The batch of texts whose ids are ``flat[starts[i]:starts[i+1]]`` (and whose offsets,
    if asked, are ``spans[...]``, (n, 2)) as 2-D int64 arrays (``return_tensors="np"``):
    each truncated, the template added, padded. Template and padding tokens get offsets
    (0, 0). Unpadded, the texts must come out of one length."""
    flat, starts = np.ascontiguousarray(flat, dtype=np.uint32), np.ascontiguousarray(starts, dtype=np.int64)
    rows = starts.shape[0] - 1
    longest = longest_row(starts)
    cap, width = row_bounds(longest, template, shape)
    if width < 0:  # one array of rows: they must be of one length already
        kept = _kept(starts, cap)
        if np.unique(kept).shape[0] > 1:
            raise ValueError("return_tensors='np' needs texts of one length: pass padding=True")
        width = int(kept.max(initial=0)) + template.extra
    elif (most := (longest if cap < 0 else min(longest, cap)) + template.extra) > width:
        raise ValueError(f"return_tensors='np' needs rows of one length, and the longest holds {most} ids, more "
                         f"than max_length={shape.max_length}: pass truncation=True (transformers refuses it too)")
    ids = np.empty((rows, width), dtype=np.int64)
    masks = np.empty((rows, width), dtype=np.int64) if shape.mask else None
    prefix, suffix = template.arrays

    def fill(part: tuple[int, int]) -> None:  # rows a..b, without the GIL
        a, b = part
        pad_rows(flat, starts[a:], cap, prefix, suffix, shape.pad_id, shape.left, ids[a:b],
                 None if masks is None else masks[a:b], shape.keep_end)

    # the arrays are mostly padding, written into fresh pages: big ones are filled on
    # several threads, each its own rows
    parts = max(1, min(threads, rows, rows * width // FILL_CELLS_PER_THREAD))
    if parts == 1:
        fill((0, rows))
    else:
        list(shared_pool(parts).map(fill, pairwise(np.linspace(0, rows, parts + 1).astype(int).tolist())))
    out = {"input_ids": ids}
    if masks is not None:
        out["attention_mask"] = masks
    if spans is not None:
        out["offset_mapping"] = _offset_array(spans, starts, cap, width, template, shape)
    return out


def _kept(starts: np.ndarray, cap: int) -> np.ndarray:
    """How many ids of each text a batch keeps: all, or ``cap`` of them."""
    lengths = np.diff(starts)
    return lengths if cap < 0 else np.minimum(lengths, cap)


def kept_part(items: list, cap: int, keep_end: bool) -> list:
    """The items of one text a batch keeps: all (``cap`` < 0), the first ``cap`` or, with
    ``keep_end`` (truncating on the left), the last ``cap``."""
    if cap < 0 or len(items) <= cap:
        return items
    return items[len(items) - cap :] if keep_end else items[:cap]


def _offset_array(spans: np.ndarray, starts: np.ndarray, cap: int, width: int, template: Template,
                  shape: Shape) -> np.ndarray:
    """(rows, width, 2): each kept id's span in the column ``pad_rows`` put the id in."""
    keep = _kept(starts, cap)
    rows = keep.shape[0]
    # where each kept id went: row r, column shift + prefix + j
    shift = width - keep - template.extra if shape.left else np.zeros(rows, dtype=np.int64)
    row_of = np.repeat(np.arange(rows), keep)
    j = np.arange(row_of.shape[0]) - np.repeat(np.cumsum(keep) - keep, keep)
    first = starts[1:] - keep if shape.keep_end else starts[:-1]  # each text's first kept id
    offsets = np.zeros((rows, width, 2), dtype=np.int64)
    offsets[row_of, np.repeat(shift, keep) + len(template.prefix) + j] = spans[np.repeat(first, keep) + j]
    return offsets


def char_spans(text: str | bytes, token_lengths: np.ndarray) -> np.ndarray:
    """(n, 2) spans of tokens whose bytes, one after the other, are ``text``'s (UTF-8 for a
    str): in chars for a str, in bytes for bytes. A token that holds part of a char (a
    byte-fallback token) gets that whole char's span, as HF gives it."""
    ends = np.cumsum(token_lengths, dtype=np.int64)
    starts = ends - token_lengths
    if isinstance(text, bytes):
        return np.stack([starts, ends], axis=1)
    data = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    if ends.shape[0] and ends[-1] != data.shape[0]:
        raise ValueError("offsets: the tokens do not spell the text (bug_compat=True drops bytes, Q14)")
    char_of = np.cumsum((data & 0xC0) != 0x80, dtype=np.int64) - 1  # the char each byte is part of
    if not ends.shape[0]:
        return np.zeros((0, 2), dtype=np.int64)
    return np.stack([char_of[starts], char_of[ends - 1] + 1], axis=1)


def plain_batch(texts: list) -> list[str | bytes]:
    """The texts as the batch encoder takes them: the list itself when every item is exactly
    a str or bytes (a C loop), else each made one (``_plain_text``: numpy ``str_``, a
    bytearray...; TypeError naming ``texts[i]`` for anything else)."""
    if plain_texts(texts):
        return texts
    return [t if type(t) in (str, bytes) else _plain_text(t, f"texts[{i}]") for i, t in enumerate(texts)]


def _side(name: str, side: object) -> str:
    """A padding or truncation side, checked: "left" or "right", as transformers has them."""
    if side not in ("left", "right"):
        raise ValueError(f"{name} must be 'left' or 'right', got {side!r}")
    return side  # type: ignore[return-value]


def batch_of(texts: object) -> tuple[list, bool]:
    """(the texts as a list, whether one text was given rather than a batch)."""
    if isinstance(texts, (str, bytes, bytearray, memoryview)):
        return [texts], True
    if isinstance(texts, (list, tuple)):
        return list(texts), False
    try:
        return list(texts), False  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(f"text must be a str, bytes or a sequence of them, got {type(texts).__name__}") from None


def _words_batch(texts: object, name: str) -> tuple[list, bool]:
    """(the pre-split texts as a list, whether one text was given): one text is a list of
    words (str), a batch a list of them."""
    if isinstance(texts, (list, tuple)) and texts and all(isinstance(t, (list, tuple)) for t in texts):
        return list(texts), False
    if isinstance(texts, (list, tuple)) and all(isinstance(t, (str, bytes)) for t in texts):
        return [texts], True
    raise TypeError(f"{name} must be a list of words, or a batch of them, with is_split_into_words=True; "
                    f"got {type(texts).__name__}")


def _padded_rows(rows: list[Row], shape: Shape) -> Columns:
    """The rows (already truncated and framed) padded as ``shape`` says."""
    _, width = row_bounds(max((len(row.ids) for row in rows), default=0), NO_TEMPLATE,
                          replace(shape, truncate=False))
    return padded(rows, width, shape.pad_id, shape.left)


class HFBatches:
    """``tokenizer(texts, ...)`` and offsets (see the module)."""

    # what the facade provides (see the module)
    _template: Template
    # what add_special_tokens=False frames a text or a pair with: no ids, and the pair's
    # second text of type 1, unless the model says otherwise (RoBERTa's: type 0)
    _bare_template: Template = NO_TEMPLATE
    _padding_side: str
    _truncation_side: str
    _pad_token_id: int | None
    bug_compat: bool

    if TYPE_CHECKING:
        @property
        def pad_id(self) -> int | None: ...
        encode_batch: Callable[..., list]
        def _encode_flat(self, data: list, num_threads: int | None, compat: bool, specials: dict
                         ) -> tuple[np.ndarray, np.ndarray]: ...
        def _token_lengths(self, ids: np.ndarray) -> np.ndarray: ...
        def decode(self, ids: Iterable[int], errors: str = "replace", *, skip_special_tokens: bool = False
                   ) -> str: ...

    @property
    def padding_side(self) -> str:
        """Where padding goes: "right", or "left" (for generation), as in transformers."""
        return self._padding_side

    @padding_side.setter
    def padding_side(self, side: str) -> None:
        self._padding_side = _side("padding_side", side)

    @property
    def truncation_side(self) -> str:
        """Which end of a text truncation keeps: "right" cuts the end, "left" the beginning
        (keeping the last ids), as in transformers."""
        return self._truncation_side

    @truncation_side.setter
    def truncation_side(self, side: str) -> None:
        self._truncation_side = _side("truncation_side", side)

    @property
    def pad_token_id(self) -> int | None:
        """The id padding writes, as in transformers: the one set, else the model's own
        (``pad_id``; None for a model without one). Setting None goes back to the model's."""
        return self._padding_id()

    @pad_token_id.setter
    def pad_token_id(self, token_id: int | None) -> None:
        # 0..2**63-1: what the padded int64 arrays hold
        self._pad_token_id = int_argument("pad_token_id", token_id, "an int", 0, 1 << 63)

    def __call__(self, text: str | bytes | Sequence[str | bytes] | Sequence[Sequence[str]],
                 text_pair: str | bytes | Sequence[str | bytes] | Sequence[Sequence[str]] | None = None, *,
                 add_special_tokens: bool = True, padding: bool | str = False, truncation: bool | str | None = None,
                 max_length: int | None = None, stride: int = 0, is_split_into_words: bool = False,
                 pad_to_multiple_of: int | None = None, padding_side: str | None = None,
                 return_tensors: str | None = None, return_token_type_ids: bool | None = None,
                 return_attention_mask: bool | None = None, return_overflowing_tokens: bool = False,
                 return_special_tokens_mask: bool = False, return_offsets_mapping: bool = False,
                 return_length: bool = False, split_special_tokens: bool = False, allowed_special: object = None,
                 disallowed_special: object = (), num_threads: int | None = None) -> BatchEncoding:
        """Encode a text or a batch, or pairs of them (``text_pair``), as transformers
        tokenizers do: a ``BatchEncoding`` (a dict) with ``input_ids``, ``attention_mask``
        and what is asked for: ``token_type_ids`` (the template's type ids; returned for
        pairs unless False), ``special_tokens_mask`` (1 for template and padding tokens),
        ``offset_mapping`` ((start, end) per token in the input's chars, or bytes for
        bytes input; (0, 0) for template and padding tokens), ``length`` (each row's ids
        before padding), and with ``return_overflowing_tokens`` every window of ``max_length``
        ids that a text fills, each overlapping the one before by ``stride`` ids, with
        ``overflow_to_sample_mapping``. ``padding``: False, True or "longest",
        "max_length"; ``truncation`` cuts each text (a pair: ``"longest_first"``,
        ``"only_first"``, ``"only_second"``, as HF ``tokenizers``) to ``max_length`` ids
        (the template's counted) at its ``truncation_side``; left unset, it is on when
        ``max_length`` is given without padding, as in transformers; ``padding_side``
        overrides the tokenizer's for this call. ``is_split_into_words``: each text is a
        list of words, each encoded alone (``common.words``), and ``word_ids()`` tells
        each token's word. ``return_tensors``: "np" for 2-D int64 arrays, "pt" for torch
        tensors. Special tokens follow ``split_special_tokens``, ``allowed_special`` and
        ``disallowed_special`` as in ``encode``. A single text gives flat lists (or arrays
        of one row), as in transformers."""
        mode, strategy, max_length, pad_to_multiple_of = check_options(padding, truncation, max_length,
                                                                        pad_to_multiple_of, return_tensors)
        num_threads = int_argument("num_threads", num_threads, "a positive int", 1)
        stride = int_argument("stride", stride, "an int >= 0", 0) or 0
        side = self.padding_side if padding_side is None else _side("padding_side", padding_side)
        texts, single = _words_batch(text, "text") if is_split_into_words else batch_of(text)
        pairs = None
        if text_pair is not None:
            pairs, single_pair = _words_batch(text_pair, "text_pair") if is_split_into_words else batch_of(text_pair)
            if single_pair != single or len(pairs) != len(texts):
                raise ValueError(f"text_pair must match text: {len(texts)} text(s) and {len(pairs)} pair text(s)")
        if strategy == "only_second" and pairs is None:
            raise ValueError("truncation='only_second' needs text_pair: a single text has no second text to cut")
        template = self._template if add_special_tokens else self._bare_template
        mask = return_attention_mask is not False
        specials = {"split_special_tokens": split_special_tokens, "allowed_special": allowed_special,
                    "disallowed_special": disallowed_special}
        shape = Shape(mode, strategy is not None, max_length, pad_to_multiple_of, self._pad_for(mode),
                      side == "left", mask, self.truncation_side == "left")
        types = return_token_type_ids if return_token_type_ids is not None else pairs is not None
        if (pairs is not None or is_split_into_words or return_overflowing_tokens or types
                or return_special_tokens_mask or return_length):
            if return_overflowing_tokens and strategy is None:
                raise ValueError("return_overflowing_tokens needs truncation and max_length: the windows are "
                                 "max_length ids long")
            firsts = self._encoded(texts, is_split_into_words, specials, return_offsets_mapping, num_threads)
            seconds = None if pairs is None else self._encoded(pairs, is_split_into_words, specials,
                                                               return_offsets_mapping, num_threads)
            cut = make_cut(strategy, max_length, template.added(pairs is not None), shape.keep_end,
                           return_overflowing_tokens, stride)
            columns = _padded_rows(build_rows(firsts, seconds, template, cut), shape)
            wanted = {"token_type_ids": types, "attention_mask": mask,
                      "special_tokens_mask": return_special_tokens_mask, "offset_mapping": return_offsets_mapping,
                      "length": return_length, "overflow_to_sample_mapping": return_overflowing_tokens}
            out: dict[str, object] = {"input_ids": columns.ids}
            out.update((key, value) for key, value in columns.named().items() if wanted[key])
            single = single and not return_overflowing_tokens  # windows are rows, as transformers gives them
            return finished(out, single, return_tensors, columns.words if is_split_into_words else None)
        if return_tensors is not None:
            flat, starts, spans = self._flat_batch(texts, specials, return_offsets_mapping, num_threads)
            arrays = padded_arrays(flat, starts, template, shape, spans, num_threads or usable_cpus())
            return finished(arrays, False, return_tensors)  # a single text: one row, as transformers gives it
        if return_offsets_mapping:
            flat, starts, spans = self._flat_batch(texts, specials, True, num_threads)
            assert spans is not None
            bounds = list(pairwise(starts.tolist()))
            ids, pairs_ = flat.tolist(), [tuple(pair) for pair in spans.tolist()]
            out = framed_lists([ids[a:b] for a, b in bounds], template, shape, [pairs_[a:b] for a, b in bounds])
        else:  # the encoder's own lists, on threads
            out = framed_lists(self.encode_batch(texts, num_threads=num_threads, **specials), template, shape)
        return finished(out, single, None)

    def _encoded(self, texts: list, words: bool, specials: dict, offsets: bool, num_threads: int | None
                 ) -> list[Encoded]:
        """Each text's ids (and spans) as ``rows.Encoded``; with ``words``, each text is a
        list of words (``common.words``), each encoded alone, and every token knows its
        word; its spans are in its word's chars (the separator before it not counted),
        as transformers gives them for pre-split words."""
        if not words:
            lists = self._text_rows(texts, specials, offsets, num_threads)
            return [Encoded(ids, spans) for ids, spans in lists]
        pieces = [word_texts(item, f"text[{i}]") for i, item in enumerate(texts)]
        lists = self._text_rows([p for text in pieces for p in text], specials, offsets, num_threads)
        out, at = [], 0
        for text_pieces, item in zip(pieces, texts):
            row = Encoded([], [] if offsets else None, [])
            for index, (piece, word) in enumerate(zip(text_pieces, item)):
                ids, spans = lists[at]
                at += 1
                row.ids += ids
                row.words += [index] * len(ids)  # type: ignore[operator]
                if spans is not None:
                    lead = len(piece) - len(word)  # the separator before the word
                    row.spans += [(max(0, a - lead), max(0, b - lead)) for a, b in spans]  # type: ignore[operator]
            out.append(row)
        return out

    def _text_rows(self, texts: list, specials: dict, offsets: bool, num_threads: int | None
                   ) -> list[tuple[list[int], list[tuple[int, int]] | None]]:
        """(ids, spans or None) of each text, as lists."""
        if not offsets:
            return [(ids, None) for ids in self.encode_batch(texts, num_threads=num_threads, **specials)]
        flat, starts, spans = self._flat_batch(texts, specials, True, num_threads)
        assert spans is not None
        ids, pairs = flat.tolist(), [tuple(pair) for pair in spans.tolist()]
        return [(ids[a:b], pairs[a:b]) for a, b in pairwise(starts.tolist())]  # type: ignore[misc]

    def batch_decode(self, sequences: Iterable[Iterable[int]], errors: str = "replace", *,
                     skip_special_tokens: bool = False) -> list[str]:
        """``decode`` of each sequence of ids (a list of lists, a 2-D array or tensor, a
        ``BatchEncoding``'s ``input_ids``), as transformers' ``batch_decode``."""
        if isinstance(sequences, (str, bytes)) or not hasattr(sequences, "__iter__") or getattr(sequences, "ndim", 2) == 0:
            raise TypeError(f"batch_decode takes a batch of id sequences, got {type(sequences).__name__}")
        if getattr(sequences, "ndim", 2) != 2:
            raise TypeError(f"batch_decode takes a batch of id sequences (2-D), got a {sequences.ndim}-D "  # type: ignore[attr-defined]
                            "array: decode takes one sequence")
        return [self.decode(ids, errors, skip_special_tokens=skip_special_tokens) for ids in sequences]

    def encode_with_offsets(self, text: str | bytes, *, split_special_tokens: bool = False
                            ) -> tuple[list[int], list[tuple[int, int]]]:
        """(ids, offsets): each token's (start, end) in ``text``, in chars for a str and in
        bytes for bytes; a token that holds part of a char (a byte-fallback token) gets
        that char's span, so ``text[start:end]`` is the text each token is part of."""
        flat, _, spans = self._flat_batch([_plain_text(text, "text")], {"split_special_tokens": split_special_tokens},
                                          True, 1)
        assert spans is not None
        return flat.tolist(), [tuple(pair) for pair in spans.tolist()]  # type: ignore[misc]

    def _flat_batch(self, texts: list, specials: dict, offsets: bool, num_threads: int | None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(ids, starts, spans or None): every text's ids one after the other (text i's at
        ``ids[starts[i]:starts[i+1]]``), and with ``offsets`` their (n, 2) spans.
        ``specials``: the call's ``split_special_tokens``, ``allowed_special`` and
        ``disallowed_special``."""
        data = plain_batch(texts)
        if offsets and self.bug_compat:
            raise ValueError("offsets need bbpe's lossless encoding: bug_compat=True drops and pads bytes (Q14, Q20.1)")
        flat, starts = self._encode_flat(data, num_threads, False if offsets else self.bug_compat, specials)
        if not offsets:
            return flat, starts, None
        lengths = self._token_lengths(flat)
        spans = [self._token_spans(t, flat[a:b], lengths[a:b])
                 for t, a, b in zip(data, starts[:-1].tolist(), starts[1:].tolist())]
        return flat, starts, np.concatenate(spans) if spans else np.zeros((0, 2), dtype=np.int64)

    def _token_spans(self, text: str | bytes, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """The (n, 2) offsets of one text's tokens (``ids``, of ``lengths`` bytes each): the
        tokens laid end to end over the text (``char_spans``); a model whose tokens do not
        spell the text so (one that puts a space first) gives its own alignment."""
        return char_spans(text, lengths)

    def _padding_id(self) -> int | None:
        return self.pad_id if self._pad_token_id is None else self._pad_token_id

    def _pad_for(self, mode: str) -> int:
        """The id a call pads with (0, never written, when it does not pad); ValueError when
        it pads and neither the model nor ``pad_token_id`` names one, as transformers says."""
        pad = self._padding_id()
        if pad is None:
            if mode != "none":
                raise ValueError("padding needs a padding token, and this model has none: set one, e.g. "
                                 "tok.pad_token_id = tok.token_to_id('<|endoftext|>')")
            return 0
        return pad
