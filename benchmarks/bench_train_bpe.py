"""Training a BPE: bbpe.BPE.train against HF tokenizers, rustbpe, sentencepiece and
YouTokenToMe, each run in a fresh process, in one run, on the same machine. bbpe trains
with three pre-tokenizers, each against HF's BpeTrainer with the same one where HF has it:
HF's ByteLevel ("bytelevel"), cl100k's pattern (rustbpe's default split) and HF's
Whitespace ("whitespace": a BPE over chars, no byte fallback).

    python benchmarks/bench_train_bpe.py                                  # all corpora, 8000 and 32000
    python benchmarks/bench_train_bpe.py --lines 3000 --vocab-sizes 5000  # a quick check
    python benchmarks/bench_train_bpe.py --repeat 3 --out /tmp/train_bpe.md  # the table into a file too

Corpora: zh-large, en-large and mixed from ``--corpora DIR`` (made by
``bash ../shared/corpora/build.sh /tmp/bbpe-corpora``). The last 2000 lines of each corpus
are held out; every tool trains on the same file, the first ``--lines`` lines of the rest
(default all of them), written once per corpus into a temporary directory.

Each training runs in a child process of its own (this script with ``--child``), which
imports the tool, times the training call alone (``time.perf_counter``; its reading of the
file included, the interpreter's start-up and the tool's import not), and then reads its
own peak RSS, VmHWM in /proc/self/status: the interpreter, the tool's import and the
training, with nothing of any other run in it. Not ``ru_maxrss``: Linux carries it over
from the parent through fork and exec, so a child's ru_maxrss (RUSAGE_SELF in the child,
os.wait4's or RUSAGE_CHILDREN in the parent) is never below this script's own peak, which
held a whole corpus; VmHWM is that of the memory exec made afresh. The child then encodes
the held-out lines, one call per line, with the model it trained, and reports tokens per
character (of ``str``, the lines without their line breaks; YouTokenToMe, which has no
byte fallback, gives a char it never saw in training one <UNK> token). Python's garbage
collector is on throughout and the trained model is kept until the child ends.

With ``--repeat N`` the tools of one (corpus, vocab) run in N rounds, each tool once per
round (so that a slow spell of the VM falls on all of them alike), and each tool's fastest
run is kept, with that run's peak RSS. The ratios are bbpe's figure over the tool's in the
same run (below 1: bbpe is faster / leaner), for each of bbpe's three pre-tokenizers.

A tool that cannot be imported, or a bbpe without ``bbpe.BPE.train``, is skipped with a
printed reason; a training that fails is a row with its error. The table is printed and,
with ``--out``, written to a markdown file (benchmarks/README.md is left alone).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from importlib.util import find_spec
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "2")  # HF tokenizers' and rustbpe's threads, before they load

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, versions

CORPORA = ["zh-large", "en-large", "mixed"]
TOOLS = ["bbpe-bytelevel", "bbpe-cl100k", "bbpe-whitespace", "hf-bytelevel", "hf-whitespace", "rustbpe",
         "sentencepiece", "youtokentome"]
MODULES = {"bbpe-bytelevel": "bbpe", "bbpe-cl100k": "bbpe", "bbpe-whitespace": "bbpe", "hf-bytelevel": "tokenizers",
           "hf-whitespace": "tokenizers", "rustbpe": "rustbpe", "sentencepiece": "sentencepiece",
           "youtokentome": "youtokentome"}
BBPE = {"bl": "bbpe-bytelevel", "cl": "bbpe-cl100k", "ws": "bbpe-whitespace"}  # the ratios' numerators
HELD_OUT = 2000
LONGEST = 0  # in a child: the training file's longest line in bytes (sentencepiece's max_sentence_length)


class Skip(Exception):
    """The tool cannot train here (not the same as a training that fails)."""


# ----------------------------------------------------------------------------- one training, in a child

def bbpe_train(path: str, vocab: int, pre_tokenizer: str):
    import bbpe

    if "train" not in vars(bbpe.BPE):  # Tokenizer.train, inherited, trains bbpe's own model (XBBPE)
        raise Skip("bbpe.BPE has no train of its own")
    try:
        tok = bbpe.BPE.train([path], vocab_size=vocab, pre_tokenizer=pre_tokenizer, show_progress=False)
    except NotImplementedError as err:  # the stub that stands for it until it is written
        raise Skip(f"bbpe.BPE.train: {err}") from None
    return tok, tok.encode


IMPORTS = {  # what each tool's user imports before training (the child imports it untimed)
    "hf-bytelevel": ("tokenizers", "tokenizers.models", "tokenizers.pre_tokenizers", "tokenizers.trainers",
                     "tokenizers.decoders"),
    "rustbpe": ("rustbpe",), "sentencepiece": ("sentencepiece",), "youtokentome": ("youtokentome",),
}


def import_tool(tool: str) -> None:
    """Imports what ``train(tool, ...)`` uses, so that its timing leaves the import out."""
    if tool.startswith("bbpe-"):
        import bbpe

        _ = bbpe.BPE  # (imported when first named)
        return
    for module in IMPORTS.get(tool, IMPORTS["hf-bytelevel"] if tool.startswith("hf-") else ()):
        importlib.import_module(module)


def train(tool: str, path: str, vocab: int, work: str):
    """Train ``tool`` on the file ``path``: (the model, a function that encodes one str)."""
    if tool == "bbpe-bytelevel":
        return bbpe_train(path, vocab, "byte_level")
    if tool == "bbpe-cl100k":
        return bbpe_train(path, vocab, "cl100k_base")
    if tool == "bbpe-whitespace":
        return bbpe_train(path, vocab, "whitespace")
    if tool == "hf-whitespace":
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers

        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        tok.train([path], trainers.BpeTrainer(vocab_size=vocab, show_progress=False))
        return tok, lambda s: tok.encode(s).ids
    if tool == "hf-bytelevel":
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        tok.train([path], trainers.BpeTrainer(vocab_size=vocab, show_progress=False,
                                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
        return tok, lambda s: tok.encode(s).ids
    if tool == "rustbpe":
        import rustbpe

        tok = rustbpe.Tokenizer()  # GPT-4's split pattern (cl100k_base's) unless pattern= is given
        with open(path, encoding="utf-8") as f:  # an iterator of texts: the file's lines
            tok.train_from_iterator(f, vocab_size=vocab)  # 256 bytes + merges
        return tok, tok.encode
    if tool == "sentencepiece":
        import sentencepiece as spm

        prefix = os.path.join(work, "spm")
        # input_sentence_size=0: every line, not a sample, so shuffle_input_sentence does not
        # matter; max_sentence_length (bytes, default 4192) raised to the longest line, else
        # sentencepiece drops the long lines (zh-large and mixed have lines of 8628 chars).
        # train_extremely_large_corpus is not needed at these sizes (tens of MB).
        spm.SentencePieceTrainer.train(
            input=path, model_type="bpe", vocab_size=vocab, model_prefix=prefix, character_coverage=0.9995,
            byte_fallback=True, num_threads=2, minloglevel=2, input_sentence_size=0,
            max_sentence_length=max(4192, LONGEST))
        sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
        return sp, sp.encode
    if tool == "youtokentome":
        import youtokentome as yttm

        bpe = yttm.BPE.train(data=path, vocab_size=vocab, model=os.path.join(work, "yttm.model"), n_threads=2)
        return bpe, lambda s: bpe.encode([s], output_type=yttm.OutputType.ID)[0]
    raise ValueError(tool)


def child(tool: str, path: str, held_out: str, vocab: int, work: str, result: str) -> None:
    """Train, then write {"wall", "rss", "tpc"} (or {"skip"} / {"error"}) as JSON to ``result``."""
    global LONGEST
    if tool == "sentencepiece":
        with open(path, "rb") as f:
            LONGEST = max(map(len, f))
    try:
        import_tool(tool)
        start = time.perf_counter()
        model, encode = train(tool, path, vocab, work)
        wall = time.perf_counter() - start
        rss = peak_rss()
        with open(held_out, encoding="utf-8") as f:
            lines = f.read().split("\n")
        tokens = sum(len(encode(line)) for line in lines)
        out = {"wall": wall, "rss": rss, "tpc": tokens / sum(map(len, lines)), "vocab": vocab_size(model)}
    except Skip as err:
        out = {"skip": str(err)}
    except Exception as err:  # noqa: BLE001 -- a training that fails: the table says how
        why = re.sub(r"\[\(.*\)\] ", "", (str(err).splitlines() or [""])[0])  # sentencepiece's failed CHECK(...)
        out = {"error": f"{type(err).__name__}: {why[:160]}"}
    Path(result).write_text(json.dumps(out))


def peak_rss() -> float:
    """This process's peak resident set size in MB (VmHWM; see the module's docstring)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def vocab_size(model) -> int:
    """The size of the vocabulary the tool made (some stop short of the one asked for)."""
    got = getattr(model, "get_vocab_size", None) or model.vocab_size  # rustbpe's is a property
    return int(got() if callable(got) else got)


