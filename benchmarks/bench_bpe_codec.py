"""A quick speed check of BPE's codec (bbpe.bpe._codec.BpeCodec) against tiktoken, on the real
o200k_base and cl100k_base ranks (shipped in the ``bpe_openai`` package; tiktoken itself
would download them). Not the final benchmark (bench_encode.py): one process, no clean heap.

For each encoding: the construction time, then per corpus (the first ``--lines`` lines of
zh-large, en-large, mixed) MB/s of UTF-8 input with one ``encode(line)`` call per line,
Python's garbage collector on and every result kept, best of ``--rounds`` rounds, each round
timing both tools (interleaved, so that the machine's load hits them alike); and whether
their ids are the same. ``--batch`` adds ``encode_many`` on the whole list (one thread).

    python benchmarks/bench_bpe_codec.py [--lines 60000] [--rounds 3] [--batch]
"""

from __future__ import annotations

import argparse
import base64
import gc
import gzip
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import corpus

ENCODINGS = ("o200k_base", "cl100k_base")
CORPORA = ("zh-large", "en-large", "mixed")


def load(name: str):
    """(tiktoken's Encoding, the tokens in rank order) of one of tiktoken's encodings."""
    import bpe_openai
    import tiktoken
    from tiktoken_ext import openai_public

    ranks = {}
    with gzip.open(Path(bpe_openai.__file__).parent / "data" / f"{name}.tiktoken.gz", "rt") as f:
        for line in f:
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    loader = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *args, **kwargs: ranks  # what it would download
    try:
        spec = getattr(openai_public, name)()
    finally:
        openai_public.load_tiktoken_bpe = loader
    enc = tiktoken.Encoding(name=name, pat_str=spec["pat_str"], mergeable_ranks=ranks, special_tokens={})
    return enc, sorted(ranks, key=ranks.get)


def timed(fn, lines):
    start = time.perf_counter()
    kept = fn(lines)
    return time.perf_counter() - start, kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=60000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", action="store_true", help="also encode_many on the whole list")
    args = parser.parse_args()

    from bbpe.bpe._codec import PIECES, BpeCodec

    gc.enable()
    texts = {name: corpus(name).read_text(encoding="utf-8").split("\n")[: args.lines] for name in CORPORA}
    print(f"{'encoding':12} {'corpus':9} {'bbpe MB/s':>10} {'tiktoken MB/s':>14} {'x':>5}  same"
          + ("  batch MB/s" if args.batch else ""))
    for name in ENCODINGS:
        enc, tokens = load(name)
        start = time.perf_counter()
        codec = BpeCodec(tokens, pattern=PIECES[name.split("_")[0]])
        print(f"{name}: construction {time.perf_counter() - start:.3f} s")
        for cname, lines in texts.items():
            size = sum(len(line.encode()) for line in lines)
            ours = theirs = batch = float("inf")
            for _ in range(args.rounds):
                took, a = timed(lambda ls, c=codec: [c.encode(line) for line in ls], lines)
                ours = min(ours, took)
                took, b = timed(lambda ls, e=enc: [e.encode_ordinary(line) for line in ls], lines)
                theirs = min(theirs, took)
                if args.batch:
                    took, _ = timed(codec.encode_many, lines)
                    batch = min(batch, took)
                same = a == b
                del a, b
            extra = f"  {size / batch / 1e6:10.1f}" if args.batch else ""
            print(f"{name:12} {cname:9} {size / ours / 1e6:10.1f} {size / theirs / 1e6:14.1f} "
                  f"{theirs / ours:5.1f}  {same}{extra}")


if __name__ == "__main__":
    main()
