"""What the trainer's kernels (``_kernels``) and their Python drivers (``engine``) agree on:
the columns of the slot and key-state tables, the markers in them, the key flags and the
kernels' status codes.

They live apart from the kernels so that the drivers can read them without importing
numba (the kernels usually run compiled ahead of time, ``_compiled``). The kernels take
them as compile-time constants: numba's JIT cache keys on ``_kernels.py`` alone, so after
changing a value here, touch that file (or clear ``bbpe/__pycache__``).
"""

# Slots: row s of ``S (n, 4) int32`` (see ``_kernels``, section "slots")
TOK, PK, NXT, PRV = 0, 1, 2, 3
DEAD = -1  # TOK of a slot merged into its left neighbour, or deleted by the first pass
SENTINEL = -2  # TOK of the slot after each type

# Per-key state: row K of ``kst (n, 4) int32`` (section "incremental merges")
OCC, HEAD, TAIL, FLAGS = 0, 1, 2, 3
DIRTY = 1  # FLAGS bits
IN_VOCAB = 2  # in the vocabulary: its row must keep its bytes
TOKEN = 4  # a token (a char or a winner): slots refer to it
FINGER = 8  # finger[K] holds the slot linked into K last in this step (``_link``)
RAISED = 16  # linked into in this step: its heap entry may be too low (``run_merges``)

# Status codes of ``run_merges`` besides 0 (steps done) and 1 (limit reached)
NO_WINNER = -1  # no pair occurs twice any more
NEED_ROWS = -2  # reserve more key rows, then call again

# The scan's memo of char rows: ASCII, two-byte and three-byte chars (``_char_memo_index``)
CHAR_MEMO_SIZE = 128 + 2048 + 65536
