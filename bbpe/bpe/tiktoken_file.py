"""tiktoken's ranks file (``cl100k_base.tiktoken``): one ``base64(token) SP rank`` line per
token, the rank being the token's id and its merge priority (tiktoken/load.py,
``load_tiktoken_bpe`` and ``dump_tiktoken_bpe``). bbpe also reads it gzipped, which it
tells by the gzip magic, not by the name.

The file holds no pre-tokenizer pattern and no special tokens: the caller names them.
``read_tiktoken`` is stricter than tiktoken's loader, which skips blank lines, splits on
any white space and decodes base64 leniently: here every line is checked and a bad one is a
FormatError naming the file, the line's byte offset (in the decompressed text for a gzipped
file) and its number.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import os
import re
import warnings
import zlib
from collections.abc import Mapping
from typing import BinaryIO, Union

from ..common.files import atomic_write
from ..common.hf_spec import AddedToken
from ..errors import FormatError
from .patterns import resolve_pattern
from .spec import BpeSpec

Source = Union[str, "os.PathLike[str]", BinaryIO, Mapping[bytes, int]]
GZIP_MAGIC = b"\x1f\x8b"


def read_tiktoken(source: Source, name: str | None = None, *, pattern: str | None = None,
                  special_tokens: Mapping[str, int] | None = None) -> BpeSpec:
    """The spec of a tiktoken ranks file: ``source`` is its path (plain or gzipped), a
    binary file object, or the ranks as tiktoken holds them (``{token_bytes: rank}``).

    ``pattern`` is required: a name of bbpe.bpe.patterns.PATTERNS ("cl100k_base") or a
    regex. ``special_tokens`` ({text: id}, tiktoken's form) are the added tokens; their ids
    are past the ranks, or fill a gap in them (p50k_base's ``<|endoftext|>`` is rank 50256's
    place): any other gap is an error. ``name`` is the file's name in messages (default: the
    path, the file object's ``name``, or ``<ranks>``)."""
    if pattern is None:
        raise ValueError("a .tiktoken file holds only the ranks, no pre-tokenizer pattern: pass pattern= "
                         "(a name such as 'cl100k_base' or 'o200k_base', or the regex itself)")
    regex_pattern = resolve_pattern(pattern)
    if isinstance(source, Mapping):
        name = name or "<ranks>"
        by_rank = _check_mapping(source, name)
    else:
        name, data = _read_source(source, name)
        by_rank = _parse(_decompress(data, name), name)
    specials = _special_tokens(special_tokens, by_rank, name)
    tokens, unreachable = _dense_tokens(by_rank, specials, name)
    _warn_missing_bytes(tokens, name)
    added = tuple(AddedToken(text, kid, decoded=text.encode("utf-8", "surrogatepass"))
                  for text, kid in sorted(specials.items(), key=lambda item: item[1]))
    return BpeSpec(tokens=tokens, merges=None, pattern=regex_pattern, gaps=False, add_prefix_space=False,
                   ignore_merges=True, added_tokens=added, decoder="ByteLevel", text_form="bytes",
                   unreachable=unreachable)


def _warn_missing_bytes(tokens: tuple[bytes, ...], name: str) -> None:
    """A warning when some byte is no token: bbpe drops it from the texts it encodes, where
    tiktoken fails (a Rust panic, "no entry found for key")."""
    single = {token[0] for token in tokens if len(token) == 1}
    missing = [b for b in range(256) if b not in single]
    if missing:
        shown = ", ".join(f"0x{b:02X}" for b in missing[:8]) + (", ..." if len(missing) > 8 else "")
        warnings.warn(f"{name}: {len(missing)} of the 256 bytes are no token ({shown}): bbpe drops them from the "
                      "texts it encodes (tiktoken fails on such a text)", UserWarning, stacklevel=4)


def _read_source(source: object, name: str | None) -> tuple[str, bytes]:
    if isinstance(source, (bytes, bytearray, memoryview)):
        raise TypeError("read_tiktoken takes a path, a binary file object or a {bytes: rank} dict, not the file's "
                        "bytes (wrap them in io.BytesIO)")
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        with open(path, "rb") as f:  # OSError (missing, a directory, unreadable) names the path
            return name or str(path), f.read()
    if isinstance(source, io.TextIOBase):
        raise TypeError("read_tiktoken needs a binary file: open it in 'rb' mode")
    read = getattr(source, "read", None)
    if read is None:
        raise TypeError(f"read_tiktoken takes a path, a binary file object or a {{bytes: rank}} dict, "
                        f"got {type(source).__name__}")
    data = read()
    name = name or str(getattr(source, "name", "<file>"))
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"{name}: read() gave {type(data).__name__}, not bytes: open the file in 'rb' mode")
    return name, bytes(data)


