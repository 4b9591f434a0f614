"""Counts tokens of many texts in parallel with bbpe's C-level API."""

from ._batch import count_tokens as count_tokens
