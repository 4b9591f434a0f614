"""What the trainer's kernels and their Python drivers (``bbpe.xbbpe.engine``) agree on:
the columns of the slot and key-state tables, the markers in them, the key flags, the
kernels' status codes and the merge threads' shared array.

The kernels take them as compile-time constants (the JIT's cache is keyed on every file
of the package, ``kernels/__init__``, so an edit here is seen).
"""

KEY_BYTES = 24  # sizeof(WordIdKey::idKey), MaxKeyCount = 3 * 8: a key is three uint64 words

# Slots: row s of ``S (n, 4) int32`` (see ``layout``)
TOK, PK, NXT, PRV = 0, 1, 2, 3
DEAD = -1  # TOK of a slot merged into its left neighbour, or deleted by the first pass
SENTINEL = -2  # TOK of the slot after each type

# Per-key state: row K of ``kst (n, 4) int32`` (see ``merges``)
OCC, HEAD, TAIL, FLAGS = 0, 1, 2, 3
DIRTY = 1  # FLAGS bits
IN_VOCAB = 2  # in the vocabulary: its row must keep its bytes
TOKEN = 4  # a token (a char or a winner): slots refer to it
FINGER = 8  # finger[K] holds the slot linked into K last in this step (``_link``)
RAISED = 16  # linked into in this step: its heap entry may be too low (``run_merges``)

# Status codes of ``run_merges`` besides 0 (steps done) and 1 (limit reached)
NO_WINNER = -1  # no pair occurs twice any more
NEED_ROWS = -2  # reserve more key rows, then call again
RESTART = -3  # a step replaced an array the follower shares: start a new follower, call again
FOLLOWER_FAILED = -4  # the follower stopped before the leader was done (its error is raised)

# The merges on two threads (``run_merges`` leads, ``follow_merges`` follows): the slots
# are in two classes, each with lists of its own (``kst`` and ``kst1``); ``sync (24,)
# int64`` is how the two threads talk. The leader writes the first cache line, the
# follower the second; the third holds the leader's counts of its hand-overs.
SYNC_CMD = 0  # (sequence number << 2) | command: the leader's latest command
SYNC_WINNER = 1  # a WALK's winner
SYNC_TAG = 2  # its step's tag (the pair-key cache's)
SYNC_SETTLE = 3  # the last WALK the leader's own class is done with: the follower may settle it
SYNC_FREE = 4  # the last WALK whose class-0 keys the leader settled: the follower may free them
SYNC_FREES = 5  # how many (frees0[:n])
SYNC_LEADER_SLEEPS = 6  # 1 while the leader may be blocked in a wait (``_wait_for``)
SYNC_FOLLOWER_BELL = 7  # rung (incremented, then woken) when the follower may be blocked
SYNC_DONE = 8  # the last WALK the follower applied
SYNC_MERGED = 9  # the slots it merged away there
SYNC_SETTLED = 10  # the last WALK whose keys it settled
SYNC_PUSHES = 11  # the keys it left for the heap then (dirty1[:n], with pvals1[:n])
SYNC_STOPPED = 12  # set by the follower's thread when it stops (the leader's waits give up)
SYNC_FREED = 13  # the last WALK whose class-0 rows it freed
SYNC_FOLLOWER_SLEEPS = 14  # 1 while the follower may be blocked in a wait
SYNC_LEADER_BELL = 15  # rung when the leader may be blocked
SYNC_HANDED = 16  # steps the leader has handed to the follower, in all calls
SYNC_BLOCKED = 17  # of the leader's waits for the follower, those that outlasted the spin
SYNC_WAITED = 18  # nanoseconds the leader has waited for the follower, in all calls
SYNC_SLOW_SHARE = 19  # the follower is too slow once the leader waits 1/this of its time (0: never)
SYNC_SIZE = 24
CMD_WALK = 1  # apply SYNC_WINNER at its sites of class 1, then settle the keys that changed
CMD_EXIT = 2  # return

# The scan's memo of char rows: ASCII, two-byte and three-byte chars (``_char_memo_index``)
CHAR_MEMO_SIZE = 128 + 2048 + 65536
