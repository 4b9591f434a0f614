"""A thin wrapper around the reference driver ``xbbpe`` (see the reference README)."""

from __future__ import annotations

import subprocess
from pathlib import Path


class Oracle:
    def __init__(self, exe: Path) -> None:
        self.exe = str(exe)

    def run(self, *args: str, stdin: bytes = b"", gbk: bool = False) -> bytes:
        cmd = [self.exe] + (["--gbk"] if gbk else []) + list(args)
        r = subprocess.run(cmd, input=stdin, capture_output=True, check=False)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.decode(errors='replace')}")
        return r.stdout

    def train(self, corpus: Path, vocab_size: int | str, out: Path, gbk: bool = False) -> bytes:
        """Train and return the bytes of the .bin."""
        self.run("train", str(corpus), str(vocab_size), str(out), gbk=gbk)
        return out.read_bytes()

    def encode(self, model: Path, texts: list[bytes], gbk: bool = False) -> list[list[int]]:
        """Encode each text (any bytes: passed as hex) -> its ids."""
        stdin = b"".join(t.hex().encode() + b"\n" for t in texts)
        lines = self.run("encodehex", str(model), stdin=stdin, gbk=gbk).split(b"\n")[:-1]
        return [[int(x) for x in line.split()] for line in lines]

    def decode(self, model: Path, id_lines: list[list[int]], gbk: bool = False) -> list[bytes]:
        """Decode each list of ids -> the bytes ``Decoded`` returns."""
        stdin = b"".join(" ".join(map(str, ids)).encode() + b"\n" for ids in id_lines)
        lines = self.run("decodehex", str(model), stdin=stdin, gbk=gbk).split(b"\n")[:-1]
        return [bytes.fromhex(line.decode()) for line in lines]

    def dump(self, command: str, model: Path) -> bytes:
        """The output of ``vocab``, ``trainenc`` or ``special``."""
        return self.run(command, str(model))
