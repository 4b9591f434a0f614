"""GBK <-> UTF-8 exactly as the reference converts (QUIRKS Q19, reference README change 3).

On Simplified-Chinese Windows ``CP_ACP`` is code page 936; the reference oracle uses glibc
iconv's ``GBK`` for it and copies the Win32 pair MultiByteToWideChar +
WideCharToMultiByte: the input stops at its first NUL byte, an invalid or incomplete
sequence becomes U+FFFD and *one* byte is skipped, and a code point the target cannot hold
becomes ``?``.

Python's ``gbk`` codec is used (not ``gb2312``, which cannot encode ``·`` and decodes A1A4
as U+30FB; not ``gb18030``, which would write 4-byte sequences that code page 936 never
writes). Compared with glibc's GBK on every 1- and 2-byte sequence and every code point,
it differs in two places only, which the error handlers below patch: glibc maps byte 0x80
to and from U+20AC (€, as code page 936 does), and it writes nothing for the tag
characters U+E0000-U+E007F. Everything else, replacement and skipping included, was checked
to match a ctypes port of the reference's iconv loop on random byte strings.
"""

from __future__ import annotations

import codecs

_EURO = "\u20ac"
_TAGS = range(0xE0000, 0xE0080)


def _decode_error(err: UnicodeError) -> tuple[str, int]:
    # MultiByteToWideChar emulation: U+FFFD for the bad byte, then go on at the next byte
    assert isinstance(err, UnicodeDecodeError)
    if err.encoding == "gbk" and err.object[err.start] == 0x80:
        return _EURO, err.start + 1
    return "\ufffd", err.start + 1


def _encode_error(err: UnicodeError) -> tuple[bytes, int]:
    # WideCharToMultiByte emulation: the default char "?" for what GBK cannot hold
    assert isinstance(err, UnicodeEncodeError)
    ch = err.object[err.start]
    if ch == _EURO:
        return b"\x80", err.start + 1
    if ord(ch) in _TAGS:
        return b"", err.start + 1
    return b"?", err.start + 1


codecs.register_error("bbpe.xbbpe-decode", _decode_error)
codecs.register_error("bbpe.xbbpe-encode", _encode_error)


def _convert(data: bytes, source: str, target: str) -> bytes:
    end = data.find(b"\0")
    if end >= 0:
        data = data[:end]  # the Win32 calls get the length -1: the text ends at NUL
    return data.decode(source, "bbpe.xbbpe-decode").encode(target, "bbpe.xbbpe-encode")


def gbk_to_utf8(data: bytes) -> bytes:
    """``ToUTF8`` in GBK mode: ``'天地'.encode('gbk') -> '天地'.encode()``, b'\\x81' -> U+FFFD."""
    return _convert(data, "gbk", "utf-8")


def utf8_to_gbk(data: bytes) -> bytes:
    """``ToGBK`` in GBK mode: ``'天地'.encode() -> '天地'.encode('gbk')``, ``'・' -> b'?'``."""
    return _convert(data, "utf-8", "gbk")


def gbk_line_problem(name: str, lineno: int, line: bytes) -> str | None:
    """What ``gbk_problem`` finds in a line, as a message naming the file, the line and
    the byte; None for a line the conversion keeps as it is."""
    problem = gbk_problem(line)
    return None if problem is None else f"{name}: line {lineno}, byte {problem[0]}: {problem[1]}"


def gbk_problem(data: bytes) -> tuple[int, str] | None:
    """(offset, what) of the first byte the reference's ``ToUTF8`` replaces or drops, or
    None: ``b'a\\x81 b' -> (1, 'not GBK (becomes U+FFFD)')``, ``b'ab\\0c' -> (2, ...)``."""
    nul = data.find(b"\0")
    text = data if nul < 0 else data[:nul]
    start = 0
    while True:
        try:
            text[start:].decode("gbk")
            break
        except UnicodeDecodeError as err:
            at = start + err.start
            if text[at] != 0x80:  # glibc's GBK reads 0x80 as the euro sign
                return at, "not GBK (the reference turns it into U+FFFD)"
            start = at + 1
    if nul >= 0:
        return nul, "a NUL byte (the reference's conversion ends the text there)"
    return None
