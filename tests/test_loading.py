"""Loading and saving: paths, binary file objects and bytes; a vocabulary-only ``.bin``
(which the C++ loads too); clear errors for a text file given as a model, bytes given to
``load`` and a missing directory."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from conftest import TANG300

import bbpe


@pytest.fixture(scope="module")
def tok():
    return bbpe.Tokenizer.train(TANG300, 2000)


def test_file_objects_and_bytes_round_trip(tok, tmp_path):
    buffer = io.BytesIO()
    tok.save(buffer)
    assert buffer.getvalue() == tok.to_bytes()
    assert bbpe.Tokenizer.load(io.BytesIO(buffer.getvalue())) == tok
    assert bbpe.Tokenizer.from_bytes(tok.to_bytes()) == bbpe.from_bytes(bytearray(tok.to_bytes())) == tok
    path = tmp_path / "m.bin"
    with open(path, "wb") as f:
        tok.save(f)
    with open(path, "rb") as f:
        assert bbpe.load(f) == tok


def test_a_vocabulary_only_bin(tok, tmp_path, oracle):
    path = tmp_path / "vocab.bin"
    tok.save(path, encodings=False)
    assert path.stat().st_size == 8 + 40 * len(tok) + 8
    loaded = bbpe.load(path)
    assert loaded.keys == tok.keys and loaded.n_train_encodings == 0
    assert loaded.to_bytes() == tok.to_bytes(encodings=False)
    full = tmp_path / "full.bin"
    tok.save(full)
    assert oracle.dump("vocab", path) == oracle.dump("vocab", full)  # the C++ loads it
    assert oracle.dump("trainenc", path) == b""
    texts = ["床前明月光，疑是地上霜。".encode(), b"abc <S> def"]
    assert oracle.encode(path, texts) == oracle.encode(full, texts)


def test_training_without_encodings(tmp_path):
    out = tmp_path / "m.bin"
    tok = bbpe.Tokenizer.train(TANG300, 2000, output=out, encodings=False)
    assert out.read_bytes() == bbpe.Tokenizer.train(TANG300, 2000).to_bytes(encodings=False)
    assert tok.n_train_encodings == 0 and bbpe.Tokenizer.train(TANG300, 2000, encodings=False).keys == tok.keys
    cli = tmp_path / "cli.bin"
    subprocess.run([sys.executable, "-m", "bbpe", "train", str(TANG300), "-n", "2000", "-o", str(cli), "-q",
                    "--no-encodings"], check=True, cwd=tmp_path)
    assert cli.read_bytes() == out.read_bytes()


def test_bad_sources_are_named(tok, tmp_path):
    with pytest.raises(TypeError, match="for a model's bytes use Tokenizer.from_bytes"):
        bbpe.load(tok.to_bytes())
    with pytest.raises(TypeError, match="from_bytes takes bytes, got str"):
        bbpe.from_bytes("m.bin")
    with pytest.raises(TypeError, match="open it in 'rb' mode"):
        bbpe.load(io.StringIO("text"))
    with pytest.raises(bbpe.FormatError, match=r"tang300.txt: offset 0: this is a text file, not a .bin model"):
        bbpe.load(TANG300)
    with pytest.raises(bbpe.FormatError, match=r"<bytes>: offset 0: this is a text file"):
        bbpe.from_bytes("床前明月光\n".encode("gbk") * 10)
    with pytest.raises(bbpe.FormatError, match="vocabulary count"):
        bbpe.from_bytes(b"\x01\x00\x00\x00\x00\x00\x00\x00" + bytes(30))  # binary, not text: the count's message


def test_saving_into_a_missing_directory_names_the_target(tok, tmp_path):
    target = tmp_path / "no" / "such" / "m.bin"
    with pytest.raises(FileNotFoundError, match=r"the directory .*no/such does not exist") as caught:
        tok.save(target)
    assert caught.value.filename == str(target)
    assert not (tmp_path / "no").exists()


def test_the_json_file_is_shaped_like_hf_and_told_apart_by_content(tok, tmp_path):
    import json

    path = tmp_path / "model.json"
    tok.save(path)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert list(document)[:9] == ["version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer",
                                  "model", "post_processor", "decoder"]
    assert document["model"]["type"] == "XBBPE" and len(document["model"]["vocab"]) == len(tok)
    odd = tmp_path / "model.data"  # the content decides, not the name
    odd.write_bytes(path.read_bytes())
    assert bbpe.load(odd).keys == tok.keys
    buffer = io.BytesIO()
    tok.save(buffer, format="json")
    assert bbpe.load(io.BytesIO(buffer.getvalue())).keys == tok.keys
    assert bbpe.from_bytes(tok.to_bytes(format="json")).to_bytes(encodings=False) == tok.to_bytes(encodings=False)


@pytest.mark.parametrize(("text", "message"), [
    ("{not json", "not a valid bbpe JSON file"),
    ('{"version": "1.0"}', "an object with a 'model' object"),
    ('{"version": "9", "model": {}}', "unknown version '9'"),
    ('{"version": "1.0", "model": {"type": "Unigram", "vocab": []}}', "model type 'Unigram'"),
    ('{"version": "1.0", "model": {"type": "WordPiece", "vocab": {}}}', r"model\.vocab: is empty"),
    ('{"version": "1.0", "model": {"type": "XBBPE", "vocab": {"a": 5}}}', "token 'a' has id 5"),
    ('{"version": "1.0", "model": {"type": "XBBPE", "vocab": {"a": 0}}}', "model: "),
    ('{"version": "1.0", "added_tokens": [{"id": "x"}], "model": {}}', "added_tokens must be a list"),
])
def test_a_bad_json_file_is_named(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(bbpe.FormatError, match=f"bad.json: offset [0-9]+: .*{message}"):
        bbpe.load(path)


def test_hf_template_processing_is_read(tok):
    """A post-processor written the HF way (``single`` as a list of pieces,
    tokenizers/src/processors/template.rs) gives the same template as bbpe's str form."""
    doc = json.loads(tok.to_bytes(format="json"))
    doc["post_processor"] = {"type": "TemplateProcessing", "single": [
        {"SpecialToken": {"id": "<S>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
        {"SpecialToken": {"id": "</S>", "type_id": 0}}], "pair": [], "special_tokens": {}}
    read = bbpe.Tokenizer.from_bytes(json.dumps(doc).encode())
    assert read(["床前"])["input_ids"] == [[tok.bos_id, *tok.encode("床前"), tok.eos_id]]
    assert read(["床前"], add_special_tokens=False)["input_ids"] == [tok.encode("床前")]


@pytest.mark.parametrize(("field", "value", "message"), [
    ("bbpe", [1], "'bbpe' options must be an object"),
    ("bbpe", {"truncation_side": "up"}, "truncation_side must be"),
    ("post_processor", {"type": "ByteLevel"}, "post_processor 'ByteLevel' is not one bbpe applies"),
    ("post_processor", {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "B"}}]},
     r"post_processor\.single: the single template must hold \$A once and no \$B"),
    ("post_processor", {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "C"}}]},
     r"post_processor\.single\[0\]: .* is not a piece of a template"),
    ("post_processor", {"type": "TemplateProcessing", "single": 5}, "'single' must be a str or a list"),
])
def test_bad_options_in_a_json_file_are_named(tok, field, value, message):
    doc = json.loads(tok.to_bytes(format="json"))
    doc[field] = value
    with pytest.raises(bbpe.FormatError, match=f"offset 0: .*{message}"):
        bbpe.Tokenizer.from_bytes(json.dumps(doc).encode())
