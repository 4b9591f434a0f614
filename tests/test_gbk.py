"""GBK <-> UTF-8 as the reference converts: examples, and glibc's iconv itself when present."""

from __future__ import annotations

import ctypes
import ctypes.util
import random

import pytest

from bbpe.common.gbk import gbk_to_utf8, utf8_to_gbk


def test_examples():
    assert gbk_to_utf8("天地，人".encode("gbk")) == "天地，人".encode()
    assert utf8_to_gbk("天地，人".encode()) == "天地，人".encode("gbk")
    assert utf8_to_gbk("・".encode()) == b"?"  # U+30FB has no GBK code (Q19)
    assert gbk_to_utf8(b"a\x81 b") == "a\ufffd b".encode()  # bad byte: U+FFFD, skip one byte
    assert gbk_to_utf8(b"a\x81b") == "a\u4e65".encode()  # 81 62 is a GBK code
    assert gbk_to_utf8(b"ab\0cd") == b"ab"  # the Win32 calls stop at NUL
    assert gbk_to_utf8(b"\x80") == "€".encode() and utf8_to_gbk("€".encode()) == b"\x80"
    assert utf8_to_gbk(b"\xe4\xb8") == b"??"  # a cut UTF-8 char: one '?' per byte
    assert utf8_to_gbk("\U000e0041".encode()) == b""  # glibc writes nothing for tag chars


class _Iconv:
    """A ctypes port of the reference's XBBPE_IconvConvert loop (glibc iconv)."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.iconv_open.restype = ctypes.c_void_p
        libc.iconv_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        libc.iconv.restype = ctypes.c_size_t
        p = ctypes.POINTER
        libc.iconv.argtypes = [ctypes.c_void_p, p(ctypes.c_void_p), p(ctypes.c_size_t), p(ctypes.c_void_p), p(ctypes.c_size_t)]
        libc.iconv_close.argtypes = [ctypes.c_void_p]
        self.libc = libc
        if libc.iconv_open(b"GBK", b"UTF-8") in (None, ctypes.c_void_p(-1).value):
            raise OSError("no GBK in iconv")

    def _step(self, data: bytes, to: str, frm: str, to_wide: bool) -> bytes:
        libc = self.libc
        cd = libc.iconv_open(to.encode(), frm.encode())
        repl, skip = (b"\xfd\xff\x00\x00", 1) if to_wide else (b"?", 4)
        src = ctypes.create_string_buffer(data, len(data) + 1)
        ip, il = ctypes.c_void_p(ctypes.addressof(src)), ctypes.c_size_t(len(data))
        buf = ctypes.create_string_buffer(4096)
        out = bytearray()
        while il.value:
            op, ol = ctypes.c_void_p(ctypes.addressof(buf)), ctypes.c_size_t(4096)
            r = libc.iconv(cd, ctypes.byref(ip), ctypes.byref(il), ctypes.byref(op), ctypes.byref(ol))
            out += buf.raw[: 4096 - ol.value]
            if r == ctypes.c_size_t(-1).value and ctypes.get_errno() != 7:  # not E2BIG
                out += repl
                k = min(skip, il.value)
                ip.value += k
                il.value -= k
        libc.iconv_close(cd)
        return bytes(out)

    def convert(self, data: bytes, frm: str, to: str) -> bytes:
        data = data.split(b"\0")[0]
        return self._step(self._step(data, "UTF-32LE", frm, True), to, "UTF-32LE", False)


@pytest.fixture(scope="module")
def iconv():
    try:
        return _Iconv()
    except (OSError, AttributeError, TypeError) as err:
        pytest.skip(f"glibc iconv with GBK is not available: {err}")


def test_matches_glibc_on_random_bytes(iconv):
    rng = random.Random(7)
    alphabet = [bytes([i]) for i in range(256)] + [c.encode() for c in "天地€𡵓・"] + [
        b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\x80", b"\xe0\x80\x80", b"\xf3\xa0\x80\x81"]
    for _ in range(5000):
        data = b"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert gbk_to_utf8(data) == iconv.convert(data, "GBK", "UTF-8"), data
        assert utf8_to_gbk(data) == iconv.convert(data, "UTF-8", "GBK"), data


def test_matches_glibc_on_every_two_byte_code(iconv):
    codes = [bytes([a, b]) for a in range(0x81, 0xFF) for b in range(0x40, 0xFF)]
    joined = b"".join(codes)
    assert gbk_to_utf8(joined) == iconv.convert(joined, "GBK", "UTF-8")
