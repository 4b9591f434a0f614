"""The ``bbpe`` command: train, encode, decode, count and inspect every model bbpe reads.

A model (``-m``) is a file ``bbpe.load`` reads, told apart by its content: XBBPE's ``.bin``,
bbpe's JSON file or an HF ``tokenizer.json``; or a tiktoken ranks file, which holds no
pre-tokenizer pattern, given one with ``--pattern`` (a name of tiktoken's, or the regex).
The verbs print what the reference driver ``xbbpe`` prints, byte for byte: ``encode`` one
line of space-separated ids per input line, ``decode`` one line of text per line of ids,
``vocab``/``trainenc``/``special`` the dumps (``trainenc`` and ``special`` are XBBPE's
alone); ``count`` the tokens of each line, or with ``--total`` of each file, as ``wc``
prints its counts. Every file a verb reads may be ``-``, standard input: a corpus, an
input, or a model from a pipe (``-m -``), but not a model and an input at once. Errors are
one line on stderr and exit code 1 (2 for usage errors); no traceback.

Why this module is long: it is the command's one job, one parser and one function per verb,
each turning every bad input into its one-line error; what the verbs compute is the
library's.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import os
import re
import stat
import sys
import warnings
import zlib
from collections.abc import Iterable, Iterator
from typing import BinaryIO

# The command never calls BLAS, and numpy's OpenBLAS starts a thread per core that
# busy-waits for work for a while after start-up: on a 2-core machine that takes a core
# from a training run (about 0.1 s on zh-large). A library must leave this to its user; a
# command may set it for its own process, before numpy is first imported (``bbpe`` imports
# nothing heavy until used, so this module runs first under ``bbpe`` and ``python -m bbpe``).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from . import __version__
from .common.blocks import after_last_lf, block_lines, cut_blocks, read_chunks, split_lines, windows_text
from .common.gbk import gbk_line_problem
from .common.resources import fix_mmap_threshold
from .errors import CorpusError, FormatError, GBKError, InsufficientMemoryError, UnknownIdError
from .tokenizer import Tokenizer
from .xbbpe.tokenizer import DEFAULT_CORPUS, DEFAULT_VOCAB_SIZE, XBBPE

_ID_TOKEN = re.compile(rb"[+-]?[0-9]+\Z")
_PATTERN_NAMES = ("gpt2", "r50k_base", "p50k_base", "cl100k_base", "o200k_base")
_BLOCK_BYTES = 1 << 20  # encode and count take the input in blocks of whole lines of about this size


class CliError(Exception):
    """An error the CLI reports as one line."""


_MODEL_HELP = (".bin, bbpe's JSON or HF tokenizer.json model file, or a tiktoken ranks file with --pattern "
               "(- reads stdin)")
_PATTERN_HELP = (f"the pre-tokenizer pattern of a tiktoken ranks file: one of tiktoken's names ({', '.join(_PATTERN_NAMES)}) "
                 "or the regex; a name given with tiktoken's own file for it adds that encoding's special tokens")


def _positive_int(text: str) -> int:
    if not re.fullmatch(r"[0-9]+", text.strip()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def _model_options(p: argparse.ArgumentParser, positional: bool = False) -> None:
    """The model a verb reads: ``-m``/``--model`` (a positional for the dumps) and ``--pattern``."""
    if positional:
        p.add_argument("model", help=_MODEL_HELP)
    else:
        p.add_argument("-m", "--model", required=True, help=_MODEL_HELP)
    p.add_argument("--pattern", metavar="PATTERN", help=_PATTERN_HELP)


def _encoding_options(p: argparse.ArgumentParser) -> None:
    """How ``encode`` and ``count`` read and encode their input."""
    p.add_argument("--gbk", action="store_true", help="the input is GBK")
    p.add_argument("--bug-compat", action="store_true", help="reproduce the reference's lossy encoding (Q14, Q20.1; "
                   "XBBPE models)")
    p.add_argument("--windows-text", action="store_true", help="read the input as the Windows build does (CRLF -> LF)")
    p.add_argument("--strict", action="store_true", help="with --gbk: refuse input that is not GBK")
    p.add_argument("--split-special-tokens", action="store_true",
                   help="read special tokens in the text as plain text (tiktoken's encode_ordinary); by default each "
                        "is matched whole, its one id")
    p.add_argument("--threads", type=_positive_int, metavar="N",
                   help="encode on N threads (default: every CPU this process may use)")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bbpe", description="Byte-level BPE tokenizers: an exact port of XBBPE (for Chinese "
                                "and mixed text), and the BPE of tiktoken's and HF's files.")
    p.add_argument("--version", action="version", version=f"bbpe {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    t = sub.add_parser("train", help="train a vocabulary: XBBPE's .bin (as `xbbpe train`), a byte-level BPE "
                       "as HF's BpeTrainer makes it (--model bpe) and its tokenizer.json, or BERT's WordPiece "
                       "(--model wordpiece) and its vocab.txt")
    t.add_argument("--model", choices=("xbbpe", "bpe", "wordpiece"), default="xbbpe",
                   help="xbbpe (default): the C++'s model and .bin; bpe: HF tokenizers' BPE, written as tokenizer.json; "
                        "wordpiece: BERT's WordPiece, written as vocab.txt (or tokenizer.json)")
    t.add_argument("corpus", nargs="*", help="UTF-8 corpus files, one text per line, trained on one after the other "
                   f"as `cat` joins them; - reads stdin (default: the bundled {os.path.basename(DEFAULT_CORPUS)})")
    t.add_argument("--vocab-size", "-n", default=str(DEFAULT_VOCAB_SIZE), metavar="N",
                   help=f"vocabulary size; 0 means no limit (default {DEFAULT_VOCAB_SIZE})")
    t.add_argument("-o", "--output",
                   help="output .bin, or bbpe's JSON file for a name ending in .json (default xBBPE.bin); "
                   "with --model bpe: an HF tokenizer.json (default tokenizer.json)")
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
    b = t.add_argument_group("--model bpe (HF BpeTrainer's settings)")
    b.add_argument("--pre-tokenizer", default="byte_level", metavar="NAME",
                   help="byte_level (HF's ByteLevel, default), whitespace (HF's Whitespace: merges over chars, no "
                        "byte fallback) or a tiktoken pattern name (cl100k_base, o200k_base, ...)")
    b.add_argument("--min-frequency", type=int, metavar="N",
                   help="the least count a merged pair needs (default 0; wordpiece: 2)")
    b.add_argument("--special-token", action="append", default=[], metavar="TOKEN",
                   help="a special token (repeat for more; they take the first ids, in order; wordpiece: BERT's five "
                        "when none is given)")
    b.add_argument("--limit-alphabet", type=int, metavar="N",
                   help="keep the N most frequent chars of the alphabet (wordpiece: 1000 by default)")
    b.add_argument("--max-token-length", type=int, metavar="N", help="no token longer than N chars")
    b.add_argument("--counts", action="append", default=[], metavar="TSV",
                   help="train on word counts (bbpe count-words) instead of corpus files; repeat to add them up")
    wp = t.add_argument_group("--model wordpiece (BertWordPieceTokenizer's settings; also --min-frequency, "
                              "--special-token, --limit-alphabet)")
    wp.add_argument("--score", choices=("likelihood", "frequency"), default="likelihood",
                    help="likelihood (the seed's, default): count(ab) / (count(a) count(b)); frequency: HF's "
                         "WordPieceTrainer")
    wp.add_argument("--cased", action="store_true", help="keep case and accents (lowercase=False)")
    wp.add_argument("--no-chinese-chars", action="store_true",
                    help="no spaces around CJK chars (handle_chinese_chars=False)")

    w = sub.add_parser("count-words", help="the pre-tokenized words of corpus files with their counts, as TSV "
                       "(word<TAB>count; byte-level text, or text with --pre-tokenizer whitespace), "
                       "for bbpe train --model bpe --counts with the same --pre-tokenizer")
    w.add_argument("files", nargs="+", metavar="file", help="UTF-8 corpus files, one text per line")
    w.add_argument("-o", "--output", required=True, help="the TSV file to write")
    w.add_argument("--pre-tokenizer", default="byte_level", metavar="NAME",
                   help="byte_level (default), whitespace or a tiktoken pattern name")
    w.add_argument("-q", "--quiet", action="store_true", help="no progress bars")

    e = sub.add_parser("encode", help="text lines -> lines of ids (as `xbbpe encode`)")
    _model_options(e)
    e.add_argument("file", nargs="?", help="input (default or -: stdin)")
    _encoding_options(e)
    e.add_argument("--output-format", choices=("id", "piece"), default="id",
                   help="id: the ids (as `xbbpe encode`); piece: the tokens as text (the model's form: GPT-2's "
                        "Ġ for a space in BPE models; in XBBPE's, <0xHH> for a byte that is not part of a UTF-8 char, "
                        "as `spm_encode --output_format=piece`)")

    d = sub.add_parser("decode", help="lines of ids -> text lines (as `xbbpe decode`)")
    _model_options(d)
    d.add_argument("file", nargs="?", help="input (default or -: stdin)")
    d.add_argument("--gbk", action="store_true", help="write GBK")

    c = sub.add_parser("count", help="the number of tokens of each text line, or of each file (--total)")
    _model_options(c)
    c.add_argument("files", nargs="*", metavar="file", help="inputs, one after the other (default or -: stdin)")
    c.add_argument("-t", "--total", action="store_true",
                   help="print one count per file instead, as wc does: COUNT NAME (COUNT alone for stdin given no "
                        "file), then COUNT total after several files; a file's count is the sum of its lines'")
    _encoding_options(c)

    v = sub.add_parser("vocab", help="every id: id<TAB>len<TAB>hex of its bytes, by id")
    _model_options(v, positional=True)
    for name, text in (("trainenc", "the stored training encodings (XBBPE)"),
                       ("special", "the PAD BOS EOS ids (XBBPE)")):
        x = sub.add_parser(name, help=text)
        x.add_argument("model", help=".bin or JSON XBBPE model file (- reads stdin)")
    i = sub.add_parser("info", help="a readable summary of any model: kind, vocabulary, special tokens")
    _model_options(i, positional=True)
    return p


def _is_stdin(path: str | None) -> bool:
    return path is None or path == "-"


def _input(path: str | None, windows: bool = False) -> Iterator[bytes]:
    """The lines of an input file; none or ``-`` is standard input."""
    chunks = iter(lambda: sys.stdin.buffer.read(1 << 16), b"") if path is None or path == "-" else read_chunks(path)
    return split_lines(windows_text(chunks) if windows else chunks)


def _blocks(path: str | None, windows: bool = False) -> Iterator[tuple[bytes, list[bytes]]]:
    """An input (none or ``-``: standard input) in blocks of whole lines of about
    ``_BLOCK_BYTES`` (a longer line is a block of its own), each with its lines as
    ``_input`` cuts them; nothing holds more than a block. A terminal gives each line as it
    is typed."""
    chunks: Iterable[bytes]
    if _is_stdin(path):
        stdin = sys.stdin.buffer
        read = getattr(stdin, "read1", stdin.read) if stdin.isatty() else stdin.read
        chunks = iter(lambda: read(_BLOCK_BYTES), b"")
    else:
        chunks = read_chunks(str(path), _BLOCK_BYTES)
    for block in cut_blocks(windows_text(chunks) if windows else chunks, after_last_lf):
        yield block, block_lines(block)


def _model_bytes(path: str) -> bytes:
    """A model file's bytes; ``-`` reads it from standard input (``... | bbpe vocab -``)."""
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as f:
        return f.read()