# ----------------------------------------------------------------------------- the parent

def run(tool: str, files: dict[str, Path], vocab: int, tmp: Path, timeout: float) -> dict:
    """One training in a fresh child process; its figures, or {"skip"} / {"error"}."""
    work, result = tmp / "work", tmp / "result.json"
    shutil.rmtree(work, ignore_errors=True)  # every run writes its model afresh
    work.mkdir()
    result.unlink(missing_ok=True)
    cmd = [sys.executable, __file__, "--child", tool, str(files["train"]), str(files["held"]), str(vocab),
           str(work), str(result)]
    try:
        # cwd="/": the installed bbpe, never a source tree
        done = subprocess.run(cmd, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"stopped after {timeout:g} s"}
    if not result.exists():
        return {"error": f"exit {done.returncode}: {(done.stderr.strip().splitlines() or ['no output'])[-1][:100]}"}
    return json.loads(result.read_text())


def split(path: Path, lines: int | None, tmp: Path) -> dict:
    """Write the training file (the first ``lines`` lines of all but the last HELD_OUT) and
    the held-out lines into ``tmp``."""
    text = path.read_text(encoding="utf-8").split("\n")
    if text and text[-1] == "":
        text.pop()
    if len(text) <= HELD_OUT:
        sys.exit(f"{path} has {len(text)} lines: fewer than the {HELD_OUT} held out")
    training, held = text[:-HELD_OUT][:lines], text[-HELD_OUT:]
    files = {"train": tmp / f"{path.stem}.train.txt", "held": tmp / f"{path.stem}.held-out.txt"}
    files["train"].write_text("\n".join(training) + "\n", encoding="utf-8")
    files["held"].write_text("\n".join(held), encoding="utf-8")
    files["lines"], files["mb"] = len(training), files["train"].stat().st_size / 1e6
    return files


