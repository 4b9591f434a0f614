"""Bad input, crashes and concurrency: every row of docs/errors.md that the other test files
do not already cover."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import warnings

import pytest
from conftest import DATA, TANG300
from hypothesis import given, settings
from hypothesis import strategies as st

import bbpe
from bbpe.xbbpe.binfile import parse_bin

GOLDEN800 = DATA / "golden" / "tang300_v800.bin"


# --------------------------------------------------------------------------- corpora


def test_empty_corpus(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_bytes(b"")
    with pytest.warns(bbpe.CorpusWarning, match="empty.txt: the corpus is empty: nothing was learned"):
        tok = bbpe.Tokenizer.train(path, 800)
    assert len(tok) == 270 and tok.train_encodings == []  # Q10/Q18: only the initial keys and specials


def test_path_through_a_file(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(OSError, match="f/corpus.txt"):
        bbpe.Tokenizer.train(tmp_path / "f" / "corpus.txt", 800)


def test_binary_junk_trains_and_round_trips(tmp_path):
    rng = random.Random(3)
    path = tmp_path / "junk.bin.txt"
    data = bytes(rng.randrange(256) for _ in range(200_000))
    path.write_bytes(data)
    with pytest.raises(UnicodeDecodeError) as bad:
        data.decode("utf-8")
    first_bad = bad.value.start
    line = data[:first_bad].count(b"\n") + 1
    with pytest.warns(bbpe.CorpusWarning, match=rf"junk.bin.txt: byte offset {first_bad} \(line {line}\) is not UTF-8"):
        tok = bbpe.Tokenizer.train(path, 0)
    tok.save(tmp_path / "junk.bin")
    assert bbpe.Tokenizer.load(tmp_path / "junk.bin").keys == tok.keys
    for line in path.read_bytes().split(b"\n")[:200]:
        assert tok.decode_bytes(tok.encode(line)) == line


def test_cut_char_at_the_end_of_a_segment(tmp_path):
    """Q20.1 in training: the reference pads the missing bytes with NUL (defined for one
    missing byte); bbpe trains the same keys, and still encodes losslessly by default."""
    lines = ["天地".encode() + b"\xe4\xb8"] * 3
    with pytest.warns(bbpe.CorpusWarning, match=r"<lines>: byte offset 6 \(line 1\) is not UTF-8"):
        tok = bbpe.Tokenizer.train_from_iterator(lines, 0)
    assert "天地".encode() + b"\xe4\xb8\x00" in tok.keys
    assert tok.decode_bytes(tok.encode(lines[0])) == lines[0]


def test_crlf_with_windows_text(tmp_path):
    """Q19: --windows-text reads CRLF as the MSVC build does, so it trains what LF gives."""
    lf = (DATA / "cases" / "cjk6.txt").read_bytes()
    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes(lf.replace(b"\n", b"\r\n"))
    assert len(bbpe.Tokenizer.train(crlf, 0)) == 279  # CR kept, as on Linux (QUIRKS Q19)
    windows = tmp_path / "windows.txt"
    windows.write_bytes(lf.replace(b"\n", b"\r\n") + b"\x1atrailing junk after Ctrl-Z")
    plain = tmp_path / "lf.txt"
    plain.write_bytes(lf)
    assert bbpe.Tokenizer.train(windows, 0, windows_text=True).to_bytes() == bbpe.Tokenizer.train(plain, 0).to_bytes()


def test_gbk_problems_are_reported_with_line_numbers(tmp_path):
    path = tmp_path / "gbk.txt"
    path.write_bytes("床前明月光\n".encode("gbk") + b"bad \x81 byte\n" + "疑是".encode("gbk") + b"\0cut\n")
    with pytest.warns(bbpe.GBKWarning) as caught:
        tok = bbpe.Tokenizer.train(path, 800, gbk=True)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2
    assert "line 2, byte 4: not GBK" in messages[0] and "line 3, byte 4: a NUL byte" in messages[1]
    assert tok.decode(tok.train_encodings[1]) == "bad \ufffd byte"  # as the reference: U+FFFD
    with pytest.raises(bbpe.GBKError, match=r"gbk.txt: line 2, byte 4"):
        bbpe.Tokenizer.train(path, 800, gbk=True, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bbpe.Tokenizer.train_from_iterator(["床前明月光".encode("gbk")], 800, gbk=True)  # valid: silent


def test_gbk_cli_warns_and_strict_fails(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes("天地\n".encode("gbk") + b"\xff\xfe\n")
    run = lambda *a: subprocess.run([sys.executable, "-m", "bbpe", "encode", "-m", str(GOLDEN800), "--gbk", *a,
                                     str(path)], capture_output=True, check=False, cwd=tmp_path)
    r = run()
    assert r.returncode == 0 and r.stdout.count(b"\n") == 2
    assert r.stderr.decode().strip() == f"bbpe: warning: {path}: line 2, byte 0: not GBK (the reference turns it into U+FFFD)"
    r = run("--strict")
    assert r.returncode == 1 and b"line 2, byte 0" in r.stderr and b"Traceback" not in r.stderr


def test_memory_check(tmp_path, monkeypatch):
    from bbpe.common import resources

    need = resources.training_estimate(TANG300.stat().st_size)
    monkeypatch.setattr(resources, "available_memory", lambda: need - 1)
    with pytest.raises(bbpe.InsufficientMemoryError, match=r"tang300.txt: training on .* may need up to .* MB"):
        bbpe.Tokenizer.train(TANG300, 800)
    monkeypatch.setattr(resources, "available_memory", lambda: need)
    assert len(bbpe.Tokenizer.train(TANG300, 800)) == 800  # exactly enough is enough
    assert len(bbpe.Tokenizer.train(TANG300, 800, memory_check=False)) == 800
    assert resources.training_estimate(10 << 20, gbk=True) > resources.training_estimate(10 << 20)
    assert resources.available_memory() is None or resources.available_memory() > 0


def test_mmap_threshold_is_fixed_on_glibc():
    """``bbpe train`` makes glibc return freed arrays to the system (docs/training.md)."""
    import platform

    from bbpe.common import resources

    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert resources.fix_mmap_threshold() is glibc


# --------------------------------------------------------------------------- .bin files


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_mutated_bin_files_fail_cleanly(data):
    """Flip, insert, delete or overwrite bytes of a real file: it loads, or FormatError."""
    raw = bytearray(GOLDEN800.read_bytes()[: 8 + 40 * 800 + 8 + 4000])
    for _ in range(data.draw(st.integers(1, 4))):
        if not raw:
            break
        kind = data.draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]))
        pos = data.draw(st.integers(0, len(raw) - 1))
        if kind == "flip":
            raw[pos] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "set":
            raw[pos : pos + 8] = data.draw(st.binary(min_size=8, max_size=8))
        elif kind == "insert":
            raw[pos:pos] = data.draw(st.binary(min_size=1, max_size=16))
        elif kind == "delete":
            del raw[pos : pos + data.draw(st.integers(1, 16))]
        else:
            del raw[pos:]
    try:
        parse_bin(bytes(raw), "mutated.bin")
    except bbpe.FormatError as err:
        assert str(err).startswith("mutated.bin: offset ")


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=300))
def test_random_bin_bytes_fail_cleanly(raw):
    with pytest.raises(bbpe.FormatError):
        parse_bin(raw)


# --------------------------------------------------------------------------- saving


def test_save_killed_midway_leaves_the_old_file(tmp_path):
    """SIGKILL while a .bin is being written: the old file stays whole, no temporary is left."""
    target = tmp_path / "model.bin"
    old = GOLDEN800.read_bytes()
    target.write_bytes(old)
    child = textwrap.dedent(f"""
        import sys, time, bbpe, bbpe.xbbpe.binfile as B
        tok = bbpe.Tokenizer.load({str(DATA / "golden" / "tang300_v4000.bin")!r})
        real = B.write_contents
        def slow(f, contents):
            f.write(b"x" * 100000)          # half a file is on disk...
            f.flush()
            print("writing", flush=True)
            time.sleep(60)                    # ...when the parent kills us
            real(f, contents)
        B.write_contents = slow
        tok.save({str(target)!r})
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, cwd=tmp_path)
    assert proc.stdout.readline() == b"writing\n"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert target.read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.bin"]


# --------------------------------------------------------------------------- threads


def test_one_tokenizer_many_threads():
    tok = bbpe.Tokenizer.load(DATA / "golden" / "tang300_v1.bin")
    rng = random.Random(11)
    poems = TANG300.read_text().splitlines()
    texts = [rng.choice(poems) * rng.randint(1, 30) if rng.random() < 0.7 else
             bytes(rng.randrange(256) for _ in range(rng.randrange(5000))) for _ in range(400)]
    expected = [tok.encode(t) for t in texts]
    decoded = [tok.decode_bytes(ids) for ids in expected]
    errors: list[str] = []

    def work(seed: int) -> None:
        order = list(range(len(texts)))
        random.Random(seed).shuffle(order)
        for i in order:
            ids = tok.encode(texts[i]) if seed % 2 else tok.encode_batch([texts[i]])[0]
            if ids != expected[i] or tok.decode_bytes(ids) != decoded[i]:
                errors.append(f"thread {seed}, text {i}")
            d = tok.decoder()
            if "".join(d.feed(ids[k : k + 3]) for k in range(0, len(ids), 3)) + d.flush() != \
                    decoded[i].decode("utf-8", "replace"):
                errors.append(f"thread {seed}, stream {i}")

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert errors == []
