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
from dataclasses import dataclass
from functools import lru_cache

from .token_text import token_text

MAX_GAP = 1 << 16  # ids a file may skip before a special token's (a hostile id must not size arrays)


class SpecialTokenError(ValueError):
    """A special token that cannot be added or restored; ``position`` is its index among
    those given, ``part`` what is wrong with it ("content" or "id")."""

    def __init__(self, message: str, position: int, part: str) -> None:
        super().__init__(message)
        self.position, self.part = position, part


class SpecialTokens:
    """The special tokens of one tokenizer: their bytes, ids and the patterns that find them."""

    def __init__(self) -> None:
        self.ids: dict[bytes, int] = {}  # token bytes -> id, in the order they were added
        self.by_id: dict[int, bytes] = {}
        self.tokens: frozenset[bytes] = frozenset()  # the keys of ids, for the patterns' cache

    def __bool__(self) -> bool:
        return bool(self.ids)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SpecialTokens) and self.ids == other.ids

    def add(self, tokens: Iterable[str | bytes], existing: Callable[[bytes], int | None], next_id: int) -> int:
        """Add ``tokens`` (str as UTF-8, or bytes); ``existing(bytes)`` is the vocabulary's id
        of such a key or None, ``next_id`` the first free id. Returns how many got a new
        id (a vocabulary key made special is not counted, as in transformers)."""
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
                raise SpecialTokenError(f"tokens[{i}] is empty: a special token needs at least one byte", i, "content")
            if data in self.ids:
                continue
            kid = existing(data)
            if kid is None:  # a new id: counted, as transformers counts the tokens it adds to the vocabulary
                kid = next_id
                next_id += 1
                added += 1
            self.ids[data] = kid
            self.by_id[kid] = data
        self.tokens = frozenset(self.ids)
        return added

    def restore(self, pairs: Iterable[tuple[bytes, int]], existing: Callable[[bytes], int | None],
                vocabulary_size: int, gaps: bool = False) -> None:
        """Put back the (bytes, id) pairs of a saved tokenizer, checked: each keeps the id it
        was saved with, which must be the vocabulary key's own id for a token the vocabulary
        holds, and otherwise the next id after the vocabulary and the tokens before it (what
        ``add`` gives, so that ``add`` and ``decode`` mean what they did when it was saved);
        with ``gaps`` (a file that names its ids, as tiktoken's do: ``o200k_base`` skips
        some), any free id past the vocabulary, at most ``MAX_GAP`` past the last.
        SpecialTokenError (a ValueError) names the first pair that breaks this, and its
        position. A token listed twice keeps its first id."""
        following = max(vocabulary_size, max(self.by_id, default=-1) + 1)
        for position, (data, kid) in enumerate(pairs):
            data, kid = bytes(data), int(kid)
            if not data:
                raise SpecialTokenError(f"tokens[{position}] is empty: a special token needs at least one byte",
                                        position, "content")
            if data in self.ids:
                continue
            own = existing(data)
            allowed = (kid == own if own is not None else
                       following <= kid < following + MAX_GAP and kid not in self.by_id if gaps else kid == following)
            if not allowed:
                expected = own if own is not None else following
                raise SpecialTokenError(f"token {token_text(data)!r} has id {kid}, expected {expected} (a vocabulary "
                                        "token's own id, or the next id after the vocabulary)", position, "id")
            self.ids[data] = kid
            self.by_id[kid] = data
            following = max(following, kid + 1)
        self.tokens = frozenset(self.ids)

    def new_ids(self, vocabulary_size: int) -> dict[int, bytes]:
        """The special tokens whose ids lie past the vocabulary (those it does not hold)."""
        return {kid: data for kid, data in self.by_id.items() if kid >= vocabulary_size}

    def split(self, text: str | bytes, only: frozenset[bytes] | None = None) -> list[str | bytes | int]:
        """``text`` cut at its special tokens (or at those in ``only``): the pieces between
        them (non-empty) and, in their places, the special tokens' ids."""
        pattern = _subset_pattern(self.tokens if only is None else only, isinstance(text, str))
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

    def holding(self, texts: list[str | bytes], only: frozenset[bytes]) -> list[int]:
        """The indices of the texts that hold one of the special tokens ``only`` (the others
        need no cutting: the model takes them whole, in one batch)."""
        probes = _probes(only)
        return [i for i, text in enumerate(texts) if holds(probes, text)]

    def probes(self) -> tuple[tuple[str, ...] | re.Pattern, tuple[bytes, ...] | re.Pattern]:
        """What tells that a str, or bytes, holds none of the special tokens (then the model
        takes it whole): a few tokens to look for by substring search, or one pattern for
        many (``TokenizerBase.encode`` and ``holds`` use them)."""
        return _probes(self.tokens)


def holds(probes: tuple, text: str | bytes) -> bool:
    """Whether ``text`` holds one of the special tokens of ``probes`` (``SpecialTokens.probes``)."""
    probe = probes[not isinstance(text, str)]
    if isinstance(probe, tuple):
        return any(token in text for token in probe)
    return probe.search(text) is not None


@lru_cache(maxsize=64)
def _probes(tokens: frozenset[bytes]) -> tuple[tuple[str, ...] | re.Pattern, tuple[bytes, ...] | re.Pattern]:
    if len(tokens) <= 8:  # a substring search per token beats a pattern's scan for a few of them
        return tuple(text for text in map(_as_str, tokens) if text is not None), tuple(tokens)
    return _subset_pattern(tokens, True), _subset_pattern(tokens, False)


