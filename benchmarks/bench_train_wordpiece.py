"""Training a WordPiece: bbpe.WordPiece.train (the seed's likelihood score, and HF's
frequencies) against HF tokenizers' ``BertWordPieceTokenizer.train`` (its WordPieceTrainer),
each run in a fresh process, in one run, with BertWordPieceTokenizer's defaults
(vocab_size as given, min_frequency 2, limit_alphabet 1000, the five special tokens,
uncased).

    python benchmarks/bench_train_wordpiece.py --corpora /tmp/bbpe-corpora --vocab-sizes 8000,32000 --repeat 2
    python benchmarks/bench_train_wordpiece.py --lines 3000 --vocab-sizes 2000 --repeat 1   # a quick check

Corpora: zh-large twice (with HF's handle_chinese_chars, every CJK char a word of its own,
and without it, whole runs of CJK chars as words), en-large and mixed, from ``--corpora``
(``bash ../shared/corpora/build.sh /tmp/bbpe-corpora``), the first ``--lines`` lines (default
all). Each training runs in a child process (this script with ``--child``): wall seconds of
the training call alone (the tool imported before the clock starts) and the peak RSS of that
process (VmHWM). ``shared``: how many of HF's tokens bbpe's frequency-trained vocabulary
holds (HF breaks its ties in an order that changes from run to run: the two can differ
only there). The table is printed and, with ``--out``, written to a file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "2")  # HF's threads, before it loads

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, versions

TOOLS = ["bbpe-likelihood", "bbpe-frequency", "hf"]
SETUPS = {"zh-large": ("zh-large", True), "zh-large-nocjk": ("zh-large", False), "en-large": ("en-large", True),
          "mixed": ("mixed", True)}


def child(tool: str, path: str, vocab: int, chinese: bool, out: str) -> None:
    """Train; write {"wall", "rss", "tokens"} (or {"error"}) as JSON to ``out``."""
    try:
        if tool.startswith("bbpe"):
            import bbpe

            _ = bbpe.WordPiece
            start = time.perf_counter()
            tok = bbpe.WordPiece.train(path, vocab_size=vocab, score=tool.split("-")[1], handle_chinese_chars=chinese,
                                       show_progress=False)
            wall = time.perf_counter() - start
            tokens = list(tok.get_vocab())
        else:
            from tokenizers import BertWordPieceTokenizer

            start = time.perf_counter()
            hf = BertWordPieceTokenizer(handle_chinese_chars=chinese)
            hf.train([path], vocab_size=vocab, show_progress=False)
            wall = time.perf_counter() - start
            tokens = list(hf.get_vocab())
        result = {"wall": wall, "rss": peak_rss(), "tokens": tokens}
    except Exception as err:  # noqa: BLE001 -- a training that fails: the table says how
        result = {"error": f"{type(err).__name__}: {str(err)[:120]}"}
    Path(out).write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")


def peak_rss() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def run(tool: str, path: Path, vocab: int, chinese: bool, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, __file__, "--child", tool, str(path), str(vocab), str(int(chinese)), str(out)]
        try:
            subprocess.run(cmd, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout,
                           check=False)
        except subprocess.TimeoutExpired:
            return {"error": f"stopped after {timeout:g} s"}
        return json.loads(out.read_text(encoding="utf-8")) if out.exists() else {"error": "no result"}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        tool, path, vocab, chinese, out = sys.argv[2:7]
        child(tool, path, int(vocab), chinese == "1", out)
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=Path(os.environ.get("BBPE_CORPORA", "/tmp/bbpe-corpora")))
    ap.add_argument("--setups", default=",".join(SETUPS))
    ap.add_argument("--vocab-sizes", default="8000,32000")
    ap.add_argument("--lines", type=int)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows = [("| corpus | vocab | tool | wall s | peak RSS MB | bbpe-likelihood/tool time | bbpe-frequency/tool time "
             "| ids | shared with HF's | note |"), "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    with tempfile.TemporaryDirectory() as tmp:
        for setup in args.setups.split(","):
            name, chinese = SETUPS[setup]
            path = args.corpora / f"{name}.txt"
            if args.lines:
                cut = Path(tmp) / f"{name}.{args.lines}.txt"
                cut.write_text("\n".join(path.read_text(encoding="utf-8").split("\n")[: args.lines]), encoding="utf-8")
                path = cut
            for vocab in map(int, args.vocab_sizes.split(",")):
                best: dict = {}
                for _ in range(args.repeat):  # rounds: each tool once per round, its fastest run kept
                    for tool in TOOLS:
                        got, prev = run(tool, path, vocab, chinese, args.timeout), best.get(tool)
                        if prev is None or "error" in prev or ("error" not in got and got["wall"] < prev["wall"]):
                            best[tool] = got
                hf = set(best["hf"].get("tokens", []))
                for tool in TOOLS:
                    got = best[tool]
                    if "error" in got:
                        rows.append(f"| {setup} | {vocab} | {tool} | – | – | – | – | – | – | {got['error']} |")
                        continue
                    ratios = [f"{best[b]['wall'] / got['wall']:.2f}" if "wall" in best[b] else "–"
                              for b in ("bbpe-likelihood", "bbpe-frequency")]
                    shared = f"{len(hf & set(got['tokens'])) / len(hf):.4f}" if hf and tool == "bbpe-frequency" else ""
                    rows.append(f"| {setup} | {vocab} | {tool} | {got['wall']:.2f} | {got['rss']:.0f} | {ratios[0]} | "
                                f"{ratios[1]} | {len(got['tokens'])} | {shared} |  |")
                print("\n".join(rows[-len(TOOLS):]), flush=True)
    command = f"python benchmarks/bench_train_wordpiece.py --vocab-sizes {args.vocab_sizes} --repeat {args.repeat}"
    head = [f"## Training a WordPiece (`{command}`)", "", f"Machine: {machine()}  ",
            f"Versions: {versions(['bbpe', 'tokenizers'])}.", ""]
    table = "\n".join(head + rows) + "\n"
    print(table)
    if args.out:
        args.out.write_text(table, encoding="utf-8")


if __name__ == "__main__":
    main()
