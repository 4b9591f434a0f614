"""bbpe.hf: a transformers tokenizer over a bbpe one (the optional ``[hf]`` extra)."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, TANG300

transformers = pytest.importorskip("transformers", reason="bbpe.hf needs transformers: pip install 'bbpe[hf]'")

import bbpe
from bbpe.hf import BbpeTokenizer

TEXTS = ["床前明月光，疑是地上霜。", "举头望明月", "mixed English 和中文"]


@pytest.fixture(scope="module")
def tok():
    return bbpe.Tokenizer.train(TANG300, 2000)


@pytest.fixture
def hf(tok):
    return BbpeTokenizer(tok)


def test_calls_equal_bbpe(tok, hf):
    assert hf(TEXTS)["input_ids"] == [tok.encode(t) for t in TEXTS]
    assert hf.tokenize(TEXTS[0]) == tok.convert_ids_to_tokens(tok.encode(TEXTS[0]))
    assert hf.batch_decode(hf(TEXTS)["input_ids"]) == TEXTS
    assert (hf.pad_token, hf.bos_token, hf.eos_token) == ("<P>", "<S>", "</S>")
    assert (hf.pad_token_id, hf.bos_token_id, hf.eos_token_id) == (tok.pad_id, tok.bos_id, tok.eos_id)
    assert len(hf) == len(tok) and hf.get_vocab()["，"] == tok.token_to_id("，")


def test_pad_and_a_data_collator(tok, hf):
    features = [hf(t) for t in TEXTS]
    padded = hf.pad(features, return_tensors="np")
    width = max(len(tok.encode(t)) for t in TEXTS)
    assert padded["input_ids"].shape == (len(TEXTS), width)
    collator = transformers.DataCollatorWithPadding(hf, return_tensors="np")
    batch = collator(features)
    assert (batch["input_ids"] == padded["input_ids"]).all()
    for row, mask, text in zip(batch["input_ids"], batch["attention_mask"], TEXTS):
        assert row[mask == 1].tolist() == tok.encode(text)
        assert (row[mask == 0] == tok.pad_id).all()


def test_save_pretrained_and_from_pretrained(tok, hf, tmp_path):
    hf.add_special_tokens({"additional_special_tokens": ["<|eot|>"]})
    files = hf.save_pretrained(tmp_path)
    assert any(str(f).endswith("bbpe.json") for f in files)
    again = BbpeTokenizer.from_pretrained(tmp_path)
    text = "天<|eot|>地"
    assert again(text)["input_ids"] == hf(text)["input_ids"]
    assert hf(text)["input_ids"][1] == hf.convert_tokens_to_ids("<|eot|>")
    assert again.bbpe.keys == tok.keys and again.decode(again(text)["input_ids"]) == text


def test_decoding_is_exact(hf):
    # transformers 4.x's own decoding puts spaces around added tokens and, by default,
    # "cleans up" " ." into "."
    hf.add_special_tokens({"additional_special_tokens": ["<|eot|>"]})
    text = "a , b . 天<|eot|>地 ?  n't"
    ids = hf(text)["input_ids"]
    assert hf.decode(ids) == text
    assert hf.batch_decode([ids, ids[:3]]) == [text, hf.convert_tokens_to_string(hf.convert_ids_to_tokens(ids[:3]))]
    assert hf.decode(ids, skip_special_tokens=True) == text.replace("<|eot|>", "")


# run in the nested venv: checks that it imports the old transformers and the bbpe under test,
# then runs pytest in the same process
_NESTED_RUN = """
import os, sys
import transformers, bbpe, pytest
want_version, want_bbpe, *args = sys.argv[1:]
if not transformers.__version__.startswith(want_version + "."):
    sys.exit(f"the nested venv imports transformers {transformers.__version__} ({transformers.__file__}), "
             f"not {want_version}.*")
if os.path.realpath(bbpe.__file__) != want_bbpe:
    sys.exit(f"the nested venv imports bbpe from {bbpe.__file__}, not {want_bbpe}")
