"""One training run, in its own process: ``python _trainers.py TOOL CORPUS VOCAB OUTDIR``.

Each anchor is set up as issue 3 of bbpe asks, and writes its model into OUTDIR.
"""

from __future__ import annotations

import os
import sys


def hf_tokenizers(corpus: str, vocab: int, out: str) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    tok.train([corpus], trainers.BpeTrainer(vocab_size=vocab, show_progress=False))
    tok.save(os.path.join(out, "hf.json"))


def sentencepiece(corpus: str, vocab: int, out: str) -> None:
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=os.path.join(out, "spm"), vocab_size=vocab, model_type="bpe",
        character_coverage=1.0, byte_fallback=True, input_sentence_size=0, minloglevel=2,
    )


def youtokentome(corpus: str, vocab: int, out: str) -> None:
    import youtokentome as yttm

    yttm.BPE.train(data=corpus, model=os.path.join(out, "yttm.model"), vocab_size=vocab)


def rustbpe(corpus: str, vocab: int, out: str) -> None:
    import rustbpe as rb

    tok = rb.Tokenizer()
    with open(corpus, encoding="utf-8") as f:
        tok.train_from_iterator(f, vocab_size=vocab)
    with open(os.path.join(out, "rustbpe.ranks"), "w") as f:
        f.writelines(f"{token.hex()} {rank}\n" for token, rank in tok.get_mergeable_ranks())


TRAINERS = {"tokenizers": hf_tokenizers, "sentencepiece": sentencepiece, "youtokentome": youtokentome,
            "rustbpe": rustbpe}

if __name__ == "__main__":
    tool, corpus, vocab, out = sys.argv[1:5]
    TRAINERS[tool](corpus, int(vocab), out)
