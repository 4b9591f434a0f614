"""The pair-merge engine: training by merging adjacent pairs of symbols over distinct words
with counts, the loop every pair-merge model here shares (byte-level BPE now; WordPiece,
Wubi BPE over code letters and word-level BPE over word ids are built on it).

Its input is model-free: word types as runs of symbol ids, their counts, and what each
first symbol spells (code points); its output, the merges in order. A model supplies the
words (its corpus rules and pre-tokenizer) and makes its vocabulary from the merges.
``train.train_merges`` is the driver; the kernels are in ``kernels``."""
