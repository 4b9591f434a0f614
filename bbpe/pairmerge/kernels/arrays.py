"""Arrays that grow: the loop's tables start at a size estimated from the words and grow by
half when full (each call returns the bigger copy, which the caller keeps): half, not
double, because the tables are most of a training run's memory."""

import numpy as np

from bbpe.kernels.support import _njit


@_njit
def grown1(array, at_least):
    """A 1-d ``array`` with room for ``at_least`` items (at least half again its size)."""
    bigger = np.empty(max(len(array) * 3 // 2 + 16, at_least), dtype=array.dtype)
    bigger[:len(array)] = array
    return bigger


@_njit
def grown2(array, at_least=0):
    """A 2-d ``array`` with room for ``at_least`` rows (at least half again as many)."""
    bigger = np.empty((max(len(array) * 3 // 2 + 16, at_least), array.shape[1]), dtype=array.dtype)
    bigger[:len(array)] = array
    return bigger