print(f"transformers {transformers.__version__} from {transformers.__file__}", flush=True)
sys.exit(pytest.main(args))
"""
# pip's words for an index it could not reach (pip 22-25)
_UNREACHABLE = ("Failed to establish a new connection", "NewConnectionError", "Could not fetch URL",
                "ConnectTimeout", "ReadTimeout", "Max retries exceeded", "ProxyError", "Network is unreachable",
                "Temporary failure in name resolution", "Name or service not known")


def _site_dirs() -> list[str]:
    """The running interpreter's site directories, in ``sys.path``'s order: a venv's own or
    the base interpreter's, and the user's when it is on the path."""
    import site

    dirs = [*site.getsitepackages(), site.getusersitepackages()]
    on_path = [os.path.realpath(p) for p in sys.path]
    return sorted({d for d in dirs if os.path.realpath(d) in on_path}, key=lambda d: on_path.index(os.path.realpath(d)))


@pytest.mark.slow
def test_under_the_oldest_transformers_the_extra_admits(tmp_path):
    """Every ``tests/test_hf*.py``, in a venv that has the oldest transformers ``bbpe[hf]``
    allows (pyproject.toml's bound) in front of this environment's packages.

    The nested venv sees this interpreter's site directories through a ``.pth`` line that
    calls ``site.addsitedir`` on each (so that the ``.pth`` files there, an editable
    install's finder among them, are read too), after its own site-packages, where pip puts
    the old transformers. Unlike ``venv --system-site-packages``, which gives the *base*
    interpreter's packages, this works from inside a venv as well as outside one."""
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11")
    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["hf"]
    oldest = next(req.split(">=")[1] for req in extra if req.startswith("transformers>="))
    if transformers.__version__.split(".")[:2] == oldest.split(".")[:2]:
        pytest.skip(f"transformers {oldest} is the one installed here")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    calls = "; ".join(f"site.addsitedir({d!r})" for d in _site_dirs())
    (Path(purelib) / "zz_outer_environment.pth").write_text(f"import site; {calls}\n")
    try:
        pip = subprocess.run([python, "-m", "pip", "install", "-q", "--retries", "2", "--timeout", "60",
                              f"transformers=={oldest}.*"], capture_output=True, text=True, check=False, timeout=900)
    except subprocess.TimeoutExpired:
        pytest.skip(f"pip could not install transformers {oldest}.* within 15 minutes: is the package index reachable?")
    if pip.returncode:
        if any(word in pip.stderr for word in _UNREACHABLE):
            pytest.skip(f"transformers {oldest}.* must come from PyPI, and pip could not reach it (no network?)")
        pytest.fail(f"pip could not install transformers {oldest}.*:\n{pip.stderr[-3000:]}")
    files = sorted(str(path) for path in Path(__file__).parent.glob("test_hf*.py"))
    run = subprocess.run([python, "-c", _NESTED_RUN, oldest, os.path.realpath(bbpe.__file__), "-q", "-p",
                          "no:cacheprovider", *files, "-k", "not oldest"],
                         capture_output=True, text=True, check=False, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert run.stdout.startswith(f"transformers {oldest}.")
    assert " passed" in run.stdout and "skipped" not in run.stdout.splitlines()[-1], run.stdout[-3000:]


def test_it_pickles(hf):
    again = pickle.loads(pickle.dumps(hf))
    assert again(TEXTS)["input_ids"] == hf(TEXTS)["input_ids"]


def test_pickle_and_deepcopy_keep_what_was_set_after_construction(tok):
    hf = BbpeTokenizer(tok)
    hf.padding_side, hf.truncation_side, hf.pad_token, hf.model_max_length = "left", "left", "<S>", 4
    hf.add_special_tokens({"additional_special_tokens": ["<extra>"]})
    texts = ["床前明月光", "a<extra>"]
    want = hf(texts, padding=True, truncation=True)["input_ids"]
    for again in (pickle.loads(pickle.dumps(hf)), copy.deepcopy(hf)):
        assert (again.padding_side, again.truncation_side, again.pad_token, again.model_max_length) == ("left", "left",
                                                                                                        "<S>", 4)
        assert again.all_special_tokens == hf.all_special_tokens and "<extra>" in again.all_special_tokens
        assert again(texts, padding=True, truncation=True)["input_ids"] == want


def test_bad_arguments():
    with pytest.raises(TypeError, match="needs a bbpe tokenizer"):
        BbpeTokenizer()
    with pytest.raises(TypeError, match="must be a bbpe tokenizer, got str"):
        BbpeTokenizer("model.bin")


def test_import_bbpe_does_not_import_transformers():
    code = "import sys, bbpe; bbpe.Tokenizer; print('transformers' in sys.modules, 'bbpe.hf' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=TANG300.parent)
    assert out.stdout.split() == ["False", "False"]


def test_special_tokens_added_on_the_bbpe_tokenizer_stay_whole(tok):
    own = bbpe.Tokenizer(tok.keys)
    own.add_special_tokens(["<|endoftext|>"])
    hf = BbpeTokenizer(own)
    text = "床前<|endoftext|>明月"
    assert hf(text)["input_ids"] == own.encode(text)
    assert hf.convert_tokens_to_ids("<|endoftext|>") == own.token_to_id("<|endoftext|>")
    assert hf.decode(hf(text)["input_ids"]) == text


def _templated(tok):
    own = copy.deepcopy(tok)
    own.set_template("<S> $A </S>")
    own.padding_side = own.truncation_side = "left"
    own.pad_token_id = own.token_to_id("，")
    return own


CALLS = [{}, {"padding": True}, {"padding": True, "truncation": True, "max_length": 5},
         {"padding": "max_length", "max_length": 30, "pad_to_multiple_of": 8}, {"add_special_tokens": False, "padding": True}]


def test_the_template_padding_side_and_pad_id_are_the_bbpe_tokenizers(tok, tmp_path):
    own = _templated(tok)
    hf = BbpeTokenizer(own)
    assert (hf.padding_side, hf.truncation_side, hf.pad_token_id) == ("left", "left", own.token_to_id("，"))
    BbpeTokenizer(own).save_pretrained(tmp_path)
    for h in (hf, BbpeTokenizer.from_pretrained(tmp_path)):
        for kwargs in CALLS:
            got, want = h(TEXTS, **kwargs), own(TEXTS, **kwargs)
            assert (got["input_ids"], got["attention_mask"]) == (want["input_ids"], want["attention_mask"]), kwargs
        assert h(TEXTS[1])["input_ids"] == [own.bos_id, *own.encode(TEXTS[1]), own.eos_id]
    assert hf.num_special_tokens_to_add() == 2 and hf.get_special_tokens_mask([5, 6]) == [1, 0, 0, 1]
    assert hf(TEXTS[1], return_special_tokens_mask=True)["special_tokens_mask"] == [1] + [0] * len(own.encode(TEXTS[1])) + [1]
    assert hf.decode(hf(TEXTS[1])["input_ids"], skip_special_tokens=True) == TEXTS[1]
    # what the caller passes wins
    plain = BbpeTokenizer(own, padding_side="right", pad_token="<P>")
    assert plain(["a", "bb"], padding=True)["input_ids"] == [[own.bos_id, 97, own.eos_id, own.pad_id],
                                                             [own.bos_id, 98, 98, own.eos_id]]


def test_the_bbpe_tokenizers_special_tokens_are_special(tok):
    own = copy.deepcopy(tok)
    own.add_special_tokens(["<|endoftext|>"])
    end = own.token_to_id("<|endoftext|>")
    hf = BbpeTokenizer(own)
    ids = hf("床前<|endoftext|>明月")["input_ids"]
    assert "<|endoftext|>" in hf.all_special_tokens and end in hf.all_special_ids
    assert hf.decode(ids, skip_special_tokens=True) == "床前明月"
    assert hf.batch_decode([ids], skip_special_tokens=True) == ["床前明月"]
    assert hf.get_special_tokens_mask(ids, already_has_special_tokens=True) == [int(i == end) for i in ids]
    # still special once add_special_tokens({...}) replaced transformers' extra special tokens
    hf.add_special_tokens({"additional_special_tokens": ["<extra>"]})
    assert hf.decode(ids, skip_special_tokens=True) == "床前明月" and end in hf.all_special_ids


def test_an_unknown_token_gets_unk_token_id(hf):
    assert hf.unk_token_id is None
    assert hf.convert_tokens_to_ids(["前", "not-a-token"]) == [hf.bbpe.token_to_id("前"), None]
    assert hf.convert_tokens_to_ids("not-a-token") is None


def test_a_special_token_that_reads_like_a_byte_token(tok):
    own = copy.deepcopy(tok)
    own.add_special_tokens(["<0xE5>"])
    hf = BbpeTokenizer(own)
    for text in ("床", "x<0xE5>y", "床<0xE5>"):
        assert hf(text)["input_ids"] == own.encode(text)
        assert hf.decode(hf(text)["input_ids"]) == text
    assert hf.decode(hf("x<0xE5>y")["input_ids"], skip_special_tokens=True) == "xy"
    assert hf("x<0xE5>y", split_special_tokens=True)["input_ids"] == own.encode("x<0xE5>y", split_special_tokens=True)


@pytest.fixture
def with_special(tok):
    """(a bbpe tokenizer with a template and a special token, the wrapper over it, texts
    with that token, an emoji and an empty one)."""
    own = _templated(tok)
    own.add_special_tokens(["<|e|>"])
    return own, BbpeTokenizer(own), [*TEXTS, "a<|e|>b😀", ""]


def test_offsets_as_the_bbpe_tokenizer_gives_them(with_special):
    own, hf, texts = with_special
    for side in ("left", "right"):
        own.padding_side = hf.padding_side = side
        for kwargs in CALLS:
            got = hf(texts, return_offsets_mapping=True, **kwargs)
            want = own(texts, return_offsets_mapping=True, **kwargs)
            assert got == want, kwargs
    one = hf(TEXTS[0], return_offsets_mapping=True)
    assert one["offset_mapping"] == [(0, 0), *own.encode_with_offsets(TEXTS[0])[1], (0, 0)]
    assert "special_tokens_mask" not in one
    array = hf(texts, return_offsets_mapping=True, padding=True, return_tensors="np")["offset_mapping"]
    assert (array == own(texts, return_offsets_mapping=True, padding=True, return_tensors="np")["offset_mapping"]).all()
    # truncating on the left keeps the last tokens, and their offsets
    hf.truncation_side = "left"
    cut = hf("床前明月光", return_offsets_mapping=True, truncation=True, max_length=4)
    assert cut["input_ids"] == [own.bos_id, *own.encode("床前明月光")[-2:], own.eos_id]
    assert cut["offset_mapping"] == [(0, 0), *own.encode_with_offsets("床前明月光")[1][-2:], (0, 0)]
    with pytest.raises(NotImplementedError, match="single texts"):
        hf("床前", "明月", return_offsets_mapping=True)


def test_offsets_tokenize_each_text_once(with_special, monkeypatch):
    own, hf, texts = with_special
    want = own(texts, return_offsets_mapping=True, padding=True)
    tokenize = BbpeTokenizer.tokenize
    calls = []

    def counted(self, text, **kwargs):
        calls.append((text, self._recording is not None))
        return tokenize(self, text, **kwargs)

    monkeypatch.setattr(BbpeTokenizer, "tokenize", counted)
    assert hf(texts, return_offsets_mapping=True, padding=True) == want
    assert calls == [(t, True) for t in texts]

    def interleaved(self, text, **kwargs):
        # another thread's call on the same object records a text of its own in between
        if self._recording is not None:
            self._recording.append(("other", False, ["x"]))
        return counted(self, text, **kwargs)

    calls.clear()
    monkeypatch.setattr(BbpeTokenizer, "tokenize", interleaved)
    assert hf(texts, return_offsets_mapping=True, padding=True) == want
    assert calls[len(texts):] == [(t, False) for t in texts]  # no record was the text's own: tokenized again
