"""bbpe.BPE on OpenAI's encodings (o200k_base, cl100k_base) against tiktoken, bpe-openai, HF
tokenizers, fastokens and bpe-qwen, every tool on the same ranks, in one run.

    python benchmarks/bench_bpe.py                # README section
    python benchmarks/bench_bpe.py --quick        # o200k_base, 10,000 lines, no README
    python benchmarks/bench_bpe.py --lines 20000 --encodings cl100k_base --corpora zh-large --no-readme

The ranks are the ``*.tiktoken.gz`` files of the ``bpe_openai`` wheel (tiktoken would
download them); each tool reads them its own way, and they are converted once into
$BBPE_BENCH_MODELS/bpe (default /tmp/bbpe-bench-models/bpe): the plain ``.tiktoken`` file
(tiktoken, fastokens, bbpe), HF's ``tokenizer.json`` that bbpe writes (HF tokenizers) and
GPT-2's ``vocab.json`` + ``merges.txt`` taken from it (bpe-qwen). tiktoken is built as
``tiktoken.get_encoding`` builds it, its pattern from ``tiktoken_ext.openai_public``, the
file read locally. bpe-openai ships its own copy of the ranks in its Rust extension.

Speed: the first ``--lines`` lines of each corpus, as str. "single": one call per line on
one thread; "batch": the tool's batch call on 2 threads. MB/s of UTF-8 input, best of
``--repeat`` rounds (each runs every column of every tool once, so that a slow spell of
the VM falls on all of them alike), warm, each run from a clean heap with its results kept
until it ends, Python's garbage collector on (bench_encode's ``best_in_rounds``). Every
tool's ids, single and batch, are compared with tiktoken's on every measured line; a
mismatch of bbpe's stops the script before it writes the README.

Load: each tool's model built in a child process of its own (``--load-repeat`` rounds, the
fastest kept): the time of the import of the tool's module, the time to build the model
from its file, and the growth of the process's RSS over the build (VmRSS after it, the
collector run, against VmRSS before it) and of its peak (VmHWM).
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "2")  # the Rust tools' batch threads, before they load
os.environ["TIKTOKEN_CACHE_DIR"] = ""  # tiktoken reads the local file, caches nothing

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import corpus, machine, publish, versions
from bench_encode import best, best_in_rounds

MODELS = Path(os.environ.get("BBPE_BENCH_MODELS", "/tmp/bbpe-bench-models")) / "bpe"
ENCODINGS = ["o200k_base", "cl100k_base"]
CORPORA = ["zh-large", "mixed", "en-large"]
TOOLS = ["bbpe", "tiktoken", "bpe-openai", "tokenizers", "fastokens", "bpe-qwen"]
MODULES = {"bbpe": "bbpe", "tiktoken": "tiktoken", "bpe-openai": "bpe_openai._bindings", "tokenizers": "tokenizers",
           "fastokens": "fastokens", "bpe-qwen": "bpe_qwen"}
CALLS = {  # what each column calls, for the README
    "bbpe": ("`BPE.from_tiktoken(path, name)`", "`encode`", "`encode_batch(lines, num_threads=2)`"),
    "tiktoken": ("`Encoding(...)` as `get_encoding` builds it", "`encode_ordinary`",
                 "`encode_ordinary_batch(lines, num_threads=2)`"),
    "bpe-openai": ("`_bindings.tokenizer_for_encoding(name)`", "`_bindings` tokenizer's `encode`",
                   "`get_encoding(name).encode_ordinary_batch(lines, num_threads=2)`"),
    "tokenizers": ("`Tokenizer.from_file(tokenizer.json)`", "`encode(s, add_special_tokens=False).ids`",
                   "`encode_batch(lines, add_special_tokens=False)`, `.ids` of each (rayon, 2 threads)"),
    "fastokens": ("`Tokenizer.from_tiktoken(path, encoding=name)`", "`encode(s).ids`",
                  "`encode_batch(lines)`, `.ids` of each (rayon, 2 threads)"),
    "bpe-qwen": ("`QwenTokenizer(dir)` on `vocab.json` + `merges.txt`", "`encode`",
                 "`encode_batch_parallel(lines, num_workers=2)`"),
}


# ----------------------------------------------------------------------------- files

def files(name: str) -> dict[str, Path]:
    """The ranks of ``name`` in every tool's format (made once, then kept)."""
    from importlib.util import find_spec

    package = Path(find_spec("bpe_openai").origin).parent  # not imported: its import is timed in load_child
    MODELS.mkdir(parents=True, exist_ok=True)
    out = {"gz": package / "data" / f"{name}.tiktoken.gz",
           "tiktoken": MODELS / f"{name}.tiktoken", "json": MODELS / f"{name}.json", "qwen": MODELS / f"{name}.qwen"}
    if not out["tiktoken"].exists():
        out["tiktoken"].write_bytes(gzip.decompress(out["gz"].read_bytes()))
    if not out["json"].exists():
        import bbpe

        bbpe.BPE.from_tiktoken(out["tiktoken"], name).save(out["json"])
    if not (out["qwen"] / "merges.txt").exists():
        model = json.loads(out["json"].read_text(encoding="utf-8"))["model"]
        out["qwen"].mkdir(exist_ok=True)
        (out["qwen"] / "vocab.json").write_text(json.dumps(model["vocab"], ensure_ascii=False), encoding="utf-8")
        merges = (m if isinstance(m, str) else " ".join(m) for m in model["merges"])
        (out["qwen"] / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    return out


def tiktoken_encoding(name: str, path: Path):
    """tiktoken's Encoding as ``tiktoken.get_encoding(name)`` builds it, from a local file."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    from tiktoken_ext import openai_public

    fetch = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda url, expected_hash=None: load_tiktoken_bpe(str(path))
    try:
        spec = getattr(openai_public, name)()
    finally:
        openai_public.load_tiktoken_bpe = fetch
    return tiktoken.Encoding(**spec)


def build(tool: str, name: str, paths: dict[str, Path]):
    """(the model, encode one str, encode a list on 2 threads) of a tool on ``name``'s ranks."""
    if tool == "bbpe":
        import bbpe

        tok = bbpe.BPE.from_tiktoken(paths["tiktoken"], name)
        return tok, tok.encode, lambda lines: tok.encode_batch(lines, num_threads=2)
    if tool == "tiktoken":
        enc = tiktoken_encoding(name, paths["tiktoken"])
        return enc, enc.encode_ordinary, lambda lines: enc.encode_ordinary_batch(lines, num_threads=2)
    if tool == "bpe-openai":
        from bpe_openai import _bindings

        model = _bindings.tokenizer_for_encoding(name)
        wrapper: list = []  # its Python Encoding, made at the first (untimed) batch

        def batch(lines):
            if not wrapper:
                import bpe_openai

                wrapper.append(bpe_openai.get_encoding(name))
            return wrapper[0].encode_ordinary_batch(lines, num_threads=2)

        return model, model.encode, batch
    if tool == "tokenizers":
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(paths["json"]))
        return (tok, lambda s: tok.encode(s, add_special_tokens=False).ids,
                lambda lines: [e.ids for e in tok.encode_batch(lines, add_special_tokens=False)])
    if tool == "fastokens":
        import fastokens

        tok = fastokens.Tokenizer.from_tiktoken(str(paths["tiktoken"]), encoding=name)
        return tok, lambda s: tok.encode(s).ids, lambda lines: [e.ids for e in tok.encode_batch(lines)]
    if tool == "bpe-qwen":
        import bpe_qwen

        tok = bpe_qwen.QwenTokenizer(str(paths["qwen"]))
        return tok, tok.encode, lambda lines: tok.encode_batch_parallel(lines, num_workers=2)
    raise ValueError(tool)


