"""GPT-2's byte-to-unicode map: how HF ``tokenizers`` writes a byte-level token's bytes as a str.

Every byte is shown as one char: the printable Latin-1 bytes (``!``..``~``, ``¡``..``¬``,
``®``..``ÿ``) as themselves, the 68 others (controls, space, U+00AD) as U+0100.. in byte
order, so the space is ``Ġ`` (U+0120) and the newline ``Ċ`` (U+010A). This is
``bytes_char`` of tokenizers/src/pre_tokenizers/byte_level.rs (openai/gpt-2's
``bytes_to_unicode``); ``vocab.json``, ``merges.txt`` and the ``model`` of a
``tokenizer.json`` spell their tokens in it.
"""

from __future__ import annotations

_PRINTABLE = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]


def _byte_chars() -> list[str]:
    chars = [""] * 256
    for b in _PRINTABLE:
        chars[b] = chr(b)
    shifted = 0
    for b in range(256):
        if not chars[b]:
            chars[b] = chr(256 + shifted)
            shifted += 1
    return chars


BYTE_CHARS: tuple[str, ...] = tuple(_byte_chars())  # byte -> its char
ALPHABET: frozenset[str] = frozenset(BYTE_CHARS)
CHAR_BYTES: dict[str, int] = {c: b for b, c in enumerate(BYTE_CHARS)}

# str.translate tables: bytes (read as Latin-1) -> chars, and chars -> Latin-1 chars. The
# second deletes the Latin-1 chars that are not in the alphabet (the space, the controls),
# so that a string holding one comes out shorter and is caught (``to_bytes``).
_TO_TEXT = {b: c for b, c in enumerate(BYTE_CHARS)}
_TO_LATIN1: dict[int, int | None] = {ord(c): b for b, c in enumerate(BYTE_CHARS)}
_TO_LATIN1.update({b: None for b in range(256) if chr(b) not in ALPHABET})


def to_text(data: bytes) -> str:
    """``data`` as byte-level chars: ``to_text(b" hi") == "Ġhi"``."""
    return data.decode("latin-1").translate(_TO_TEXT)


def to_bytes(text: str) -> bytes | None:
    """The bytes that ``text`` spells in byte-level chars, or None when a char of it is
    not in the alphabet (``foreign_char`` says which)."""
    latin1 = text.translate(_TO_LATIN1)
    if len(latin1) != len(text):
        return None
    try:
        return latin1.encode("latin-1")
    except UnicodeEncodeError:
        return None


def foreign_char(text: str) -> str | None:
    """The first char of ``text`` that is not in the byte-level alphabet, or None."""
    return next((c for c in text if c not in ALPHABET), None)


def decoded_bytes(text: str) -> bytes:
    """What HF's ByteLevel decoder gives for one token's str: its chars' bytes when all are
    in the alphabet, else its UTF-8 unchanged (``Decoder for ByteLevel`` in byte_level.rs:
    ``try_fold`` over the chars, ``unwrap_or_else(t.as_bytes())``). An added token
    ``"café"`` is all alphabet chars, so it decodes to ``b"caf\\xe9"``, not its UTF-8."""
    data = to_bytes(text)
    return text.encode("utf-8", "surrogatepass") if data is None else data
