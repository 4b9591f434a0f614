"""Reference implementations the tests check bbpe against (not shipped in the wheel)."""