@dataclass(frozen=True)
class CallSpecials:
    """What one encoding call does with the special tokens in its text (``call_specials``):
    those in ``disallowed`` raise, those in ``whole`` are matched whole (their ids), the
    rest are encoded by the model as plain text."""

    whole: frozenset[bytes]
    disallowed: frozenset[bytes]

    def check(self, text: str | bytes, name: str = "text") -> None:
        """ValueError when ``text`` holds a disallowed special token, naming it and its
        position (in the text's own units), as tiktoken refuses it."""
        if not self.disallowed:
            return
        m = _subset_pattern(self.disallowed, isinstance(text, str)).search(text)
        if m is not None:
            token, where = m.group(0), f"at {m.start()}"
            if isinstance(token, bytes):  # bytes input: the token as text, its place in bytes
                token, where = token.decode("utf-8", "backslashreplace"), f"at byte {m.start()}"
            raise ValueError(f"{name} holds the special token {token!r} {where}, which this call "
                             "disallows: pass allowed_special=[...] naming it to encode it as its id, or "
                             "split_special_tokens=True (encode_ordinary) to encode it as plain text")


def call_specials(specials: Iterable[bytes], split_special_tokens: bool, allowed_special: object,
                  disallowed_special: object) -> CallSpecials | None:
    """The special tokens of one call, from HF's and tiktoken's arguments; None when every
    special token is matched whole and none is disallowed (the default).

    ``split_special_tokens`` (HF): every one is plain text. ``allowed_special`` (tiktoken):
    None or ``"all"``, every one is matched whole; a collection, only those (naming a token
    that is no special token is a ValueError: a typo would otherwise let it through as
    text). ``disallowed_special``: the texts that make the call raise (any text, as in
    tiktoken), ``"all"`` meaning every special token not named in ``allowed_special`` (as in
    tiktoken, where ``"all"`` is the default)."""
    known = frozenset(specials)
    allowed = None if allowed_special is None or allowed_special == "all" else _named(
        allowed_special, "allowed_special", known)
    if disallowed_special == "all":
        disallowed = known - (allowed or frozenset())
    else:  # any text may be named, as in tiktoken: the call refuses input that holds it
        disallowed = _named(disallowed_special, "disallowed_special", None)
    if not split_special_tokens and allowed is None and not disallowed:
        return None
    whole = frozenset() if split_special_tokens else known if allowed is None else allowed
    return CallSpecials(whole, disallowed)


def is_default(split_special_tokens: bool, allowed_special: object, disallowed_special: object) -> bool:
    """Whether a call's arguments are the defaults (``call_specials`` would give None),
    told without building anything: the check every encoding call makes."""
    if split_special_tokens or allowed_special is not None:
        return False
    if isinstance(disallowed_special, (str, bytes)):
        return False
    try:
        return len(disallowed_special) == 0  # type: ignore[arg-type]
    except TypeError:
        return False  # an iterator, or something call_specials refuses


def _named(tokens: object, name: str, known: frozenset[bytes] | None) -> frozenset[bytes]:
    """The tokens an argument names (a str or bytes: one token, not its chars), each one
    of ``known`` unless that is None."""
    if isinstance(tokens, (str, bytes)):
        tokens = [tokens]
    if not isinstance(tokens, Iterable):
        raise TypeError(f"{name} must be 'all' or a collection of special tokens, got {type(tokens).__name__}")
    out = set()
    for token in tokens:
        if not isinstance(token, (str, bytes)):
            raise TypeError(f"{name} must hold special tokens as str or bytes, got {type(token).__name__}")
        data = _as_bytes(token)
        if not data:
            raise ValueError(f"{name}: an empty token would match everywhere")
        if known is not None and data not in known:
            raise ValueError(f"{name}: {token!r} is not a special token of this tokenizer "
                             f"(its special tokens: {sorted(known)!r})")
        out.add(data)
    return frozenset(out)


@lru_cache(maxsize=64)
def _subset_pattern(tokens: frozenset[bytes], text: bool) -> re.Pattern:
    """The pattern that finds these special tokens, in str (``text``) or bytes."""
    if not text:
        return _alternation(list(tokens)) if tokens else re.compile(rb"(?!x)x")
    texts = []
    for data in tokens:
        try:
            texts.append(data.decode("utf-8", "surrogatepass"))
        except UnicodeDecodeError:
            continue  # bytes that are no text: matched in bytes input only
    return _alternation(texts) if texts else re.compile(r"(?!x)x")


def _alternation(tokens: list) -> re.Pattern:
    ordered = sorted(tokens, key=len, reverse=True)  # at one position, the longest token wins
    return re.compile((b"|" if isinstance(ordered[0], bytes) else "|").join(re.escape(t) for t in ordered))


def _as_str(token: bytes) -> str | None:
    """A special token as a str matches it (None: bytes that are no text, never in a str)."""
    try:
        return token.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None


def _as_bytes(token: str | bytes) -> bytes:
    """A special token as the bytes it is kept as: a str's UTF-8 (lone surrogates kept)."""
    return token.encode("utf-8", "surrogatepass") if isinstance(token, str) else bytes(token)
