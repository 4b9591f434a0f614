"""README: the files beside this script were made by `python tests/data/bpe/make_hf_models.py` (repo root).

Small byte-level BPE tokenizers trained by HF ``tokenizers`` (0.23.3) on the reference
corpora (``../shared/reference/corpora/*.txt``, Chinese poems) and, for English merges,
CPython's ``LICENSE.txt``, saved as HF saves them. tests/test_bpe_formats.py reads them and
checks that bbpe reads what HF reads. Each file is one shape of pipeline that real models
use:

| file | vocab | pre-tokenizer | else |
| --- | --- | --- | --- |
| bl300.json | 300 | ByteLevel (GPT-2's regex) | ``<|endoftext|>`` in the vocabulary (GPT-2's way) |
| bl1000_prefix.json | 1000 | ByteLevel, add_prefix_space | ByteLevel post-processor (offsets) |
| mixed5000.json | 5000 | ByteLevel | corpora + English, a RoBERTa template |
| split1000.json | 1000 | Split(Llama 3's) + ByteLevel(no regex) | Llama 3's: ignore_merges, added tokens, a template |
| nfc_qwen1000.json | 1000 | Split(Qwen2's) + ByteLevel(no regex) | NFC normalizer, ``<|im_start|>``, ``<|im_end|>`` |
| unk300.json | 300 | ByteLevel | no initial alphabet: bytes that are no token become ``<unk>``, fused |
| gpt2_vocab.json, gpt2_merges.txt | 300 | | bl300's model as GPT-2's two files |
"""

from __future__ import annotations

import json
import os
import sysconfig
from pathlib import Path

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

HERE = Path(__file__).resolve().parent
CORPORA = sorted((HERE.parents[3] / "shared" / "reference" / "corpora").glob("*.txt"))
ENGLISH = Path(sysconfig.get_paths()["stdlib"]) / "LICENSE.txt"

# Llama 3's and Qwen2's Split patterns, as their tokenizer.json files hold them
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
          r"\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
         r"\s+(?!\S)|\s+")


def byte_level(vocab_size: int, files: list[Path], *, add_prefix_space: bool = False,
               specials: tuple[str, ...] = ("<|endoftext|>",), alphabet: bool = True,
               unk: str | None = None) -> Tokenizer:
    """A ByteLevel BPE as ``ByteLevelBPETokenizer`` makes it, trained on ``files``."""
    tok = Tokenizer(models.BPE(unk_token=unk, fuse_unk=unk is not None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
    tok.decoder = decoders.ByteLevel()
    tok.train([str(f) for f in files], trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=list(specials), show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet() if alphabet else []))
    return tok


def split(vocab_size: int, pattern: str, files: list[Path]) -> Tokenizer:
    """Llama 3's layout: a Split, then ByteLevel without its regex; ignore_merges."""
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.train([str(f) for f in files], trainers.BpeTrainer(
        vocab_size=vocab_size, show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return tok


def save(tok: Tokenizer, name: str) -> None:
    tok.save(str(HERE / name), pretty=False)  # compact: a third of the size
    size = os.path.getsize(HERE / name)
    assert size < 500_000, f"{name}: {size} bytes"
    print(f"{name}: vocab {tok.get_vocab_size()}, {size} bytes")


def main() -> None:
    assert CORPORA, "no corpora found"
    bl300 = byte_level(300, CORPORA)
    save(bl300, "bl300.json")
    bl300.model.save(str(HERE), "gpt2")  # gpt2-vocab.json, gpt2-merges.txt
    os.replace(HERE / "gpt2-vocab.json", HERE / "gpt2_vocab.json")
    os.replace(HERE / "gpt2-merges.txt", HERE / "gpt2_merges.txt")

    tok = byte_level(1000, CORPORA, add_prefix_space=True)
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    save(tok, "bl1000_prefix.json")

    tok = byte_level(5000, [*CORPORA, ENGLISH], specials=("<s>", "<pad>", "</s>", "<unk>"))
    ids = tok.get_vocab()
    tok.post_processor = processors.RobertaProcessing(("</s>", ids["</s>"]), ("<s>", ids["<s>"]),
                                                      add_prefix_space=False)
    save(tok, "mixed5000.json")

    tok = split(1000, LLAMA3, [*CORPORA, ENGLISH])
    tok.add_special_tokens(["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"])
    tok.add_tokens([AddedToken("<|reserved_0|>", special=False, normalized=False)])
    bos = tok.get_vocab()["<|begin_of_text|>"]
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                      pair="<|begin_of_text|> $A <|begin_of_text|>:1 $B:1",
                                      special_tokens=[("<|begin_of_text|>", bos)])])
    save(tok, "split1000.json")

    tok = split(1000, QWEN2, [*CORPORA, ENGLISH])
    tok.normalizer = normalizers.NFC()
    tok.add_special_tokens(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    save(tok, "nfc_qwen1000.json")

    save(byte_level(300, CORPORA, specials=("<unk>",), alphabet=False, unk="<unk>"), "unk300.json")
    json.loads((HERE / "unk300.json").read_text())  # it is JSON


if __name__ == "__main__":
    main()
