"""The ``bbpe`` command: train, encode, decode and inspect ``.bin`` files.

The verbs print what the reference driver ``xbbpe`` prints, byte for byte: ``encode`` one
line of space-separated ids per input line, ``decode`` one line of text per line of ids,
``vocab``/``trainenc``/``special`` the dumps. Every file a verb reads may be ``-``, standard
input: a corpus, an input, or a model from a pipe (``-m -``), but not a model and an input at
once. Errors are one line on stderr and exit code 1 (2 for usage errors); no traceback.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import warnings
from collections.abc import Iterator
from typing import BinaryIO

# The command never calls BLAS, and numpy's OpenBLAS starts a thread per core that
# busy-waits for work for a while after start-up: on a 2-core machine that takes a core
# from a training run (about 0.1 s on zh-large). A library must leave this to its user; a
# command may set it for its own process, before numpy is first imported (``bbpe`` imports
# nothing heavy until used, so this module runs first under ``bbpe`` and ``python -m bbpe``).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from . import __version__
from .common.blocks import read_chunks, split_lines, windows_text
from .common.gbk import gbk_line_problem
from .common.resources import fix_mmap_threshold
from .errors import CorpusError, FormatError, GBKError, InsufficientMemoryError, UnknownIdError
from .tokenizer import Tokenizer
from .xbbpe.tokenizer import DEFAULT_CORPUS, DEFAULT_VOCAB_SIZE, XBBPE

_ID_TOKEN = re.compile(rb"[+-]?[0-9]+\Z")


class CliError(Exception):
    """An error the CLI reports as one line."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bbpe", description="Byte-level BPE for Chinese and mixed text (an exact port of XBBPE).")
    p.add_argument("--version", action="version", version=f"bbpe {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    t = sub.add_parser("train", help="train a vocabulary and write a .bin (as `xbbpe train`)")
    t.add_argument("corpus", nargs="*", help="UTF-8 corpus files, one text per line, trained on one after the other "
                   f"as `cat` joins them; - reads stdin (default: the bundled {os.path.basename(DEFAULT_CORPUS)})")
    t.add_argument("--vocab-size", "-n", default=str(DEFAULT_VOCAB_SIZE), metavar="N",
                   help=f"vocabulary size; 0 means no limit (default {DEFAULT_VOCAB_SIZE})")
    t.add_argument("-o", "--output", default="xBBPE.bin",
                   help="output .bin, or bbpe's JSON file for a name ending in .json (default xBBPE.bin)")
    t.add_argument("--gbk", action="store_true", help="the corpus is GBK")
    t.add_argument("--bug-compat", action="store_true",
                   help="as the reference: a missing corpus is empty, N is cast to uint32")
    t.add_argument("--lossless-trainenc", action="store_true",
                   help="store lossless training encodings instead of the reference's (Q14)")
    t.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    t.add_argument("--windows-text", action="store_true",
                   help="read the corpus as the Windows build does: CRLF -> LF, Ctrl-Z ends it")
    t.add_argument("--strict", action="store_true",
                   help="refuse a corpus that is not UTF-8 (with --gbk: not GBK) instead of warning")
    t.add_argument("--no-encodings", action="store_true",
                   help="write a vocabulary-only .bin, without the stored training encodings (the C++ loads it too)")
    t.add_argument("--no-memory-check", action="store_true",
                   help="train even if the corpus looks too big for the memory available")

    e = sub.add_parser("encode", help="text lines -> lines of ids (as `xbbpe encode`)")
    e.add_argument("-m", "--model", required=True, help=".bin or JSON model file (- reads stdin)")
    e.add_argument("file", nargs="?", help="input (default or -: stdin)")
    e.add_argument("--gbk", action="store_true", help="the input is GBK")
    e.add_argument("--bug-compat", action="store_true", help="reproduce the reference's lossy encoding (Q14, Q20.1)")
    e.add_argument("--windows-text", action="store_true", help="read the input as the Windows build does (CRLF -> LF)")
    e.add_argument("--strict", action="store_true", help="with --gbk: refuse input that is not GBK")
    e.add_argument("--output-format", choices=("id", "piece"), default="id",
                   help="id: the ids (as `xbbpe encode`); piece: the tokens as text, <0xHH> for a byte that is "
                        "not part of a UTF-8 char (as `spm_encode --output_format=piece`)")

    d = sub.add_parser("decode", help="lines of ids -> text lines (as `xbbpe decode`)")
    d.add_argument("-m", "--model", required=True, help=".bin or JSON model file (- reads stdin)")
    d.add_argument("file", nargs="?", help="input (default or -: stdin)")
    d.add_argument("--gbk", action="store_true", help="write GBK")

    for name, text in (("vocab", "every entry: id<TAB>len<TAB>hex, by id"),
                       ("trainenc", "the stored training encodings"),
                       ("special", "the PAD BOS EOS ids"),
                       ("info", "a readable summary")):
        v = sub.add_parser(name, help=text)
        v.add_argument("model", help=".bin or JSON model file (- reads stdin)")
    return p


def _is_stdin(path: str | None) -> bool:
    return path is None or path == "-"


def _input(path: str | None, windows: bool = False) -> Iterator[bytes]:
    """The lines of an input file; none or ``-`` is standard input."""
    chunks = iter(lambda: sys.stdin.buffer.read(1 << 16), b"") if path is None or path == "-" else read_chunks(path)
    return split_lines(windows_text(chunks) if windows else chunks)


def _model_bytes(path: str) -> bytes:
    """A model file's bytes; ``-`` reads it from standard input (``... | bbpe vocab -``)."""
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as f:
        return f.read()


def _load(path: str, bug_compat: bool = False) -> Tokenizer:
    """The model a verb names (``_model_bytes``), a ``.bin`` or bbpe's JSON file."""
    return Tokenizer.from_bytes(_model_bytes(path), bug_compat=bug_compat, name=_shown(path))


def _load_xbbpe(path: str) -> XBBPE:
    """An XBBPE model (the verbs that mirror the C++ driver: stored encodings, its special
    ids); another model's file is a FormatError saying which it holds."""
    tok = XBBPE.from_bytes(_model_bytes(path), name=_shown(path))
    assert isinstance(tok, XBBPE)
    return tok


def _load_beside_input(args: argparse.Namespace, bug_compat: bool = False) -> Tokenizer:
    """``-m``'s model for a verb that also reads an input: stdin can be only one of them
    (the model would take all of it, and leave the input empty)."""
    if args.model == "-" and _is_stdin(args.file):
        raise CliError("-m -: the model and the input cannot both be standard input (the input is stdin when no "
                       "file is given): give one of them as a file")
    return _load(args.model, bug_compat)


def _shown(path: str | None) -> str:
    return "<stdin>" if _is_stdin(path) else str(path)


def _ids_line(ids: list[int]) -> bytes:
    return " ".join(map(str, ids)).encode() + b"\n"


def _pieces_line(tok: Tokenizer, ids: list[int]) -> bytes:
    # pieces are separated by spaces: a space or LF inside one is written as its byte form,
    # which token_to_id reads back as well
    pieces = (piece.replace(" ", "<0x20>").replace("\n", "<0x0A>") for piece in tok.convert_ids_to_tokens(ids))
    return " ".join(pieces).encode() + b"\n"


def _parse_ids(line: bytes, lineno: int) -> list[int]:
    ids = []
    for token in line.split():
        if not _ID_TOKEN.match(token):
            raise CliError(f"line {lineno}: {token.decode('utf-8', 'backslashreplace')!r} is not an id")
        value = int(token)
        if not -(1 << 63) <= value < 1 << 63:
            raise CliError(f"line {lineno}: id {value} is out of range")
        ids.append(value)
    return ids


def _train(args: argparse.Namespace, out: BinaryIO) -> None:
    text = args.vocab_size.strip()
    if not re.fullmatch(r"[0-9]+", text):
        raise CliError(f"--vocab-size: {args.vocab_size!r} is not a non-negative integer")
    fix_mmap_threshold()  # this process is ours: freed arrays go back to the system
    tok = Tokenizer.train(args.corpus or None, int(text), gbk=args.gbk, bug_compat=args.bug_compat,
                          lossless_encodings=args.lossless_trainenc, progress=not args.quiet and sys.stderr.isatty(),
                          windows_text=args.windows_text, strict=args.strict, memory_check=not args.no_memory_check,
                          output=args.output, encodings=not args.no_encodings)
    if not args.quiet:  # the full path: the default output lands in whatever directory this ran in
        print(f"bbpe: trained vocab={len(tok)} train_lines={tok.train_lines} -> "
              f"{os.path.abspath(args.output)}", file=sys.stderr)


def _encode(args: argparse.Namespace, out: BinaryIO) -> None:
    tok = _load_beside_input(args, bug_compat=args.bug_compat)
    name = _shown(args.file)
    for lineno, line in enumerate(_input(args.file, args.windows_text), 1):
        if args.gbk and (message := gbk_line_problem(name, lineno, line)):
            if args.strict:
                raise CliError(message)
            print(f"bbpe: warning: {message}", file=sys.stderr)
        ids = tok.encode(line, gbk=args.gbk)
        out.write(_ids_line(ids) if args.output_format == "id" else _pieces_line(tok, ids))


def _decode(args: argparse.Namespace, out: BinaryIO) -> None:
    tok = _load_beside_input(args)
    for lineno, line in enumerate(_input(args.file), 1):
        try:
            data = tok.decode_bytes(_parse_ids(line, lineno), gbk=args.gbk)
        except UnknownIdError as err:
            raise CliError(f"line {lineno}: {err}") from None
        out.write(data + b"\n")


def _vocab(args: argparse.Namespace, out: BinaryIO) -> None:
    tok = _load(args.model)
    out.writelines(f"{i}\t{len(k)}\t{k.hex()}\n".encode() for i, k in enumerate(tok.keys))


def _trainenc(args: argparse.Namespace, out: BinaryIO) -> None:
    tok = _load_xbbpe(args.model)
    out.writelines(_ids_line(ids) for ids in tok.train_encodings)


def _special(args: argparse.Namespace, out: BinaryIO) -> None:
    tok = _load_xbbpe(args.model)
    out.write(f"{tok.pad_id} {tok.bos_id} {tok.eos_id}\n".encode())


def _info(args: argparse.Namespace, out: BinaryIO) -> None:
    data = _model_bytes(args.model)
    tok = XBBPE.from_bytes(data, name=_shown(args.model))
    assert isinstance(tok, XBBPE)  # from_bytes on XBBPE refuses another model's file
    keys = tok.keys
    longest = max(keys, key=len)
    encodings = tok.train_encodings
    n_ids = sum(map(len, encodings))
    lines = [
        f"file              {_shown(args.model)} ({len(data):,} bytes)",
        f"vocabulary        {len(tok):,} ids (263 initial, {max(len(tok) - 263, 0):,} learned and special)",
        f"longest key       {len(longest)} bytes: {longest.decode('utf-8', 'backslashreplace')}",
        f"special ids       PAD {tok.pad_id}  BOS {tok.bos_id}  EOS {tok.eos_id}",
        f"stored encodings  {len(encodings):,} texts, {n_ids:,} ids",
    ]
    out.write(("\n".join(lines) + "\n").encode())


_COMMANDS = {"train": _train, "encode": _encode, "decode": _decode, "vocab": _vocab,
             "trainenc": _trainenc, "special": _special, "info": _info}


def _warn_one_line(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"bbpe: warning: {message}", file=sys.stderr)


def run() -> None:
    """The ``bbpe`` command and ``python -m bbpe``: ``main``, then the process ends at once.

    Everything the command wrote is flushed, closed or, for a ``.bin``, fsync'ed and
    renamed by then; what is left, the interpreter's own teardown (collecting the
    objects of a run that held hundreds of megabytes, unloading modules), cost 15 ms
    after a training run, which the operating system does for nothing.
    """
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, OSError):  # the reader went away: nothing more to say
        pass
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    args = _parser().parse_args(argv)
    out = sys.stdout.buffer
    warnings.showwarning = _warn_one_line
    try:
        _COMMANDS[args.command](args, out)
        out.flush()
    except BrokenPipeError:
        # the reader went away (`bbpe encode ... | head`): stop quietly, and keep Python
        # from failing again when it flushes stdout at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (CliError, CorpusError, FormatError, GBKError, InsufficientMemoryError, UnknownIdError, ValueError,
            TypeError, OSError) as err:
        message = str(err) if not isinstance(err, OSError) or not err.filename else f"{err.filename}: {err.strerror}"
        print(f"bbpe: error: {message}", file=sys.stderr)
        return 1
    except MemoryError as err:  # outside training, which says more (InsufficientMemoryError)
        print(f"bbpe: error: memory ran out ({type(err).__name__}: {err})", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
