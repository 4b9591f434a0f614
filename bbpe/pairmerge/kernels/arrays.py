"""Arrays that grow: the loop's tables start at a size estimated from the words and double
when full (each call returns the bigger copy, which the caller keeps)."""

import numpy as np

from bbpe.kernels.support import _njit


@_njit
def grown1(array, at_least):
    """A 1-d ``array`` with room for ``at_least`` items (at least twice its size)."""
    bigger = np.empty(max(2 * len(array), at_least), dtype=array.dtype)
    bigger[:len(array)] = array
    return bigger


@_njit
def grown2(array):
    """A 2-d ``array`` with twice the rows."""
    bigger = np.empty((2 * len(array), array.shape[1]), dtype=array.dtype)
    bigger[:len(array)] = array
    return bigger
