"""Reading the fields of a JSON document with errors that name the file and the field.

Every check raises ``FormatError(name, 0, "model.vocab['x']: ...")``: the file, then the
field as a path into the document, then what is wrong with the value found there (shown
shortened, with its type where the text alone does not tell it). JSON's own errors (syntax,
bytes that are not UTF-8) give their byte offset instead (``parse``).
"""

from __future__ import annotations

import json
import re
import reprlib
from typing import Any, NoReturn

from ..errors import FormatError

_short = reprlib.Repr()  # a few levels and chars of a value, never the whole of a huge one
_short.maxlevel, _short.maxstring, _short.maxother, _short.maxlong = 3, 60, 60, 60
_short.maxlist = _short.maxdict = 4


def shown(value: Any) -> str:
    """``value`` as messages show it: as JSON spells it, shortened, its type where the text
    alone does not say it (``1.0 (a float)``, ``a list [1, 2]``)."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, float):
        return f"{value!r} (a float)"
    if isinstance(value, (list, dict)):
        return f"{'a list' if isinstance(value, list) else 'an object'} {_short.repr(value)}"
    return _short.repr(value)


def key(text: str) -> str:
    """A str as a key in a field path: ``model.vocab['Ġthe']``."""
    return _short.repr(text)


class Fields:
    """The checks for one document; ``name`` is its file in messages."""

    def __init__(self, name: str) -> None:
        self.name = name

    def fail(self, field: str, message: str) -> NoReturn:
        raise FormatError(self.name, 0, f"{field}: {message}")

    def refuse(self, field: str, stage: Any, why: str = "") -> NoReturn:
        """A pipeline stage bbpe does not apply: ``normalizer: NFKC is not supported by bbpe.BPE``."""
        kind = stage.get("type") if isinstance(stage, dict) else None
        what = kind if isinstance(kind, str) else shown(stage)
        self.fail(field, f"{what} is not supported by bbpe.BPE" + (f" ({why})" if why else ""))

    def obj(self, value: Any, field: str, what: str = "an object") -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(field, f"must be {what}, got {shown(value)}")
        return value

    def array(self, value: Any, field: str, what: str = "a list") -> list[Any]:
        if not isinstance(value, list):
            self.fail(field, f"must be {what}, got {shown(value)}")
        return value

    def flag(self, obj: dict[str, Any], name: str, field: str, default: bool | None = None) -> bool:
        """``obj[name]``, a bool; ``default`` when absent (None: it is required, as HF requires it)."""
        if name not in obj:
            if default is None:
                self.fail(f"{field}.{name}", "missing (HF tokenizers requires it)")
            return default
        value = obj[name]
        if not isinstance(value, bool):
            self.fail(f"{field}.{name}", f"must be true or false, got {shown(value)}")
        return value

    def integer(self, value: Any, field: str, limit: int = 1 << 32) -> int:
        """An int in 0..limit-1 (ids and type ids are HF's u32), never a bool or a float."""
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < limit:
            self.fail(field, f"must be an int in 0..{limit - 1}, got {shown(value)}")
        return value

    def text(self, value: Any, field: str) -> str:
        if not isinstance(value, str):
            self.fail(field, f"must be a str, got {shown(value)}")
        lone = _SURROGATE.search(value)
        if lone is not None:  # Python's json reads a "\ud800" escape; HF's reader (serde_json) refuses it
            self.fail(field, f"holds a lone surrogate (U+{ord(lone.group()):04X} at {lone.start()}), which is no text")
        return value

    def kind(self, stage: dict[str, Any], field: str) -> str:
        """A stage's ``type`` (HF also reads stages without one, by their fields: bbpe does not)."""
        kind = stage.get("type")
        if not isinstance(kind, str):
            self.fail(f"{field}.type", f"must name the {field.split('.')[0].split('[')[0]}'s type, got "
                                       f"{shown(kind) if 'type' in stage else 'nothing'}")
        return kind


def parse(data: bytes, name: str) -> Any:
    """The JSON value of ``data``; FormatError at the byte offset of a syntax error or of
    bytes that are not UTF-8."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise FormatError(name, err.start, f"not a valid JSON file ({err})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        offset = len(text[: err.pos].encode("utf-8"))  # err.pos counts chars: the offset is in bytes
        raise FormatError(name, offset, f"not a valid JSON file ({err.msg}, line {err.lineno} column {err.colno})"
                          ) from None
    except RecursionError:  # json's C scanner recurses per level
        raise FormatError(name, 0, "not a valid JSON file (arrays or objects nested too deeply)") from None
    except ValueError as err:  # an int of more digits than sys.get_int_max_str_digits()
        raise FormatError(name, 0, f"not a valid JSON file ({err})") from None


_SURROGATE = re.compile("[\ud800-\udfff]")