# ----------------------------------------------------------------------------- load, in a child

def _status(field: str) -> float:
    """A field of /proc/self/status, in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def load_child(tool: str, name: str) -> None:
    """Run in a child: import the tool, build its model, print the figures as JSON."""
    import importlib

    paths = files(name)
    start = time.perf_counter()
    module = importlib.import_module(MODULES[tool])
    if tool == "bbpe":
        module.BPE  # bbpe imports its parts when first used  # noqa: B018
    imported = time.perf_counter() - start
    gc.collect()
    rss, hwm = _status("VmRSS"), _status("VmHWM")
    start = time.perf_counter()
    model = build(tool, name, paths)[0]
    took = time.perf_counter() - start
    gc.collect()
    print(json.dumps({"import": imported, "load": took, "rss": _status("VmRSS") - rss,
                      "peak": max(0.0, _status("VmHWM") - max(hwm, rss))}))
    del model


def load_table(names: list[str], tools: list[str], repeat: int) -> dict:
    """{(name, tool): figures or an error} from children, in rounds; the fastest load kept."""
    runs: dict = {}
    for _ in range(repeat):
        for name in names:
            files(name)
            for tool in tools:
                if runs.get((name, tool), {}).get("error"):
                    continue
                done = subprocess.run([sys.executable, __file__, "--load-child", tool, name], check=False,
                                      capture_output=True, text=True, cwd="/", timeout=900)
                if done.returncode != 0:
                    runs[name, tool] = {"error": (done.stderr.strip().splitlines() or ["failed"])[-1][:120]}
                    continue
                got = json.loads(done.stdout.strip().splitlines()[-1])
                if (name, tool) not in runs or got["load"] < runs[name, tool]["load"]:
                    runs[name, tool] = got
                print(f"load {name:12s} {tool:11s} import {got['import']:.2f} s  load {got['load']:.2f} s  "
                      f"RSS +{got['rss']:.0f} MB (peak +{got['peak']:.0f} MB)", flush=True)
    return runs


# ----------------------------------------------------------------------------- speed

def mismatches(got: list, expected: list[list[int]]) -> int:
    return sum(list(a) != b for a, b in zip(got, expected)) + abs(len(got) - len(expected))


def speed(name: str, texts: dict[str, list[str]], tools: list[str], repeat: int) -> tuple[dict, dict]:
    """{(corpus, tool): {"single", "batch", "wrong"}} and {tool: an error} for one encoding."""
    paths = files(name)
    models, errors = {}, {}
    for tool in tools:
        try:
            models[tool] = build(tool, name, paths)
        except Exception as err:  # noqa: BLE001 -- a tool that cannot load these ranks: the table says so
            errors[tool] = f"{type(err).__name__}: {str(err).splitlines()[0][:100]}"
            print(f"{name}: {tool} does not load: {errors[tool]}", file=sys.stderr, flush=True)
    ref = models.get("tiktoken") or build("tiktoken", name, paths)
    out: dict = {}
    for cname, lines in texts.items():
        nbytes = sum(len(line.encode()) for line in lines)
        expected = [ref[1](line) for line in lines]
        runs = {}
        for tool, (_, single, batch) in models.items():
            # warm, and the ids checked: one call per line and the batch
            wrong = max(mismatches([single(line) for line in lines], expected), mismatches(batch(lines), expected))
            out[cname, tool] = {"wrong": wrong}
            runs[tool, "single"] = (lambda single=single, lines=lines: [single(line) for line in lines]), True
            runs[tool, "batch"] = (lambda batch=batch, lines=lines: batch(lines)), True
            if tool == "bbpe":  # its batch's speed-up on 2 threads, against its own batch on 1
                one = models[tool][0]
                runs[tool, "batch1"] = (lambda one=one, lines=lines: one.encode_batch(lines, num_threads=1)), True
        del expected
        for (tool, column), seconds in best_in_rounds(runs, repeat).items():
            out[cname, tool][column] = nbytes / seconds / 1e6
        for tool in models:
            r, t = out[cname, tool], out[cname, "tiktoken"]
            print(f"{name:12s} {cname:9s} {tool:11s} single {r['single']:7.1f} MB/s (x{r['single'] / t['single']:5.2f})"
                  f"  batch {r['batch']:7.1f} MB/s (x{r['batch'] / t['batch']:5.2f})  lines != tiktoken: {r['wrong']}",
                  flush=True)
    if "bbpe" in models:
        out["scaling"] = cache_scaling(models["bbpe"][0], texts[next(iter(texts))], repeat)
    del models, ref
    gc.collect()
    return out, errors


def cache_scaling(tok, lines: list[str], repeat: int) -> float:
    """How much more work 2 threads do than 1 when each re-encodes 200 KB that stays in the
    CPU's cache (bbpe's encoder alone, numpy output, without a large batch's memory
    traffic): what the machine's two vCPUs give at the time."""
    from concurrent.futures import ThreadPoolExecutor

    data = "\n".join(lines).encode()[:200_000].decode(errors="ignore")
    model = tok._model

    def work(_: int) -> None:
        for _ in range(20):
            model.encode_ids(data)

    with ThreadPoolExecutor(2) as pool:
        one = best(lambda: work(0), repeat)
        two = best(lambda: list(pool.map(work, [0, 1])), repeat)
    return 2 * one / two


