"""Streaming decode for every model: ids in, only whole chars out (generation shown as it
comes). A model whose compiled decoder streams (XBBPE's ``codec.StreamDecoder``) gives its
own; any other is streamed here over its ``decode(ids) -> bytes`` and Python's incremental
UTF-8 decoder, which holds back exactly the bytes of an unfinished char.
``SpecialsStreamDecoder`` puts added special tokens' ids around either."""

from __future__ import annotations

import codecs
import operator
from collections.abc import Iterable
from typing import Any, Protocol, SupportsIndex, cast

from ..errors import UnknownIdError


class StreamDecoder(Protocol):
    """What ``Tokenizer.decoder()`` returns."""

    errors: str

    def feed(self, ids: object) -> str: ...

    def flush(self) -> str: ...

    @property
    def pending(self) -> bytes: ...


def _one_or_many(ids: object) -> list:
    """One id (an int, a numpy integer, a 0-d array) as a list of it; a sequence as a list."""
    if getattr(ids, "ndim", None) == 0 or (hasattr(ids, "__index__") and not hasattr(ids, "__iter__")):
        return [ids]
    return list(cast(Iterable[Any], ids))


class ByteStreamDecoder:
    """The stream decoder of a model that decodes ids to bytes (``model.decode``)."""

    def __init__(self, model: Any, errors: str = "replace") -> None:
        self.model, self.errors = model, errors
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors)

    def feed(self, ids: object) -> str:
        """One id or an iterable of ids -> the whole chars they complete, as str."""
        return self._utf8.decode(self.model.decode(_one_or_many(ids)))

    def flush(self) -> str:
        """The bytes of an unfinished char, decoded with the errors policy; resets."""
        return self._utf8.decode(b"", final=True)

    @property
    def pending(self) -> bytes:
        """The bytes held back, waiting for the rest of their char."""
        return self._utf8.getstate()[0]

    def __reduce__(self) -> tuple:
        return (_byte_stream_decoder, (self.model, self.errors, self.pending))


def _byte_stream_decoder(model: Any, errors: str, pending: bytes) -> ByteStreamDecoder:
    decoder = ByteStreamDecoder(model, errors)
    decoder._utf8.decode(pending)  # held back again: an unfinished char's bytes are all it keeps
    return decoder


class SpecialsStreamDecoder:
    """The stream decoder of a tokenizer with added special tokens past its model's ids:
    such an id ends the char before it (flushed) and gives its token's text; the model's
    ids go to the model's own stream decoder (``inner``)."""

    def __init__(self, inner: Any, specials: dict[int, bytes], n_ids: int) -> None:
        self.inner, self.specials, self.n_ids = inner, specials, n_ids

    @property
    def errors(self) -> str:
        return self.inner.errors

    @property
    def pending(self) -> bytes:
        return self.inner.pending

    def flush(self) -> str:
        return self.inner.flush()

    def feed(self, ids: object) -> str:
        out: list[str] = []
        run: list = []
        start = 0  # the position of run[0] in ids
        for position, item in enumerate(cast(Iterable[SupportsIndex], _one_or_many(ids))):
            try:
                kid = operator.index(item)
            except TypeError:
                raise TypeError(f"ids must be integers, got {type(item).__name__} at position {position}") from None
            if kid in self.specials:
                out += (self._feed_run(run, start), self.flush(), self.specials[kid].decode("utf-8", self.errors))
                run, start = [], position + 1
            else:
                run.append(kid)
        out.append(self._feed_run(run, start))
        return "".join(out)

    def _feed_run(self, run: list[int], start: int) -> str:
        """The model's ids ``run`` (from ``start`` in the ids fed), an unknown one named by
        its position among all of them."""
        try:
            return self.inner.feed(run)
        except UnknownIdError as err:
            raise UnknownIdError(err.id, start + err.position, self.n_ids) from None
