"""What training takes: one file, several files (as the C++ reads ``cat a b``), standard
input, or lines given one by one; and the progress it reports."""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest
from conftest import SONG100, TANG300

import bbpe


def test_several_files_train_as_their_concatenation(tmp_path):
    joined = tmp_path / "joined.txt"
    joined.write_bytes(TANG300.read_bytes() + SONG100.read_bytes())
    expected = bbpe.Tokenizer.train(joined, 3000)
    assert bbpe.Tokenizer.train([TANG300, SONG100], 3000).to_bytes() == expected.to_bytes()
    assert bbpe.Tokenizer.train((str(TANG300), SONG100), 3000) == expected
    # a file without a final LF runs into the next one's first line, as with cat
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_bytes("天地人".encode())
    b.write_bytes("天地人\n天地".encode())
    (tmp_path / "ab.txt").write_bytes(a.read_bytes() + b.read_bytes())
    assert bbpe.Tokenizer.train([a, b], 0) == bbpe.Tokenizer.train(tmp_path / "ab.txt", 0)


def test_the_cli_trains_on_several_files_and_on_stdin(tmp_path):
    joined = tmp_path / "joined.txt"
    joined.write_bytes(TANG300.read_bytes() + SONG100.read_bytes())

    def train(*args: str, stdin: bytes | None = None) -> bytes:
        out = tmp_path / "m.bin"
        subprocess.run([sys.executable, "-m", "bbpe", "train", *args, "-n", "3000", "-o", str(out), "-q"], check=True,
                       input=stdin, cwd=tmp_path)
        return out.read_bytes()

    expected = train(str(joined))
    assert train(str(TANG300), str(SONG100)) == expected
    assert train("-", stdin=joined.read_bytes()) == expected
    assert train(str(TANG300), "-", stdin=SONG100.read_bytes()) == expected


def test_a_missing_file_among_several_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        bbpe.Tokenizer.train([TANG300, tmp_path / "nope.txt"], 800)
    with pytest.raises(ValueError, match="no corpus file given"):
        bbpe.Tokenizer.train([], 800)
    with pytest.raises(ValueError, match="standard input"):
        bbpe.Tokenizer.train(["-", "-"], 800)
    with pytest.raises(TypeError, match="corpus path 1 must be a str or os.PathLike, got int"):
        bbpe.Tokenizer.train([TANG300, 3], 800)


def test_lines_of_any_iterable_equal_the_file():
    data = TANG300.read_bytes()
    expected = bbpe.Tokenizer.train(TANG300, 2000)
    lines = data.decode().split("\n")
    assert bbpe.Tokenizer.train_from_iterator(lines, 2000) == expected
    assert bbpe.Tokenizer.train_from_iterator((line.encode() for line in lines), 2000) == expected
    assert bbpe.Tokenizer.train_from_iterator([bytearray(line.encode()) for line in lines], 2000) == expected


def test_merge_progress_ends_at_the_keys_added():
    """The merge bar counts keys added: a winner that is a key already (Q9) adds none, so the
    last report never passes the total."""
    seen = []
    tok = bbpe.Tokenizer.train(TANG300, 4000, progress=lambda stage, done, total: seen.append((stage, done, total)))
    merges = [(done, total) for stage, done, total in seen if stage == "merge"]
    assert all(done <= total for done, total in merges)
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(merges))
    done, total = merges[-1]
    assert 0 < done == total  # the vocabulary filled up: the bar ends full, not past it
    assert len(tok) == 4000
