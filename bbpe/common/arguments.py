"""Checking the integer arguments of the user layer (sizes, thread counts, ids to pad with)
in one way: numpy integers are taken as their int, as transformers takes them; a bool, a
float or anything else that is no integer is a TypeError naming the argument, a value out
of range a ValueError naming it."""

from __future__ import annotations


def int_argument(name: str, value: object, kind: str, low: int, high: int | None = None) -> int | None:
    """``value`` as an int in ``low..high-1`` (no upper bound when ``high`` is None), or None.
    ``kind`` says what it must be in the errors ("a positive int")."""
    if value is None:
        return None
    if isinstance(value, (bool, float)) or not hasattr(value, "__index__"):
        raise TypeError(f"{name} must be {kind} or None, got {type(value).__name__}")
    number = value.__index__()
    if high is not None and not low <= number < high:
        raise ValueError(f"{name} must be in {low}..{high - 1}, got {number}")
    if number < low:
        raise ValueError(f"{name} must be {kind} or None, got {number}")
    return number


def trainer_ints(*named: tuple[str, object, bool]) -> None:
    """A trainer's counts and sizes, each ``(name, value, optional)``: an int in 0..2**31-1
    (HF's trainers take u32-sized ones), or None where optional."""
    for name, value, optional in named:
        if value is None and optional:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
        if not 0 <= value < 1 << 31:
            raise ValueError(f"{name}: {value} is out of range (0 to 2**31 - 1)")