def ratio(a: dict | None, b: dict, key: str) -> str:
    return f"{a[key] / b[key]:.2f}" if a and "wall" in a and "wall" in b else "–"


def report(args, sizes: dict, results: dict, skipped: dict) -> list[str]:
    held = f"the last {HELD_OUT:,} lines of each corpus"
    out = [f"## Training a BPE (`{' '.join(['python benchmarks/bench_train_bpe.py'] + sys.argv[1:])}`)\n",
           f"Machine: {machine()}.  ",
           f"Versions: {versions(['bbpe', 'tokenizers', 'rustbpe', 'sentencepiece', 'youtokentome'])}.\n",
           ("Training files: " + ", ".join(f"{c} {n:,} lines, {mb:.1f} MB" for c, (n, mb) in sizes.items())
            + f" (all but {held}, which are held out). Each training in a fresh process: wall seconds of the "
            f"training call (best of {args.repeat}, in rounds), peak RSS of that run's process (MB), "
            "bl/, cl/, ws/tool: bbpe-bytelevel's, bbpe-cl100k's and bbpe-whitespace's time and RSS over the "
            "tool's, same run (below 1: bbpe is faster / leaner; the like-for-like ones are bl/hf-bytelevel, "
            "cl/rustbpe and ws/hf-whitespace); tokens/char: the trained model's tokens per character on "
            f"{held} (whitespace models drop the spaces and any char they never saw).\n"),
           ("| corpus | vocab | tool | wall s | peak RSS MB | bl/tool time | bl/tool RSS | cl/tool time "
            "| cl/tool RSS | ws/tool time | ws/tool RSS | tokens/char | note |"),
           "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for (cname, vocab), rows in results.items():
        ours = [rows.get(BBPE[k]) for k in ("bl", "cl", "ws")]
        for tool, r in rows.items():
            if "wall" not in r:
                out.append(f"| {cname} | {vocab} | {tool} | – | – | – | – | – | – | – | – | – | {r['error']} |")
                continue
            note = f"made {r['vocab']} entries" if r.get("vocab") not in (None, vocab) else ""
            ratios = " | ".join(f"{ratio(b, r, 'wall')} | {ratio(b, r, 'rss')}" for b in ours)
            out.append(f"| {cname} | {vocab} | {tool} | {r['wall']:.2f} | {r['rss']:.0f} | {ratios} | {r['tpc']:.3f} | "
                       f"{note} |")
    if skipped:
        out += ["", *(f"* {tool} skipped: {why}." for tool, why in skipped.items())]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpora", type=Path, default=Path(os.environ.get("BBPE_CORPORA", "/tmp/bbpe-corpora")),
                    help="the directory of build.sh's corpora")
    ap.add_argument("--names", default=",".join(CORPORA), help="which corpora of it")
    ap.add_argument("--vocab-sizes", default="8000,32000")
    ap.add_argument("--lines", type=int, default=None, help="train on the first N lines only (default all)")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--repeat", type=int, default=1, help="rounds; each tool's fastest run is kept")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds before a training is stopped")
    ap.add_argument("--out", type=Path, help="also write the markdown table to this file")
    ap.add_argument("--child", nargs=6, metavar=("TOOL", "TRAIN", "HELD", "VOCAB", "WORK", "RESULT"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        tool, path, held, vocab, work, result = args.child
        child(tool, path, held, int(vocab), work, result)
        return
    tools, vocabs = args.tools.split(","), [int(v) for v in args.vocab_sizes.split(",")]
    if unknown := set(tools) - set(TOOLS):
        sys.exit(f"unknown tools {sorted(unknown)}: choose among {', '.join(TOOLS)}")
    skipped = {t: f"{MODULES[t]} is not installed" for t in tools if find_spec(MODULES[t]) is None}
    for tool, why in skipped.items():
        print(f"skip {tool}: {why}", flush=True)
    paths = {c: args.corpora / f"{c}.txt" for c in args.names.split(",")}
    if missing := [str(p) for p in paths.values() if not p.exists()]:
        sys.exit(f"missing {', '.join(missing)}: bash ../shared/corpora/build.sh {args.corpora}")
    results: dict = {}
    sizes: dict = {}
    with tempfile.TemporaryDirectory(prefix="bbpe-train-bpe-") as tmpdir:
        tmp = Path(tmpdir)
        for cname, path in paths.items():
            files = split(path, args.lines, tmp)
            sizes[cname] = files["lines"], files["mb"]
            for vocab in vocabs:
                rows = results[cname, vocab] = {}
                for _ in range(args.repeat):
                    for tool in tools:
                        if tool in skipped or "error" in rows.get(tool, {}):
                            continue
                        r = run(tool, files, vocab, tmp, args.timeout)
                        if "skip" in r:
                            skipped[tool] = r["skip"]
                            print(f"skip {tool}: {r['skip']}", flush=True)
                            continue
                        if "wall" in r:
                            print(f"{cname:9s} {vocab:6d} {tool:15s} {r['wall']:8.2f} s {r['rss']:6.0f} MB  "
                                  f"{r['tpc']:.3f} tokens/char", flush=True)
                        else:
                            print(f"{cname:9s} {vocab:6d} {tool:15s} failed: {r['error']}", flush=True)
                        if tool not in rows or "wall" in r and r["wall"] < rows[tool].get("wall", float("inf")):
                            rows[tool] = r
            files["train"].unlink()
    table = "\n".join(report(args, sizes, results, skipped))
    print("\n" + table)
    if args.out:
        args.out.write_text(table + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