def _sniff(data: bytes) -> str:
    """What a model file is (``bbpe.bpe.formats.sniff``): "tiktoken", "tokenizer.json"
    (HF's or bbpe's JSON), "vocab.json" (GPT-2's) or "unknown" (a .bin, or not a model)."""
    from .bpe.formats import sniff

    return sniff(data[:4096])


def _read_model(path: str, bug_compat: bool = False, pattern: str | None = None) -> tuple[Tokenizer, int, str]:
    """The model a verb names (``_model_bytes``): a file ``bbpe.load`` reads, or with
    ``pattern`` a tiktoken ranks file (``_ranks_model``); with its size in bytes and a note
    on the special tokens of a ranks file."""
    data, name = _model_bytes(path), _shown(path)
    kind = _sniff(data)
    if pattern is not None:
        if kind in ("tokenizer.json", "vocab.json"):
            raise CliError(f"--pattern is for a tiktoken ranks file: {name} is a JSON model file, which holds its own "
                           "pre-tokenizer")
        if bug_compat:
            raise CliError("--bug-compat reproduces the XBBPE C++'s encoding: a tiktoken ranks file is a BPE model")
        tok, encoding = _ranks_model(data, name, pattern)
        return tok, len(data), f" ({encoding}'s: the file is tiktoken's own {encoding} ranks)" if encoding else ""
    if kind == "tiktoken":
        raise CliError(f"{name}: a tiktoken ranks file holds no pre-tokenizer pattern: pass --pattern (one of "
                       f"{', '.join(_PATTERN_NAMES)}, or the regex the ranks were made with)")
    if kind == "vocab.json":
        raise CliError(f"{name}: this is GPT-2's vocab.json, which needs its merges.txt: make one tokenizer.json of "
                       "the two with bbpe.BPE.from_vocab_merges(vocab, merges).save('tokenizer.json')")
    return Tokenizer.from_bytes(data, bug_compat=bug_compat, name=name), len(data), ""


