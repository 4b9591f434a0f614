"""Encoding and decoding benchmark: bbpe against tiktoken, HF tokenizers, sentencepiece and
YouTokenToMe, in one process, on the same machine.

    python benchmarks/bench_encode.py            # all corpora, README table + encode.png
    python benchmarks/bench_encode.py --quick    # mixed only

Every tool gets a BPE model of 32000 trained on the corpus it encodes (cached in
$BBPE_BENCH_MODELS, default /tmp/bbpe-bench-models): bbpe with `bbpe train`; tiktoken an
`Encoding` built offline from the mergeable ranks of a byte-level BPE trained with rustbpe;
HF tokenizers (WhitespaceSplit + Punctuation), sentencepiece (bpe, character_coverage 1.0,
byte_fallback) and YouTokenToMe with their own trainers. Input: the corpus's lines as str.
Throughput is UTF-8 megabytes of input per second, best of --repeat rounds (each runs
every measured call of a table once, so that a slow spell of the VM falls on all of them
alike), warm, each run from a clean heap (``gc.collect()``, then glibc's ``malloc_trim``,
so that every run's results go into pages new from the kernel) with every result kept
until it ends: with Python's cyclic garbage collector on, as in a user's program (the
headline), and off (as timeit measures). "single": one call per line, one thread.
"batch": each tool's batch API on 2 threads. Decode: one call per line, tokens per second.
For bbpe also the calls of a training pipeline (``tok(lines)``, ``tok(lines, padding=True, return_tensors="np")``)
against its ``encode_batch`` on the same lines, in batches of 32, of 1000 and in one call,
with transformers' fast tokenizer over the HF tokenizers model for reference.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "2")  # HF tokenizers' batch threads, before it loads

from _common import HERE, corpus, machine, publish, versions

try:  # glibc's malloc_trim, for clean_heap
    _LIBC = ctypes.CDLL("libc.so.6")
except OSError:
    _LIBC = None
MODELS = Path(os.environ.get("BBPE_BENCH_MODELS", "/tmp/bbpe-bench-models"))
VOCAB = 32000
CORPORA = ["zh-large", "mixed", "en-large"]
TOOLS = ["bbpe", "tiktoken", "youtokentome", "sentencepiece", "tokenizers"]


# ----------------------------------------------------------------------------- models

def model_path(tool: str, name: str) -> Path:
    return MODELS / f"{name}.{VOCAB}.{tool}"


def train_models(name: str, path: Path) -> None:
    MODELS.mkdir(parents=True, exist_ok=True)
    jobs = {
        "bbpe": lambda out: subprocess.run([sys.executable, "-m", "bbpe", "train", str(path), "--vocab-size",
                                            str(VOCAB), "-o", str(out), "-q"], check=True, cwd="/"),
        "tiktoken": lambda out: _train_rustbpe(path, out),
        "youtokentome": lambda out: __import__("youtokentome").BPE.train(data=str(path), model=str(out),
                                                                          vocab_size=VOCAB),
        "sentencepiece": lambda out: _train_spm(path, out),
        "tokenizers": lambda out: _train_hf(path, out),
    }
    for tool, job in jobs.items():
        out = model_path(tool, name)
        if not out.exists():
            print(f"training {tool} on {name} ...", file=sys.stderr, flush=True)
            job(out)


def _train_rustbpe(path: Path, out: Path) -> None:
    import rustbpe

    tok = rustbpe.Tokenizer()
    with open(path, encoding="utf-8") as f:
        tok.train_from_iterator(f, vocab_size=VOCAB)
    with open(out, "w") as f:
        f.write(tok.get_pattern() + "\n")
        f.writelines(f"{bytes(token).hex()} {rank}\n" for token, rank in tok.get_mergeable_ranks())


def _train_spm(path: Path, out: Path) -> None:
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(input=str(path), model_prefix=str(out), vocab_size=VOCAB, model_type="bpe",
                                   character_coverage=1.0, byte_fallback=True, input_sentence_size=0,
                                   minloglevel=2)
    Path(str(out) + ".model").rename(out)


def _train_hf(path: Path, out: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    tok.train([str(path)], trainers.BpeTrainer(vocab_size=VOCAB, show_progress=False))
    tok.save(str(out))


def load(tool: str, name: str):
    """(encode one, encode a batch on 2 threads, decode one) for a tool's model."""
    path = model_path(tool, name)
    if tool == "bbpe":
        import bbpe

        tok = bbpe.Tokenizer.load(path)
        return tok.encode, lambda lines: tok.encode_batch(lines, num_threads=2), tok.decode
    if tool == "tiktoken":
        import tiktoken

        pattern, *rows = path.read_text().splitlines()
        ranks = {bytes.fromhex(t): int(r) for t, r in (row.split() for row in rows)}
        enc = tiktoken.Encoding(name=f"rustbpe-{name}", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
        return enc.encode_ordinary, lambda lines: enc.encode_ordinary_batch(lines, num_threads=2), enc.decode
    if tool == "youtokentome":
        import youtokentome as yttm

        one, two = yttm.BPE(str(path), n_threads=1), yttm.BPE(str(path), n_threads=2)
        return (lambda s: one.encode([s])[0]), two.encode, (lambda ids: one.decode([ids])[0])
    if tool == "sentencepiece":
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=str(path))
        return sp.encode, lambda lines: sp.encode(lines, num_threads=2), sp.decode
    if tool == "tokenizers":
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(path))
        return ((lambda s: tok.encode(s, add_special_tokens=False).ids),
                (lambda lines: [e.ids for e in tok.encode_batch(lines, add_special_tokens=False)]), tok.decode)
    raise ValueError(tool)


