"""Coverage-guided fuzzing of the encoder and decoder with atheris (see README.md here).

Properties, on vocabularies with short keys, 21+-byte keys and tags inside keys: the
Cython encoder equals a literal Python transcription of the C++ Encode (both modes);
decode(encode(x)) == x by default; the streaming decoder gives what a one-shot decode gives.
"""

import os
import sys

import atheris

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

with atheris.instrument_imports(include=["bbpe", "encode_model"]):
    from encode_model import encode as model_encode

    import bbpe

DATA = os.path.join(os.path.dirname(HERE), "data")
MODELS = [bbpe.Tokenizer.load(os.path.join(DATA, "golden", "tang300_v1.bin")),
          bbpe.Tokenizer.train(os.path.join(DATA, "cases", "k24.txt"), 1000),
          bbpe.Tokenizer.train(os.path.join(DATA, "cases", "specials.txt"), 1000)]
VOCABS = [{k: i for i, k in enumerate(t.keys)} for t in MODELS]


def test_one(data: bytes) -> None:
    if not data:
        return
    which = data[0] % len(MODELS)
    tok, vocab, text = MODELS[which], VOCABS[which], data[1:]
    ids = tok.encode(text)
    assert ids == model_encode(vocab, text, compat=False)
    assert tok.encode(text, bug_compat=True) == model_encode(vocab, text, compat=True)
    assert tok.decode_bytes(ids) == text
    d = tok.decoder()
    assert "".join(d.feed(ids[k : k + 2]) for k in range(0, len(ids), 2)) + d.flush() == text.decode("utf-8", "replace")


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one)
    atheris.Fuzz()