def _load(path: str, bug_compat: bool = False, pattern: str | None = None) -> Tokenizer:
    return _read_model(path, bug_compat, pattern)[0]


def _ranks_model(data: bytes, name: str, pattern: str) -> tuple[Tokenizer, str | None]:
    """A tiktoken ranks file read with ``pattern`` (``bbpe.BPE.from_tiktoken``), and the
    tiktoken encoding whose special tokens it got, if any: the file is tiktoken's own for an
    encoding (its SHA-256 after gunzip is the ``expected_hash``) whose pattern ``pattern``
    is (by name or as the regex), as ``tiktoken.get_encoding`` holds them. The file alone
    has no special tokens: without that, it gets none. tiktoken's file with another
    encoding's pattern is probably a mistake, and gets a warning."""
    from .bpe.patterns import ENCODINGS, PatternError, resolve_pattern
    from .bpe.tokenizer import BPE

    try:
        regex = resolve_pattern(pattern)
    except PatternError as err:
        raise CliError(f"--pattern: {err}") from None
    plain = data
    if data.startswith(b"\x1f\x8b"):
        try:
            plain = gzip.decompress(data)
        except (OSError, EOFError, zlib.error):  # from_tiktoken says what is wrong with it
            pass
    digest = hashlib.sha256(plain).hexdigest()
    own = [known for known, enc in ENCODINGS.items() if enc.expected_hash == digest]
    encoding = pattern if pattern in own else next((known for known in own if ENCODINGS[known].pattern == regex), None)
    if own and encoding is None:
        warnings.warn(f"{name} is tiktoken's {own[0]} ranks file, but --pattern is not {own[0]}'s pattern",
                      stacklevel=1)
    source = io.BytesIO(plain)
    source.name = name  # what from_tiktoken's errors call it
    specials = dict(ENCODINGS[encoding].special_tokens) if encoding else None
    return BPE.from_tiktoken(source, pattern, special_tokens=specials), encoding


