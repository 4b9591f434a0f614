"""bbpe.WordPiece encoding against HF tokenizers (``BertWordPieceTokenizer``), transformers'
``BertTokenizerFast``, flash-tokenizer and blingfire, on BERT's real vocabularies, in one run.

    python benchmarks/bench_wordpiece.py                       # all corpora, 20,000 lines each
    python benchmarks/bench_wordpiece.py --lines 5000 --repeat 1 --out /tmp/wordpiece.md

The vocabularies are bert-base-chinese's and bert-base-uncased's, as blingfire's wheel ships
them (``bert_chinese.i2w``, ``bert_base_tok.i2w``: each token read back through blingfire,
a ``##`` told by whether it joins the token before it; the 3 tokens of bert-base-chinese it
does not give back get placeholders), written once as ``vocab.txt`` into
$BBPE_BENCH_MODELS/wordpiece; every tool but blingfire reads that file with BERT's uncased
options (bert-base-chinese's own are the same), blingfire its compiled model of the same
vocabulary.

Speed: the first ``--lines`` lines of each corpus, as str. "single": one call per line on
one thread; "batch": the tool's batch call on 2 threads (where it has one). MB/s of UTF-8
input, best of ``--repeat`` rounds (each runs every column of every tool once), warm, each
run from a clean heap with its results kept, Python's garbage collector on. Every tool's ids
are compared with HF tokenizers' on every measured line: bbpe's must be equal (the script
stops otherwise), another tool's share of equal lines is reported.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "2")  # HF's batch threads, before it loads

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import corpus, machine, versions
from bench_encode import best_in_rounds

MODELS = Path(os.environ.get("BBPE_BENCH_MODELS", "/tmp/bbpe-bench-models")) / "wordpiece"
VOCABS = {"bert-base-chinese": ("bert_chinese", 21128), "bert-base-uncased": ("bert_base_tok", 30522)}
CORPORA = {"zh-large": "bert-base-chinese", "mixed": "bert-base-chinese", "en-large": "bert-base-uncased"}
TOOLS = ["bbpe", "tokenizers", "transformers", "flash-tokenizer", "blingfire"]
BIG = 1 << 30  # a max length no line reaches


def vocab_file(name: str) -> Path:
    """BERT's vocab.txt of ``name``, read back from blingfire's wheel (made once)."""
    path = MODELS / f"{name}.txt"
    if path.exists():
        return path
    import blingfire
    import numpy as np

    stem, size = VOCABS[name]
    model = blingfire.load_model(os.path.join(os.path.dirname(blingfire.__file__), f"{stem}.i2w"))

    def text(ids: list[int]) -> str:
        return blingfire.ids_to_text(model, np.array(ids, dtype=np.int32), skip_special_tokens=False)

    singles = [text([i]) for i in range(size)]
    a = singles.index("a")
    tokens = [t if k == a or text([a, k]).startswith("a ") else "##" + t for k, t in enumerate(singles)]
    # blingfire keeps the uncased model's special tokens lowercased: BERT's file has them upper case;
    # a token it does not give back (3 of bert-base-chinese's) gets a placeholder: an empty line,
    # which HF reads as a token and flash-tokenizer skips, would shift one tool's ids
    tokens = [t.upper() if t in ("[pad]", "[unk]", "[cls]", "[sep]", "[mask]") else t or f"[bbpe_unknown_{k}]"
              for k, t in enumerate(tokens)]
    MODELS.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{t}\n" for t in tokens), encoding="utf-8")
    return path


def build(tool: str, vocab: Path, name: str):
    """(encode one str, encode a list on 2 threads or None) of a tool with ``vocab``."""
    if tool == "bbpe":
        import bbpe

        tok = bbpe.WordPiece.from_vocab(vocab)
        return tok.encode, lambda lines: tok.encode_batch(lines, num_threads=2)
    if tool == "tokenizers":
        from tokenizers import BertWordPieceTokenizer

        hf = BertWordPieceTokenizer(str(vocab))
        return (lambda s: hf.encode(s, add_special_tokens=False).ids,
                lambda lines: [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)])
    if tool == "transformers":
        from transformers import BertTokenizerFast

        fast = BertTokenizerFast(str(vocab))
        return (lambda s: fast(s, add_special_tokens=False)["input_ids"],
                lambda lines: fast(lines, add_special_tokens=False)["input_ids"])
    if tool == "flash-tokenizer":
        from flash_tokenizer import BertTokenizerFlash

        flash = BertTokenizerFlash(str(vocab), do_lower_case=True, model_max_length=BIG)
        return lambda s: flash.tokenizer.encode(s, "longest", BIG)[1:-1], None  # ([CLS] ... [SEP])
    if tool == "blingfire":
        import blingfire

        model = blingfire.load_model(os.path.join(os.path.dirname(blingfire.__file__), f"{VOCABS[name][0]}.bin"))
        return lambda s: blingfire.text_to_ids(model, s, len(s) * 4 + 8, 100, True).tolist(), None
    raise ValueError(tool)


def measure(name: str, lines: list[str], tools: list[str], repeat: int) -> list[str]:
    vocab = vocab_file(CORPORA[name])
    nbytes = sum(len(line.encode()) for line in lines)
    oracle = build("tokenizers", vocab, CORPORA[name])[0]
    expected = [oracle(line) for line in lines]
    runs, notes = {}, {}
    for tool in tools:
        try:
            single, batch = build(tool, vocab, CORPORA[name])
        except ImportError as err:
            notes[tool] = f"not installed ({err.name})"
            continue
        got = [single(line) for line in lines]
        same = sum(g == e for g, e in zip(got, expected))
        if tool == "bbpe" and same != len(lines):
            sys.exit(f"bbpe's ids differ from HF's on {len(lines) - same} lines of {name}")
        if batch is not None and batch(lines) != got:
            sys.exit(f"{tool}'s batch ids differ from its own single calls on {name}")
        notes[tool] = "" if same == len(lines) else f"ids as HF's on {100 * same / len(lines):.1f}% of lines"
        runs[f"{tool} single"] = (lambda single=single: [single(line) for line in lines], True)
        if batch is not None:
            runs[f"{tool} batch"] = (lambda batch=batch: batch(lines), True)
    times = best_in_rounds(runs, repeat)
    mbs = {key: nbytes / 1e6 / t for key, t in times.items()}
    rows = []
    for tool in tools:
        single, batch = mbs.get(f"{tool} single"), mbs.get(f"{tool} batch")
        base_single, base_batch = mbs.get("bbpe single"), mbs.get("bbpe batch")

        def shown(x):
            return "–" if x is None else f"{x:.1f}"

        def ratio(a, b):
            return "–" if a is None or b is None else f"{a / b:.1f}"
        rows.append(f"| {name} | {CORPORA[name]} | {tool} | {shown(single)} | {shown(batch)} | "
                    f"{ratio(base_single, single)} | {ratio(base_batch, batch)} | {notes.get(tool, '')} |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--corpora", default=",".join(CORPORA))
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--out", type=Path, help="also write the markdown table to this file")
    args = ap.parse_args()
    tools = args.tools.split(",")
    command = f"python benchmarks/bench_wordpiece.py --lines {args.lines} --repeat {args.repeat}"
    lines = [f"## Encoding with WordPiece (`{command}`)", "", f"Machine: {machine()}  ",
             f"Versions: {versions(['bbpe', 'tokenizers', 'transformers', 'flash-tokenizer', 'blingfire'])}.", "",
             ("MB/s of UTF-8 input, one call per line (single) and the batch call on 2 threads; "
              "bbpe/tool: bbpe's MB/s over the tool's, same run."), "",
             "| corpus | vocabulary | tool | single MB/s | batch MB/s | bbpe/tool single | bbpe/tool batch | note |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for name in args.corpora.split(","):
        text = corpus(name).read_text(encoding="utf-8").split("\n")[: args.lines]
        lines += measure(name, text, tools, args.repeat)
        print("\n".join(lines[-len(tools):]), flush=True)
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        args.out.write_text(table, encoding="utf-8")


if __name__ == "__main__":
    main()
