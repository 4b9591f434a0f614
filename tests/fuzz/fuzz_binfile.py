"""Coverage-guided fuzzing of the .bin loader with atheris (see README.md here).

Property: any bytes either load or raise bbpe.FormatError naming "fuzz.bin" and an offset;
a file that loads saves back byte for byte and gives a tokenizer that encodes and decodes.
"""

import sys

import atheris

with atheris.instrument_imports(include=["bbpe"]):
    import bbpe
    from bbpe.xbbpe.binfile import bin_bytes, parse_bin


def test_one(data: bytes) -> None:
    try:
        contents = parse_bin(data, "fuzz.bin")
    except bbpe.FormatError as err:
        assert str(err).startswith("fuzz.bin: offset "), err
        return
    assert bin_bytes(contents) == data
    keys = [b""] * contents.records.shape[0]
    for row, length, kid in zip(contents.records["key"], contents.records["len"].tolist(),
                                contents.records["id"].tolist()):
        keys[kid] = row[:length].tobytes()
    tok = bbpe.Tokenizer(keys, record_order=contents.records["id"])
    sample = data[:64]
    assert tok.decode_bytes(tok.encode(sample)) == sample


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one)
    atheris.Fuzz()