def _load_xbbpe(path: str, verb: str) -> XBBPE:
    """An XBBPE model (the verbs that mirror the C++ driver: stored encodings, its special
    ids); another model's file is an error saying which it holds."""
    data, name = _model_bytes(path), _shown(path)
    kind = "a BPE model (a tiktoken ranks file)" if _sniff(data) == "tiktoken" else None
    if kind is None:
        tok = Tokenizer.from_bytes(data, name=name)
        if isinstance(tok, XBBPE):
            return tok
        kind = f"a {tok.kind} model"
    raise CliError(f"{name} holds {kind}: `bbpe {verb}` shows what only XBBPE models have (`bbpe info` describes "
                   "any model)")


def _check_stdin_once(model: str, inputs: Iterable[str | None]) -> None:
    """Standard input can be either the model or an input of a verb that reads both (the
    model would take all of it, and leave the input empty)."""
    if model == "-" and any(map(_is_stdin, inputs)):
        raise CliError("-m -: the model and the input cannot both be standard input (the input is stdin when no "
                       "file is given): give one of them as a file")


def _load_beside_input(args: argparse.Namespace, bug_compat: bool = False) -> Tokenizer:
    """``-m``'s model for a verb that also reads an input."""
    _check_stdin_once(args.model, [args.file])
    return _load(args.model, bug_compat, args.pattern)


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