# ----------------------------------------------------------------------------- report

def _ids_note(tool: str, wrong: int, n: int) -> str:
    if not wrong:
        return "yes"
    note = f"**no**: {wrong} of {n} lines differ"
    if tool == "bpe-qwen":
        note += " (its pre-tokenizer is Qwen2's, built in)"
    return note


def report(args, names, corpora, texts, results, errors, loads) -> list[str]:
    tools = args.tools
    sizes = ", ".join(f"{c} {len(texts[c]):,} lines, {sum(len(s.encode()) for s in texts[c]) / 1e6:.1f} MB"
                      for c in corpora)
    cmd = "python benchmarks/bench_bpe.py" + ("" if args.lines == 60000 else f" --lines {args.lines}")
    out = [f"## bbpe.BPE on OpenAI's encodings (`{cmd}`)\n",
           f"Machine: {machine()}.  ",
           f"Versions: {versions(['bbpe', 'tiktoken', 'bpe-openai', 'tokenizers', 'fastokens', 'bpe-qwen'])}.\n",
           ("Every tool encodes with OpenAI's ranks (the files of the `bpe_openai` wheel; HF tokenizers reads the "
            "`tokenizer.json` that bbpe writes from them, bpe-qwen the `vocab.json` and `merges.txt` in it). "
            f"The first {args.lines:,} lines of each corpus ({sizes}), as str. MB/s of UTF-8 input, best of "
            f"{args.repeat} rounds (each runs every column of every tool once), warm, each run from a clean heap "
            "with its results kept, Python's garbage collector on. single = one call per line, one thread; "
            "batch = the tool's batch call on 2 threads. × = the tool's figure over tiktoken's in the same column. "
            "ids: every line's ids, single and batch, against tiktoken's.\n"),
           "| encoding | corpus | tool | single MB/s | × tiktoken | batch MB/s | × tiktoken | ids = tiktoken's |",
           "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for name in names:
        for cname in corpora:
            t = results[name].get((cname, "tiktoken"))
            for tool in tools:
                r = results[name].get((cname, tool))
                if r is None:
                    out.append(f"| {name} | {cname} | {tool} | – | – | – | – | does not load: {errors[name][tool]} |")
                    continue
                bold = "**" if tool == "bbpe" else ""
                out.append(f"| {name} | {cname} | {bold}{tool}{bold} | {r['single']:.1f} | "
                           f"{bold}{r['single'] / t['single']:.2f}{bold} | {r['batch']:.1f} | "
                           f"{bold}{r['batch'] / t['batch']:.2f}{bold} | {_ids_note(tool, r['wrong'], len(texts[cname]))} |")
    out.append("")
    if "bbpe" in tools:
        ups = "; ".join(f"{name} " + ", ".join(f"{c} {results[name][c, 'bbpe']['batch'] / results[name][c, 'bbpe']['single']:.2f}x"
                                               for c in corpora) for name in names)
        out.append(f"* bbpe's `encode_batch` on 2 threads against its own one call per line: {ups}.")
        ones = "; ".join(f"{name} " + ", ".join(f"{c} {results[name][c, 'bbpe']['batch'] / results[name][c, 'bbpe']['batch1']:.2f}x"
                                                for c in corpora) for name in names)
        cache = ", ".join(f"{results[name]['scaling']:.2f}x" for name in names)
        out.append(f"* The same on 2 threads against `encode_batch(lines, num_threads=1)`, same rounds: {ones}. "
                   f"For comparison, the encoder alone, each of 2 threads re-encoding 200 KB of {corpora[0]} that "
                   f"stays in cache, does {cache} ({', '.join(names)}) the work of one thread: what this machine's "
                   "two vCPUs gave in this run.")
    out.append("* What each column calls: " + "; ".join(
        f"{tool}: load {CALLS[tool][0]}, single {CALLS[tool][1]}, batch {CALLS[tool][2]}" for tool in tools) + ".")
    if loads:
        out += ["", (f"Loading the model, each tool in a child process of its own (best of {args.load_repeat}): the "
                     "import of its module, then the build of the model from its file; RSS growth = the process's "
                     "resident memory after the build (the collector run) less before it; peak = the growth of its "
                     "high-water mark.\n"),
                "| encoding | tool | from | import s | load s | RSS growth MB | peak growth MB |",
                "| --- | --- | --- | ---: | ---: | ---: | ---: |"]
        source = {"bbpe": ".tiktoken", "tiktoken": ".tiktoken", "bpe-openai": "its own copy, in its extension",
                  "tokenizers": "tokenizer.json", "fastokens": ".tiktoken", "bpe-qwen": "vocab.json + merges.txt"}
        for name in names:
            for tool in tools:
                r = loads.get((name, tool))
                if r is None:
                    continue
                if "error" in r:
                    out.append(f"| {name} | {tool} | {source[tool]} | – | – | – | – ({r['error']}) |")
                    continue
                out.append(f"| {name} | {tool} | {source[tool]} | {r['import']:.2f} | {r['load']:.2f} | "
                           f"{r['rss']:.0f} | {r['peak']:.0f} |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="o200k_base, 10,000 lines, 2 rounds, no README")
    ap.add_argument("--lines", type=int, default=60000, help="the first N lines of each corpus")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of the speed runs")
    ap.add_argument("--load-repeat", type=int, default=3, help="rounds of the load children")
    ap.add_argument("--encodings", default=",".join(ENCODINGS))
    ap.add_argument("--corpora", default=",".join(CORPORA))
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--no-load", action="store_true", help="without the load table")
    ap.add_argument("--no-readme", action="store_true")
    ap.add_argument("--load-child", nargs=2, metavar=("TOOL", "ENCODING"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.load_child:
        load_child(*args.load_child)
        return
    if args.quick:
        args.lines, args.repeat, args.load_repeat, args.no_readme = 10000, 2, 1, True
        args.encodings = "o200k_base"
    names, corpora = args.encodings.split(","), args.corpora.split(",")
    args.tools = [t for t in args.tools.split(",") if t]
    if "tiktoken" not in args.tools:
        args.tools.insert(1, "tiktoken")  # the reference of every ratio and of the ids
    texts = {c: corpus(c).read_text(encoding="utf-8").split("\n")[: args.lines] for c in corpora}
    results, errors = {}, {}
    for name in names:
        results[name], errors[name] = speed(name, texts, args.tools, args.repeat)
    loads = {} if args.no_load else load_table(names, args.tools, args.load_repeat)
    table = report(args, names, corpora, texts, results, errors, loads)
    wrong = [(n, c) for n in names for c in corpora if results[n].get((c, "bbpe"), {}).get("wrong")]
    publish(table, "bench_bpe", readme=not args.no_readme and not wrong)
    if wrong:
        sys.exit(f"bbpe's ids differ from tiktoken's on {wrong}: the README is left as it was")


if __name__ == "__main__":
    main()
