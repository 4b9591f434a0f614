"""Added special tokens, shared by every model: each is matched whole in the input before
the model runs, never split or merged (HF ``tokenizers``' added tokens, tiktoken's special
tokens).

A special token has an id: the id of the vocabulary key with its bytes if there is one
(as HF marks an existing token special), else the next id after the vocabulary and the
tokens added before it. Matching is leftmost, and the longest special token at a
position wins. ``str`` input is matched as text and ``bytes`` input as bytes, so offsets
stay in the input's own units.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping


class SpecialTokens:
    """The special tokens of one tokenizer: their bytes, ids and the patterns that find them."""

    def __init__(self) -> None:
        self.ids: dict[bytes, int] = {}  # token bytes -> id, in the order they were added
        self.by_id: dict[int, bytes] = {}
        self._text: re.Pattern[str] | None = None
        self._bytes: re.Pattern[bytes] | None = None

    def __bool__(self) -> bool:
        return bool(self.ids)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SpecialTokens) and self.ids == other.ids

    def add(self, tokens: Iterable[str | bytes], existing: Callable[[bytes], int | None], next_id: int) -> int:
        """Add ``tokens`` (str as UTF-8, or bytes); ``existing(bytes)`` is the vocabulary's id
        of such a key or None, ``next_id`` the first free id. Returns how many are new."""
        if isinstance(tokens, (str, bytes)):
            raise TypeError("tokens must be a list of special tokens, got one "
                            f"{type(tokens).__name__} (write [{tokens!r}])")
        if isinstance(tokens, Mapping):  # transformers' {"pad_token": "<pad>"}: its keys are roles, not tokens
            raise TypeError(f"tokens must be a list of special tokens, got a {type(tokens).__name__} (transformers' "
                            f"form, whose keys are roles): write {list(tokens.values())!r}")
        added = 0
        for i, token in enumerate(tokens):
            if isinstance(token, str):
                data = token.encode("utf-8", "surrogatepass")
            elif isinstance(token, (bytes, bytearray)):
                data = bytes(token)
            else:
                raise TypeError(f"tokens[{i}] must be a str or bytes, got {type(token).__name__}")
            if not data:
                raise ValueError(f"tokens[{i}] is empty: a special token needs at least one byte")
            if data in self.ids:
                continue
            kid = existing(data)
            if kid is None:
                kid = next_id
                next_id += 1
            self.ids[data] = kid
            self.by_id[kid] = data
            added += 1
        self._text = self._bytes = None
        return added

    def restore(self, pairs: Iterable[tuple[bytes, int]], existing: Callable[[bytes], int | None],
                vocabulary_size: int) -> None:
        """Put back the (bytes, id) pairs of a saved tokenizer, checked: added again in their
        order (``add``), each must get the id it was saved with, so that ``add`` and
        ``decode`` mean what they did when it was saved. ValueError names the first pair
        that does not."""
        pairs = [(bytes(data), int(kid)) for data, kid in pairs]
        self.add([data for data, _ in pairs], existing, vocabulary_size)
        for data, kid in pairs:
            if self.ids[data] != kid:
                raise ValueError(f"special token {data!r} has id {kid}, expected {self.ids[data]} "
                                 "(a vocabulary token's own id, or the next id after the vocabulary)")

    def new_ids(self, vocabulary_size: int) -> dict[int, bytes]:
        """The special tokens whose ids lie past the vocabulary (those it does not hold)."""
        return {kid: data for kid, data in self.by_id.items() if kid >= vocabulary_size}

    def pattern(self, text: str | bytes) -> re.Pattern | None:
        """The pattern that finds the special tokens in text of this type (longest first)."""
        if isinstance(text, str):
            if self._text is None:
                texts = []
                for data in self.ids:
                    try:  # a lone surrogate is kept as add took it (surrogatepass), as str input is encoded
                        texts.append(data.decode("utf-8", "surrogatepass"))
                    except UnicodeDecodeError:
                        continue  # bytes that are no text: matched in bytes input only
                self._text = _alternation(texts) if texts else re.compile(r"(?!x)x")
            return self._text
        if self._bytes is None:
            self._bytes = _alternation(list(self.ids))
        return self._bytes

    def split(self, text: str | bytes) -> list[str | bytes | int]:
        """``text`` cut at its special tokens: the pieces between them (non-empty) and, in
        their places, the special tokens' ids."""
        pattern = self.pattern(text)
        assert pattern is not None
        out: list[str | bytes | int] = []
        at = 0
        for m in pattern.finditer(text):
            if m.start() > at:
                out.append(text[at : m.start()])
            token = m.group(0)
            out.append(self.ids[_as_bytes(token)])
            at = m.end()
        if at < len(text) or not out:
            out.append(text[at:])
        return out

    def check_disallowed(self, text: str | bytes, disallowed: Iterable[str | bytes] | str, name: str = "text") -> None:
        """Raise ValueError if ``text`` holds one of the ``disallowed`` special tokens
        (``"all"``: any), naming it and its position (tiktoken's ``disallowed_special``)."""
        if not self.ids:
            return
        if disallowed == "all":
            refused = set(self.ids)
        else:  # a str or bytes is one token, not its chars
            tokens = [disallowed] if isinstance(disallowed, (str, bytes)) else disallowed
            refused = {_as_bytes(t) for t in tokens}
        if not refused:
            return
        pattern = self.pattern(text)
        assert pattern is not None
        for m in pattern.finditer(text):
            token = m.group(0)
            if _as_bytes(token) in refused:
                raise ValueError(f"{name} holds the special token {token!r} at {m.start()}: pass "
                                 "split_special_tokens=True to encode it as plain text, or leave it out of "
                                 "disallowed_special")


def _alternation(tokens: list) -> re.Pattern:
    ordered = sorted(tokens, key=len, reverse=True)  # at one position, the longest token wins
    return re.compile((b"|" if isinstance(ordered[0], bytes) else "|").join(re.escape(t) for t in ordered))


def _as_bytes(token: str | bytes) -> bytes:
    """A special token as the bytes it is kept as: a str's UTF-8 (lone surrogates kept)."""
    return token.encode("utf-8", "surrogatepass") if isinstance(token, str) else bytes(token)