# ----------------------------------------------------------------------------- timing

def clean_heap() -> None:
    """No garbage left, and the freed memory given back to the system, so that every run
    writes its results into pages it gets from the kernel, whichever run came before (a
    run after one that freed hundreds of MB would otherwise reuse them: faster, and by
    the luck of the order)."""
    gc.collect()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def best(fn, repeat: int, collector: bool = True) -> float:
    """The best time of ``repeat`` runs of ``fn``, each from a clean heap, its result kept
    until the run ends; the cyclic collector on (as in a user's program) or off."""
    return best_in_rounds({"": (fn, collector)}, repeat)[""]


def best_in_rounds(runs: dict, repeat: int) -> dict:
    """The best time of each of ``runs`` ({name: (fn, collector)}) over ``repeat`` rounds
    that run every one once, each from a clean heap, its result kept until it ends: a slow
    or fast spell of the VM falls on all of them alike, so their ratios hold."""
    times: dict = {name: [] for name in runs}
    for _ in range(repeat):
        for name, (fn, collector) in runs.items():
            clean_heap()
            if not collector:
                gc.disable()
            start = time.perf_counter()
            result = fn()
            times[name].append(time.perf_counter() - start)
            gc.enable()
            del result
    return {name: min(t) for name, t in times.items()}


def measure(name: str, lines: list[str], nbytes: int, repeat: int) -> dict:
    """Every tool's columns on one corpus, {tool: {column: figure}}, all in the same rounds."""
    runs, ntokens, out = {}, {}, {}
    for tool in TOOLS:
        encode, batch, decode = load(tool, name)
        encoded = [encode(line) for line in lines]  # warm up, and the ids to decode
        ntokens[tool] = sum(map(len, encoded))
        out[tool] = {"tpb": ntokens[tool] / nbytes}
        for collector, suffix in ((True, ""), (False, "_gc_off")):
            runs[tool, "single" + suffix] = (lambda encode=encode: [encode(line) for line in lines]), collector
            runs[tool, "batch" + suffix] = (lambda batch=batch: batch(lines)), collector
        runs[tool, "decode"] = (lambda decode=decode, encoded=encoded: [decode(ids) for ids in encoded]), True
    for (tool, column), seconds in best_in_rounds(runs, repeat).items():
        out[tool][column] = (ntokens[tool] if column == "decode" else nbytes) / seconds / 1e6
    return out


BATCH_SIZES = (32, 1000, None)  # a DataLoader's batch, datasets.map's default, every line in one call
PADDED = 'tok(lines, padding=True, return_tensors="np")'
ARRAYS = 'encode_batch(lines, out="numpy")'
DROPPED = ", each batch dropped"  # as a training loop does: its memory is used again
FLOOR = "numpy alone: the padded shapes' two int64 arrays written on 2 threads, no encoding"


def _size_label(size: int | None) -> str:
    return f"batches of {size}" if size else "one call"


def _dropping(fn):
    """Each batch's result let go before the next, as a training loop lets it go."""
    def run(parts: list) -> None:
        result = None
        for part in parts:
            result = fn(part)  # the one before goes here
        del result

    return run


