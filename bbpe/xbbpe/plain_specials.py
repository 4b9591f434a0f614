"""XBBPE's own special tokens (``<P>``, ``<S>``, ``</S>``, QUIRKS Q12) read as plain text,
as ``split_special_tokens=True`` or ``allowed_special`` asks: the text encoded as if their
keys were not in the vocabulary, every other key (their prefix chains ``<P``, ``<S``,
``</``, ``</S`` included) as it is.

Exact without a second trie: the encoder is greedy and memoryless (Q14), so the ids before
an excluded key's place are what they were, and a special token ends its ``<...>`` segment
(Q13), after which encoding starts afresh. In its place the greedy walk stops one key
short: ``<S>`` gives the ids of its prefix key ``<S`` and of ``>``.
"""

from __future__ import annotations

from ..codec import Model


def encode_without(model: Model, keys: list[bytes], data: bytes, compat: bool, excluded: dict[int, bytes]
                   ) -> list[int]:
    """``data`` encoded as if the keys of ``excluded`` (id -> key) were not in ``model``'s
    vocabulary (``keys``: each id's bytes); ``compat`` as ``Model.encode`` takes it."""
    out: list[int] = []
    while True:
        lossless = model.encode(data, False)  # positions: each key spells its bytes
        at = next((k for k, kid in enumerate(lossless) if kid in excluded), -1)
        if at < 0:
            return out + (model.encode(data, True) if compat else lossless)
        start = sum(len(keys[kid]) for kid in lossless[:at])
        out += model.encode(data[:start], True) if compat else lossless[:at]
        special = excluded[lossless[at]]
        out += greedy_without(model, special)
        data = data[start + len(special) :]


def greedy_without(model: Model, key: bytes) -> list[int]:
    """The greedy walk (Q14) over ``key``'s chars with ``key`` itself not a key."""
    chars = [c.encode("utf-8", "surrogatepass") for c in key.decode("utf-8", "surrogatepass")]
    out: list[int] = []
    i = 0
    while i < len(chars):
        match, j = chars[i], i
        while j + 1 < len(chars) and (grown := match + chars[j + 1]) != key and model.lookup(grown) >= 0:
            match, j = grown, j + 1
        out += model.encode(match, False)  # a key, or one char's byte fallback (Q15)
        i = j + 1
    return out
