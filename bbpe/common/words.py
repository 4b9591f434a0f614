"""Pre-split words (``is_split_into_words=True``), shared by every model: each word is
encoded alone, so that no token spans two words (what token classification needs, and
what transformers does), with the separator the text the words came from had before it.

A byte-level model has no word boundary of its own: the space between two words is a byte
it encodes. transformers' byte-level tokenizers (GPT-2, RoBERTa with
``add_prefix_space=True``) put a space before every word. bbpe puts one between two words
(not before the first: ``tok(["Hello", "world"], is_split_into_words=True)`` gives the ids
of ``tok("Hello world")`` wherever no token of that text spans the space), except where
either side of the junction is a char of a script written without spaces (Han ideographs,
kana, bopomofo, CJK punctuation and full-width forms): ``["床前", "明月光"]`` is encoded
as ``床前`` and ``明月光``, not with a space that a Chinese text never had.
"""

from __future__ import annotations

import re

# the chars of scripts written without spaces between words (Unicode blocks): CJK
# symbols and punctuation, kana, bopomofo, the CJK ideographs and their extensions and
# compatibility forms, full-width and half-width forms
_NO_SPACE = re.compile("[\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
                       "\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003ffff]")


def word_texts(words: object, name: str = "text") -> list[str | bytes]:
    """The words of one pre-split text, each with the separator that goes before it (see
    the module): a space, or nothing. ``words`` is a list or tuple of str (or of bytes,
    UTF-8); TypeError names the first item that is not."""
    if isinstance(words, (str, bytes)) or not isinstance(words, (list, tuple)):
        raise TypeError(f"{name} must be a list of words with is_split_into_words=True, "
                        f"got {type(words).__name__}")
    out: list[str | bytes] = []
    previous = ""  # the last char of the word before, as text
    for i, word in enumerate(words):
        if isinstance(word, str):
            text = word
        elif isinstance(word, (bytes, bytearray)):
            text = bytes(word).decode("utf-8", "replace")
        else:
            raise TypeError(f"{name}[{i}] must be a str or bytes, got {type(word).__name__}")
        spaced = i > 0 and not (_NO_SPACE.match(previous) or _NO_SPACE.match(text[:1]))
        if isinstance(word, str):
            out.append(" " + word if spaced else word)
        else:
            out.append(b" " + bytes(word) if spaced else bytes(word))
        if text:
            previous = text[-1]
    return out