def _decompress(data: bytes, name: str) -> bytes:
    if not data:
        raise FormatError(name, 0, "empty file: a .tiktoken file holds one 'base64 rank' line per token")
    if not data.startswith(GZIP_MAGIC):
        return data
    try:
        plain = gzip.decompress(data)
    except EOFError:
        raise FormatError(name, len(data), "truncated gzip data (the file ends before the end of the stream)") from None
    except (OSError, zlib.error) as err:  # gzip.BadGzipFile is an OSError
        raise FormatError(name, 0, f"not valid gzip data ({err})") from None
    if not plain:
        raise FormatError(name, 0, "empty file (gzipped): a .tiktoken file holds one 'base64 rank' line per token")
    return plain


def _shown(value: bytes, limit: int = 60) -> str:
    return repr(value if len(value) <= limit else value[:limit] + b"...")


# a whole file of well-formed lines (one C-level scan): what _parse checks line by line first
_WELL_FORMED = re.compile(rb"(?:[A-Za-z0-9+/]+={0,2} [0-9]{1,12}\n)*(?:[A-Za-z0-9+/]+={0,2} [0-9]{1,12}\n?)?")


def _parse(data: bytes, name: str) -> dict[int, tuple[bytes, int]]:
    """rank -> (token, line number), each line checked: ``base64 SP rank`` (CRLF allowed),
    valid base64 of a non-empty token, a rank of decimal digits, no rank or token twice."""
    if data.lstrip()[:1] in (b"{", b"["):
        raise FormatError(name, 0, "this is a JSON file, not a .tiktoken ranks file")
    fast = _parse_well_formed(data)
    if fast is not None:
        return fast
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the newline that ends the last line
    by_rank: dict[int, tuple[bytes, int]] = {}
    by_token: dict[bytes, int] = {}
    offset = 0
    for number, line in enumerate(lines, 1):
        at = offset
        offset += len(line) + 1
        if line.endswith(b"\r"):
            line = line[:-1]
        encoded, space, digits = line.partition(b" ")
        if not space or not digits.isdigit() or not encoded:
            raise FormatError(name, at, f"line {number}: {_shown(line)} is not 'base64 rank' (a base64 token, "
                                        "one space, a rank of decimal digits)")
        try:
            token = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError) as err:
            raise FormatError(name, at, f"line {number}: {_shown(encoded)} is not valid base64 ({err})") from None
        if not token:
            raise FormatError(name, at, f"line {number}: {_shown(encoded)} is an empty token")
        if len(digits) > 12:  # (int() of thousands of digits is slow, then refused by Python itself)
            raise FormatError(name, at, f"line {number}: the rank {_shown(digits)} is far past any vocabulary")
        rank = int(digits)
        if rank in by_rank:
            raise FormatError(name, at, f"line {number}: rank {rank} is already the rank of line {by_rank[rank][1]}")
        first = by_token.setdefault(token, number)
        if first != number:
            raise FormatError(name, at, f"line {number}: the token {_shown(token)} (base64 {_shown(encoded)}) is "
                                        f"already on line {first}")
        by_rank[rank] = (token, number)
    return by_rank


def _parse_well_formed(data: bytes) -> dict[int, tuple[bytes, int]] | None:
    """``_parse``'s result for a file that passes every check (tiktoken's own files), taken
    a column at a time, or None for any other file: the line-by-line reading then says
    where and what is wrong."""
    if not data or _WELL_FORMED.fullmatch(data) is None:
        return None
    columns = data.split()
    encoded, digits = columns[0::2], columns[1::2]
    try:  # (b64decode(validate=True) is this after the check the pattern made of every token)
        tokens = list(map(binascii.a2b_base64, encoded))
    except (binascii.Error, ValueError):
        return None
    ranks = list(map(int, digits))
    if not all(tokens) or len(set(tokens)) != len(tokens) or len(set(ranks)) != len(ranks):
        return None
    return {rank: (token, number) for number, (rank, token) in enumerate(zip(ranks, tokens), 1)}