class _Encoder:
    """The ids of an input's lines, a block of lines at a time, on threads
    (``encode_batch``), as ``encode`` gives them line by line; an error names the line.

    With added special tokens, ``encode_batch`` encodes text by text without threads (it
    cuts the tokens out first), 4 to 5 times slower on o200k_base: the lines that hold no
    special token's bytes are encoded as ordinary text, on threads, which gives the same
    ids, and only the others with the special tokens."""

    def __init__(self, tok: Tokenizer, args: argparse.Namespace) -> None:
        self.tok = tok
        self.options = {"num_threads": args.threads, "gbk": args.gbk}
        self.split = args.split_special_tokens
        self.specials: re.Pattern[bytes] | None = None
        if tok.added_special_tokens and not self.split and not args.gbk:  # GBK lines are not the tokens' UTF-8
            needles = {tok.token_bytes(kid) for kid in tok.special_tokens.values()}
            self.specials = re.compile(b"|".join(map(re.escape, sorted(needles, key=len, reverse=True))))

    def ids(self, block: bytes, lines: list[bytes], name: str, first: int, out: str = "list") -> list:
        """The ids of ``lines`` (the lines of ``block``, the first being line ``first`` of
        ``name``): a list, or with ``out="numpy"`` a uint32 array, per line."""
        try:
            if self.specials is None:
                return self._batch(lines, out, self.split)
            if self.specials.search(block) is None:  # no special token in any line: ordinary text
                return self._batch(lines, out, True)
            holding = [bool(self.specials.search(line)) for line in lines]
            plain = iter(self._batch([line for line, held in zip(lines, holding) if not held], out, True))
            special = iter(self._batch([line for line, held in zip(lines, holding) if held], out, False))
            return [next(special) if held else next(plain) for held in holding]
        except ValueError:  # invalid UTF-8 for a BPE model: say where
            for i, line in enumerate(lines):
                try:
                    self.tok.encode(line, gbk=self.options["gbk"], split_special_tokens=self.split)
                except ValueError as err:
                    raise CliError(f"{name}: line {first + i}: {err}") from None
            raise

    def _batch(self, lines: list[bytes], out: str, split: bool) -> list:
        return list(self.tok.encode_batch(lines, out=out, split_special_tokens=split, **self.options))


def _check_gbk(lines: list[bytes], name: str, first: int, strict: bool) -> None:
    for lineno, line in enumerate(lines, first):
        if message := gbk_line_problem(name, lineno, line):
            if strict:
                raise CliError(message)
            print(f"bbpe: warning: {message}", file=sys.stderr)