def _write_arrays(shapes: list[tuple[int, int]], pad_id: int, pool) -> list:
    """What any padded int64 API must do at the least, encoding aside: make the ids and mask
    arrays of each batch's shape and write them once, kept; numpy alone, big arrays' halves
    filled on the 2 threads of ``pool`` (numpy's fill releases the GIL) by bbpe's rule
    (``FILL_CELLS_PER_THREAD``), small ones on this thread."""
    import numpy as np

    from bbpe.common.batch import FILL_CELLS_PER_THREAD

    def fill(half: tuple[np.ndarray, np.ndarray]) -> None:
        half[0].fill(pad_id)
        half[1].fill(1)

    kept = []
    for rows, width in shapes:
        ids, mask = np.empty((rows, width), dtype=np.int64), np.empty((rows, width), dtype=np.int64)
        h = rows // 2
        if rows * width >= 2 * FILL_CELLS_PER_THREAD and h:
            list(pool.map(fill, [(ids[:h], mask[:h]), (ids[h:], mask[h:])]))
        else:
            fill((ids, mask))
        kept.append((ids, mask))
    return kept


def hf_calls(name: str, lines: list[str], nbytes: int, repeat: int) -> dict:
    """bbpe's batch calls the transformers way, against its own ``encode_batch``, on the
    lines cut into batches of each size in BATCH_SIZES: {call: {size: MB/s}}, and the
    padded arrays' cells per token. transformers' fast tokenizer over the HF tokenizers
    model runs the same calls, for reference (not on one call of every line: its padded
    lists of ints would take tens of GB)."""
    import numpy as np

    import bbpe

    tok = bbpe.Tokenizer.load(model_path("bbpe", name))
    calls = {
        "encode_batch(lines)": lambda p: tok.encode_batch(p, num_threads=2),
        ARRAYS: lambda p: tok.encode_batch(p, num_threads=2, out="numpy"),
        "tok(lines)": lambda p: tok(p, num_threads=2),
        PADDED: lambda p: tok(p, padding=True, return_tensors="np", num_threads=2),
    }
    try:
        from transformers import PreTrainedTokenizerFast
    except ImportError:
        print("transformers is not installed (pip install '.[hf]'): its row is left out", file=sys.stderr)
    else:
        fast = PreTrainedTokenizerFast(tokenizer_file=str(model_path("tokenizers", name)), pad_token="[PAD]")
        calls["transformers: fast(lines)"] = lambda p: fast(p, add_special_tokens=False)
        calls["transformers: fast(lines, padding=True, return_tensors=\"np\")"] = (
            lambda p: fast(p, padding=True, return_tensors="np", add_special_tokens=False))
    out: dict = {call: {} for call in [*calls, ARRAYS + DROPPED, PADDED + DROPPED, FLOOR]}
    lengths = np.array([len(ids) for ids in tok.encode_batch(lines, num_threads=2)])
    out["cells"] = {}
    for size in BATCH_SIZES:
        step = size or len(lines)
        parts = [lines[i : i + step] for i in range(0, len(lines), step)]
        shapes = [(len(p), int(lengths[i : i + step].max(initial=0))) for i, p in zip(range(0, len(lines), step), parts)]
        runs = {}
        for call, fn in calls.items():
            if call.startswith("transformers") and size is None:
                continue
            fn(parts[0])  # warm
            runs[call] = (lambda fn=fn, parts=parts: [fn(p) for p in parts]), True
            if call in (ARRAYS, PADDED):
                runs[call + DROPPED] = partial(_dropping(fn), parts), True
        with ThreadPoolExecutor(2) as pool:
            runs[FLOOR] = partial(_write_arrays, shapes, tok.pad_id, pool), True
            for call, seconds in best_in_rounds(runs, repeat).items():
                out[call][size] = nbytes / seconds / 1e6
        widths = [lengths[i : i + step].max() * len(lengths[i : i + step]) for i in range(0, len(lengths), step)]
        out["cells"][size] = sum(widths) / lengths.sum()
    return out


