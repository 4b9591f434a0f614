"""Tokens as text: the one invertible form in which every model shows a token's bytes.

A token is bytes; ``get_vocab``, ``id_to_token`` and ``convert_ids_to_tokens`` show it as a
str, as HF ``tokenizers`` and sentencepiece do. Bytes that are valid UTF-8 are shown as
their text; every byte that is not part of a valid UTF-8 sequence is shown as
``<0xHH>`` (upper-case hex, sentencepiece's byte pieces). So that the form stays
invertible, a ``<`` of the text that starts ``<0xHH>`` is itself shown as ``<0x3C>``: a
token of the six bytes ``<0xE5>`` reads ``<0x3C>0xE5>``, the byte 0xE5 alone ``<0xE5>``.
``token_bytes(token_text(b)) == b`` for all bytes ``b``, and two tokens never read the same.
"""

from __future__ import annotations

import re

_ESCAPE = re.compile(r"<0x([0-9A-F]{2})>")


def token_text(data: bytes) -> str:
    """``data`` in the invertible form above."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        if "<0x" not in text:
            return text
    parts: list[str] = []
    rest = data
    while rest:
        try:
            valid, bad, rest = rest.decode("utf-8"), b"", b""
        except UnicodeDecodeError as err:
            valid, bad, rest = rest[: err.start].decode("utf-8"), rest[err.start : err.end], rest[err.end :]
        # a literal "<0xHH>" is ASCII, so always whole in one valid stretch
        parts.append(_ESCAPE.sub(lambda m: "<0x3C>" + m.group(0)[1:], valid))
        parts.append("".join(f"<0x{b:02X}>" for b in bad))
    return "".join(parts)


def token_bytes(text: str) -> bytes:
    """The bytes that ``token_text`` shows as ``text`` (its inverse)."""
    if "<0x" not in text:
        return text.encode("utf-8", "surrogatepass")
    out = bytearray()
    at = 0
    for m in _ESCAPE.finditer(text):
        out += text[at : m.start()].encode("utf-8", "surrogatepass")
        out.append(int(m.group(1), 16))
        at = m.end()
    out += text[at:].encode("utf-8", "surrogatepass")
    return bytes(out)