def _train(args: argparse.Namespace, out: BinaryIO) -> None:
    text = args.vocab_size.strip()
    if not re.fullmatch(r"[0-9]+", text):
        raise CliError(f"--vocab-size: {args.vocab_size!r} is not a non-negative integer")
    fix_mmap_threshold()  # this process is ours: freed arrays go back to the system
    if args.model == "bpe":
        _train_bpe(args, int(text))
        return
    if args.model == "wordpiece":
        _train_wordpiece(args, int(text))
        return
    bpe_only = [flag for flag, value in (("--counts", args.counts), ("--special-token", args.special_token),
                                        ("--min-frequency", args.min_frequency is not None),
                                        ("--limit-alphabet", args.limit_alphabet),
                                        ("--max-token-length", args.max_token_length),
                                        ("--pre-tokenizer", args.pre_tokenizer != "byte_level")) if value]
    if bpe_only:
        raise CliError(f"{bpe_only[0]} is an option of --model bpe")
    args.output = args.output or "xBBPE.bin"
    tok = Tokenizer.train(args.corpus or None, int(text), gbk=args.gbk, bug_compat=args.bug_compat,
                          lossless_encodings=args.lossless_trainenc, progress=not args.quiet and sys.stderr.isatty(),
                          windows_text=args.windows_text, strict=args.strict, memory_check=not args.no_memory_check,
                          output=args.output, encodings=not args.no_encodings)
    if not args.quiet:  # the full path: the default output lands in whatever directory this ran in
        print(f"bbpe: trained vocab={len(tok)} train_lines={tok.train_lines} -> "
              f"{os.path.abspath(args.output)}", file=sys.stderr)


def _train_bpe(args: argparse.Namespace, vocab_size: int) -> None:
    from .bpe import training
    from .bpe.tokenizer import BPE

    for flag in ("gbk", "bug_compat", "lossless_trainenc", "windows_text", "no_encodings"):
        if getattr(args, flag):
            raise CliError(f"--{flag.replace('_', '-')} is an option of --model xbbpe")
    if bool(args.counts) == bool(args.corpus):
        raise CliError("--model bpe trains on corpus files or on --counts files, one of the two")
    if any(_is_stdin(p) for p in args.corpus):
        raise CliError("--model bpe reads corpus files, not stdin")
    output = args.output or "tokenizer.json"
    if not output.endswith(".json"):  # said now, not after training: HF merges are no tiktoken ranks
        raise CliError(f"-o {output}: --model bpe writes an HF tokenizer.json (a name ending in .json)")
    _refuse_wordpiece_options(args, "bpe")
    options = {"vocab_size": vocab_size, "min_frequency": args.min_frequency or 0, "special_tokens": args.special_token,
               "limit_alphabet": args.limit_alphabet, "max_token_length": args.max_token_length,
               "pre_tokenizer": args.pre_tokenizer, "show_progress": not args.quiet and sys.stderr.isatty()}
    if args.counts:
        tok = BPE.train_from_counts(training.read_counts(args.counts, args.pre_tokenizer), **options)
    else:
        tok = BPE.train(args.corpus, memory_check=not args.no_memory_check, **options)
    tok.save(output)
    if not args.quiet:
        print(f"bbpe: trained a BPE of {len(tok)} ids -> {os.path.abspath(output)}", file=sys.stderr)


def _refuse_wordpiece_options(args: argparse.Namespace, model: str) -> None:
    for flag, value in (("--score", args.score != "likelihood"), ("--cased", args.cased),
                        ("--no-chinese-chars", args.no_chinese_chars)):
        if value:
            raise CliError(f"{flag} is an option of --model wordpiece, not --model {model}")