def long_line(name: str, repeat: int) -> tuple[float, float]:
    """bbpe's MB/s on ~100 MB in one line, and on the same bytes in their lines."""
    import numpy as np

    import bbpe

    tok = bbpe.Tokenizer.load(model_path("bbpe", name))
    lines = corpus(name).read_bytes().split(b"\n")
    lines = lines * max(1, (100 << 20) // sum(map(len, lines)))
    one = b"".join(lines)
    as_lines = best(lambda: tok.encode_batch(lines, num_threads=1, out="numpy"), repeat)
    as_one = best(lambda: tok.encode(one, out="numpy"), repeat)
    assert np.array_equal(tok.encode(one[: 1 << 20], out="numpy"), tok.encode(one[: 1 << 20], out="numpy"))
    return len(one) / as_one / 1e6, len(one) / as_lines / 1e6


def cache_resident_scaling(name: str, repeat: int) -> float:
    """How much more work 2 threads do than 1 when each re-encodes 200 KB that stays in the
    CPU's cache (the encoder alone, without the memory traffic of a large batch)."""
    import bbpe

    model = bbpe.Tokenizer.load(model_path("bbpe", name))._model
    data = corpus(name).read_bytes()[:200_000]

    def work(_: int) -> None:
        for _ in range(100):
            model.encode_ids(data, False)

    with ThreadPoolExecutor(2) as pool:
        one = best(lambda: work(0), repeat)
        two = best(lambda: list(pool.map(work, [0, 1])), repeat)
    return 2 * one / two


# ----------------------------------------------------------------------------- report

def hf_table(calls: dict, name: str) -> list[str]:
    """The transformers-style calls: MB/s per batch size, and the padded arrays' ratios."""
    sizes = list(BATCH_SIZES)
    head = " | ".join(_size_label(size) for size in sizes)
    rows = [(f"\nThe calls of a training pipeline, {name}, bbpe (2 threads): MB/s, best of rounds that run "
            "each call of a column once, each run from a clean heap with its results kept, the collector on. "
            "transformers: `PreTrainedTokenizerFast` over the HF tokenizers model, for reference.\n"), f"| call | {head} |", "| --- |" + " ---: |" * len(sizes)]
    for call, figures in calls.items():
        if call == "cells":
            continue
        cells = " | ".join(f"{figures[size]:.1f}" if size in figures else "–" for size in sizes)
        rows.append(f"| {call} | {cells} |" if call == FLOOR else f"| `{call}` | {cells} |")
    rows.append("| padded cells per token | " + " | ".join(f"{calls['cells'][size]:.1f}" for size in sizes) + " |")
    padded, lists, arrays, framed = (calls[c] for c in (PADDED, "encode_batch(lines)", ARRAYS, "tok(lines)"))
    dropped, arrays_dropped, floor = calls[PADDED + DROPPED], calls[ARRAYS + DROPPED], calls[FLOOR]
    rows.append("")
    rows.append("* Time of the padded arrays against `encode_batch` on the same lines, lists / numpy, results kept: "
                + "; ".join(f"{_size_label(size)} {lists[size] / padded[size]:.2f}x / {arrays[size] / padded[size]:.2f}x"
                            for size in sizes)
                + ". They hold 16 bytes a cell (int64 ids and mask, as transformers gives them) against "
                "`encode_batch`'s 4 bytes a token, in fresh pages the kernel zeroes on first touch: the fill, "
                "without the GIL and on both threads, is bound by that. Each batch dropped before the next, as a "
                "training loop does, so that its pages are used again, against numpy's dropped the same way: "
                + "; ".join(f"{_size_label(size)} {arrays_dropped[size] / dropped[size]:.2f}x" for size in sizes)
                + ".")
    rows.append("* Where the padded arrays' time goes, results kept: their time against the encoding alone "
                "(`encode_batch` numpy) plus numpy alone writing arrays of the same shapes (the least any int64 "
                "padded API writes): "
                + "; ".join(f"{_size_label(size)} {(1 / padded[size]) / (1 / arrays[size] + 1 / floor[size]):.2f}x"
                            for size in sizes)
                + ". Numpy alone takes "
                + "; ".join(f"{_size_label(size)} {lists[size] / floor[size]:.2f}x" for size in sizes)
                + " the time of `encode_batch` lists: no padded int64 batch can come within 1.3x of it where that "
                "figure is near or above 1.")
    rows.append("* `tok(lines)` (lists of ids and masks, untracked by the collector) against `encode_batch(lines)`: "
                + "; ".join(f"{_size_label(size)} {lists[size] / framed[size]:.2f}x its time" for size in sizes) + ".")
    return rows


def plot(results: dict, path: Path) -> None:
    try:
        import matplotlib
    except ImportError:  # the tables matter more than the picture: keep them
        print("matplotlib is not installed (pip install '.[bench]'): encode.png not redrawn", file=sys.stderr)
        return

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.8 / len(TOOLS)
    for ax, kind, label in ((axes[0], "single", "encode, one call per line, 1 thread (MB/s)"),
                            (axes[1], "batch", "encode_batch, 2 threads (MB/s)")):
        for t, tool in enumerate(TOOLS):
            values = [results[n][tool][kind] for n in names]
            ax.bar([i + t * width for i in range(len(names))], values, width, label=tool)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(names))], names)
        ax.set_title(label, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="the mixed corpus only")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-readme", action="store_true")
    args = ap.parse_args()
    names = ["mixed"] if args.quick else CORPORA
    results: dict = {}
    for name in names:
        path = corpus(name)
        train_models(name, path)
        lines = path.read_text(encoding="utf-8").split("\n")
        nbytes = sum(len(line.encode()) for line in lines)
        results[name] = measure(name, lines, nbytes, args.repeat)
        for tool, r in results[name].items():
            print(f"{name:9s} {tool:14s} single {r['single']:7.1f} MB/s (GC off {r['single_gc_off']:7.1f})  "
                  f"batch {r['batch']:7.1f} MB/s (GC off {r['batch_gc_off']:7.1f})  decode {r['decode']:6.1f} M tok/s"
                  f"  tokens/byte {r['tpb']:.3f}", flush=True)
    first_lines = corpus(names[0]).read_text(encoding="utf-8").split("\n")
    calls = hf_calls(names[0], first_lines, sum(len(line.encode()) for line in first_lines), args.repeat)
    one, split = long_line(names[0], args.repeat)
    in_cache = cache_resident_scaling(names[0], args.repeat)

    lines_out = [f"## Encoding and decoding ({time.strftime('%Y-%m-%d')}, `python benchmarks/bench_encode.py`)\n",
                 f"Machine: {machine()}.  ",
                 f"Versions: {versions(['bbpe', 'tiktoken', 'tokenizers', 'sentencepiece', 'youtokentome', 'rustbpe'])}.\n",
                 ("Each tool encodes the corpus's lines (str) with its own BPE model of 32000 trained on that corpus "
                 "(tiktoken: ranks from rustbpe's byte-level trainer). MB/s of UTF-8 input, best of "
                 f"{args.repeat} rounds (each runs every column of every tool once), warm, each run from a clean heap "
                 "(its freed memory given back to the system) with its results kept, Python's garbage "
                 "collector on (as in a user's program; off in the GC off columns). single = one call per line, "
                 "one thread; batch = the tool's batch call on 2 threads; decode = one call per line. ×: bbpe "
                 "divided by the best of tiktoken, YouTokenToMe and sentencepiece (HF tokenizers in brackets).\n"),
                 ("| corpus | tool | single MB/s | single, GC off | batch MB/s | batch, GC off | decode M tok/s | "
                 "tokens/byte |"),
                 "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name in names:
        for tool in TOOLS:
            r = results[name][tool]
            lines_out.append(f"| {name} | {tool} | {r['single']:.1f} | {r['single_gc_off']:.1f} | {r['batch']:.1f} | "
                             f"{r['batch_gc_off']:.1f} | {r['decode']:.1f} | {r['tpb']:.3f} |")
        ours = results[name]["bbpe"]
        rivals = [results[name][t] for t in ("tiktoken", "youtokentome", "sentencepiece")]
        hf = results[name]["tokenizers"]
        lines_out.append(
            f"| {name} | **bbpe ×** | **{ours['single'] / max(r['single'] for r in rivals):.1f}** "
            f"({ours['single'] / hf['single']:.1f}) | | **{ours['batch'] / max(r['batch'] for r in rivals):.1f}** "
            f"({ours['batch'] / hf['batch']:.1f}) | | **{ours['decode'] / max(r['decode'] for r in rivals):.1f}** "
            f"({ours['decode'] / hf['decode']:.1f}) | |")
    lines_out.append("")
    first = results[names[0]]["bbpe"]
    lines_out.append(f"* bbpe with the collector on, {names[0]}: one call per line {first['single']:.1f} MB/s, "
                     f"{first['single'] / first['single_gc_off']:.2f}x the collector-off figure (its result lists "
                     "hold only ints and are not tracked by the collector).")
    lines_out.append(f"* bbpe's own batch speed-up on 2 threads ({names[0]}): "
                     f"{first['batch'] / first['single']:.2f}x its one-call-per-line speed. For comparison, the encoder "
                     f"alone, each of 2 threads re-encoding 200 KB that stays in cache, does {in_cache:.2f}x the work of "
                     "one thread: what this machine's two vCPUs give varies from run to run.")
    lines_out.append(f"* One ~100 MB line ({names[0]} without its line breaks): {one:.1f} MB/s; the same bytes in "
                     f"their lines: {split:.1f} MB/s (numpy output, 1 thread; ratio {split / one:.2f}).")
    lines_out += hf_table(calls, names[0])
    lines_out.append("\n![encoding throughput](encode.png)")
    if not args.no_readme:
        plot(results, HERE / "encode.png")
    publish(lines_out, "bench_encode", readme=not args.no_readme)


if __name__ == "__main__":
    main()