def _check_mapping(ranks: Mapping[bytes, int], name: str) -> dict[int, tuple[bytes, int]]:
    """rank -> (token, position) of tiktoken's ``{token: rank}``, each entry checked."""
    by_rank: dict[int, tuple[bytes, int]] = {}
    for position, (token, rank) in enumerate(ranks.items()):
        where = f"{name}[{_shown(token) if isinstance(token, bytes) else repr(token)}]"
        if not isinstance(token, bytes) or not token:
            raise ValueError(f"{where}: a token must be non-empty bytes, got {token!r}")
        if not isinstance(rank, int) or isinstance(rank, bool) or rank < 0:
            raise ValueError(f"{where}: the rank must be an int >= 0, got {rank!r}")
        if rank in by_rank:
            raise ValueError(f"{where}: rank {rank} is already the rank of {_shown(by_rank[rank][0])}")
        by_rank[rank] = (token, position)
    if not by_rank:
        raise ValueError(f"{name}: no ranks")
    return by_rank


def _special_tokens(specials: Mapping[str, int] | None, by_rank: Mapping[int, tuple[bytes, int]],
                    name: str) -> dict[str, int]:
    """The special tokens, checked: non-empty str, an int id that is no rank and no other's."""
    if specials is None:
        return {}
    if not isinstance(specials, Mapping):
        raise TypeError(f"special_tokens must be a {{str: id}} dict, got {type(specials).__name__}")
    seen: dict[int, str] = {}
    for text, kid in specials.items():
        if not isinstance(text, str) or not text:
            raise ValueError(f"special_tokens: {text!r} is not a non-empty str")
        if not isinstance(kid, int) or isinstance(kid, bool) or kid < 0:
            raise ValueError(f"special_tokens[{text!r}]: the id must be an int >= 0, got {kid!r}")
        if kid in by_rank:
            raise ValueError(f"special_tokens[{text!r}]: id {kid} is the rank of the token "
                             f"{_shown(by_rank[kid][0])} in {name}")
        if kid in seen:
            raise ValueError(f"special_tokens[{text!r}]: id {kid} is already the id of {seen[kid]!r}")
        seen[kid] = text
    return dict(specials)


def _dense_tokens(by_rank: Mapping[int, tuple[bytes, int]], specials: Mapping[str, int],
                  name: str) -> tuple[tuple[bytes, ...], frozenset[int]]:
    """The tokens by rank 0..n-1; a gap must be filled by a special token (its bytes take the
    place, unreachable by merging), else FormatError naming the missing rank."""
    top = max(by_rank)
    filling = {kid: text for text, kid in specials.items() if kid < top and kid not in by_rank}
    missing = top + 1 - len(by_rank) - len(filling)  # (counted, not listed: a rank of 10**9 is one line)
    if missing:
        first = next(rank for rank in range(top + 1) if rank not in by_rank and rank not in filling)
        over = by_rank[top][1]
        raise FormatError(name, 0, f"rank {first} is missing ({missing} missing in all): the ranks must be "
                                   f"0..n-1, and line {over} has rank {top} with {len(by_rank)} ranks in the file")
    tokens = tuple(by_rank[rank][0] if rank in by_rank else filling[rank].encode("utf-8", "surrogatepass")
                   for rank in range(top + 1))
    if filling:
        ranked = {token: rank for rank, (token, _) in by_rank.items()}
        for kid, text in filling.items():
            if tokens[kid] in ranked:
                raise ValueError(f"special_tokens[{text!r}]: it fills the gap at rank {kid}, but its bytes are "
                                 f"those of rank {ranked[tokens[kid]]} in {name}")
    return tokens, frozenset(filling)


def tiktoken_bytes(spec: BpeSpec) -> bytes:
    """The ranks file of ``spec`` (tiktoken's ``dump_tiktoken_bpe`` format): its tokens by
    id, less the gaps that special tokens fill (``unreachable``). Its pattern and added
    tokens are not in it: a ranks file has no place for them."""
    if spec.merges is not None:
        raise ValueError("this tokenizer has HF merges, whose ids are not merge ranks: it cannot be written as "
                         "tiktoken ranks (write it with to_tokenizer_json)")
    return b"".join(base64.b64encode(token) + b" %d\n" % kid
                    for kid, token in enumerate(spec.tokens) if kid not in spec.unreachable)


def write_tiktoken(spec: BpeSpec, target: str | os.PathLike[str] | BinaryIO, *, compress: bool = False) -> None:
    """Write ``spec``'s ranks (``tiktoken_bytes``) to a binary file object, or to a path
    atomically (a temporary file renamed over it: never seen half written). ``compress``
    gzips it (with no time stamp, so the same ranks give the same bytes)."""
    data = tiktoken_bytes(spec)
    if compress:
        data = gzip.compress(data, mtime=0)
    if isinstance(target, (str, os.PathLike)):
        def write(f: BinaryIO) -> None:
            f.write(data)
        atomic_write(target, write)
    else:
        target.write(data)