def _train_wordpiece(args: argparse.Namespace, vocab_size: int) -> None:
    from .wordpiece.spec import TRAINING_SPECIALS
    from .wordpiece.tokenizer import WordPiece

    for flag in ("gbk", "bug_compat", "lossless_trainenc", "windows_text", "no_encodings"):
        if getattr(args, flag):
            raise CliError(f"--{flag.replace('_', '-')} is an option of --model xbbpe")
    for flag, value in (("--counts", args.counts), ("--max-token-length", args.max_token_length),
                        ("--pre-tokenizer", args.pre_tokenizer != "byte_level")):
        if value:
            raise CliError(f"{flag} is an option of --model bpe")
    if not args.corpus or any(_is_stdin(p) for p in args.corpus):
        raise CliError("--model wordpiece trains on corpus files (not stdin)")
    output = args.output or "vocab.txt"
    if not output.endswith((".txt", ".json")):
        raise CliError(f"-o {output}: --model wordpiece writes a vocab.txt (.txt) or a tokenizer.json (.json)")
    tok = WordPiece.train(args.corpus, vocab_size=vocab_size,
                          min_frequency=2 if args.min_frequency is None else args.min_frequency,
                          special_tokens=args.special_token or list(TRAINING_SPECIALS),
                          limit_alphabet=1000 if args.limit_alphabet is None else args.limit_alphabet,
                          score=args.score, lowercase=not args.cased, handle_chinese_chars=not args.no_chinese_chars,
                          show_progress=not args.quiet and sys.stderr.isatty())
    tok.save(output)
    if not args.quiet:
        print(f"bbpe: trained a WordPiece of {len(tok)} ids -> {os.path.abspath(output)}", file=sys.stderr)


def _count_words(args: argparse.Namespace, out: BinaryIO) -> None:
    from .bpe import training

    counts = training.count_file_words(args.files, args.pre_tokenizer, not args.quiet and sys.stderr.isatty())
    training.write_counts(counts, args.output)
    if not args.quiet:
        print(f"bbpe: {len(counts)} distinct words, {sum(counts.values())} in all -> {os.path.abspath(args.output)}",
              file=sys.stderr)


def _encode(args: argparse.Namespace, out: BinaryIO) -> None:
    tok = _load_beside_input(args, bug_compat=args.bug_compat)
    encoder = _Encoder(tok, args)
    name = _shown(args.file)
    lineno = 1
    for block, lines in _blocks(args.file, args.windows_text):
        if args.gbk:
            _check_gbk(lines, name, lineno, args.strict)
        rows = encoder.ids(block, lines, name, lineno)
        if args.output_format == "id":
            out.write(b"".join(map(_ids_line, rows)))
        else:
            out.write(b"".join(_pieces_line(tok, ids) for ids in rows))
        lineno += len(lines)


def _count(args: argparse.Namespace, out: BinaryIO) -> None:
    files: list[str | None] = list(args.files) or [None]
    _check_stdin_once(args.model, files)
    for path in files:  # a missing input is an error before any output, not after the files before it
        if not _is_stdin(path) and stat.S_ISDIR(os.stat(str(path)).st_mode):  # OSError names a missing one
            raise CliError(f"{path}: is a directory")
    encoder = _Encoder(_load(args.model, args.bug_compat, args.pattern), args)
    grand = 0
    for path in files:
        name, total, lineno = _shown(path), 0, 1
        for block, lines in _blocks(path, args.windows_text):
            if args.gbk:
                _check_gbk(lines, name, lineno, args.strict)
            counts = [len(ids) for ids in encoder.ids(block, lines, name, lineno, "numpy")]
            lineno += len(lines)
            if args.total:
                total += sum(counts)
            elif counts:
                out.write(("\n".join(map(str, counts)) + "\n").encode())
        if args.total:
            out.write((f"{total} {path}\n" if path is not None else f"{total}\n").encode())
            grand += total
    if args.total and len(files) > 1:
        out.write(f"{grand} total\n".encode())


def _decode(args: argparse.Namespace, out: BinaryIO) -> None:
    tok = _load_beside_input(args)
    for lineno, line in enumerate(_input(args.file), 1):
        try:
            data = tok.decode_bytes(_parse_ids(line, lineno), gbk=args.gbk)
        except UnknownIdError as err:
            raise CliError(f"line {lineno}: {err}") from None
        out.write(data + b"\n")


def _vocab(args: argparse.Namespace, out: BinaryIO) -> None:
    tok = _load(args.model, pattern=args.pattern)
    keys = tok.keys
    out.writelines(f"{i}\t{len(k)}\t{k.hex()}\n".encode() for i, k in enumerate(keys))
    past = sorted(kid for kid in tok.added_special_tokens.values() if kid >= len(keys))  # o200k_base's, ...
    out.writelines(f"{kid}\t{len(k)}\t{k.hex()}\n".encode() for kid in past for k in [tok.token_bytes(kid)])


def _trainenc(args: argparse.Namespace, out: BinaryIO) -> None:
    tok = _load_xbbpe(args.model, "trainenc")
    out.writelines(_ids_line(ids) for ids in tok.train_encodings)


def _special(args: argparse.Namespace, out: BinaryIO) -> None:
    tok = _load_xbbpe(args.model, "special")
    out.write(f"{tok.pad_id} {tok.bos_id} {tok.eos_id}\n".encode())


def _info(args: argparse.Namespace, out: BinaryIO) -> None:
    tok, size, note = _read_model(args.model, pattern=args.pattern)
    lines = [f"file              {_shown(args.model)} ({size:,} bytes)", f"model             {tok.kind}"]
    lines += _xbbpe_info(tok) if isinstance(tok, XBBPE) else _model_info(tok, note)
    out.write(("\n".join(lines) + "\n").encode())


def _xbbpe_info(tok: XBBPE) -> list[str]:
    keys = tok.keys
    longest = max(keys, key=len)
    encodings = tok.train_encodings
    n_ids = sum(map(len, encodings))
    return [
        f"vocabulary        {len(tok):,} ids (263 initial, {max(len(tok) - 263, 0):,} learned and special)",
        f"longest key       {len(longest)} bytes: {longest.decode('utf-8', 'backslashreplace')}",
        f"special ids       PAD {tok.pad_id}  BOS {tok.bos_id}  EOS {tok.eos_id}",
        f"stored encodings  {len(encodings):,} texts, {n_ids:,} ids",
    ]


def _model_info(tok: Tokenizer, note: str, shown: int = 8) -> list[str]:
    """``info`` of any model: its ids, longest token, special tokens and pre-tokenizer."""
    keys = tok.keys
    specials = sorted(tok.special_tokens.items(), key=lambda item: item[1])
    past = sum(kid >= len(keys) for _, kid in specials)
    unused = len(tok) - len(keys) - past
    parts = [f"{len(keys):,} tokens"] + [f"{past:,} special past them"] * bool(past) + [f"{unused:,} unused"] * bool(unused)
    longest = max(keys, key=len, default=b"")
    listed = "  ".join(f"{_printable(text)} {kid}" for text, kid in specials[:shown])
    more = f"  ... ({len(specials):,} in all)" if len(specials) > shown else ""
    lines = [f"vocabulary        {len(tok):,} ids ({', '.join(parts)})",
             f"longest token     {len(longest)} bytes: {_printable(longest.decode('utf-8', 'backslashreplace'))}",
             f"special tokens    {listed + more + note if specials else 'none'}"]
    lines += [f"{label:<17} {value}" for label, value in tok._model_summary()]  # the model's own
    return lines


def _printable(text: str) -> str:
    """``text`` as it is, or its repr if it holds a space or a char that is not printable."""
    return text if text.isprintable() and " " not in text else repr(text)


_COMMANDS = {"train": _train, "encode": _encode, "decode": _decode, "count": _count, "vocab": _vocab,
             "trainenc": _trainenc, "special": _special, "info": _info, "count-words": _count_words}


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
            TypeError, OSError, ImportError) as err:  # ImportError: a --pattern regex without the regex package
        message = str(err) if not isinstance(err, OSError) or not err.filename else f"{err.filename}: {err.strerror}"
        print(f"bbpe: error: {message}", file=sys.stderr)
        return 1
    except MemoryError as err:  # outside training, which says more (InsufficientMemoryError)
        print(f"bbpe: error: memory ran out ({type(err).__name__}: {err})", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
