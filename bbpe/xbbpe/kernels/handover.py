"""How the merges' two threads hand work to each other: posts and waits on a shared
array, which spin briefly and then sleep (docs/training.md, "On a busy machine"); the
spin lock under which keys are made; and when the follower is too slow to be worth it.
"""

import numpy as np

from bbpe.kernels.support import (
    _inline,
    _njit,
    _release,
    atomic_cas,
    atomic_load,
    atomic_store,
    exported,
    full_fence,
    monotonic_ns,
    sleep_while,
    spin_pause,
    wake_all,
    yield_cpu,
)

from .tables import (
    CMD_EXIT,
    SYNC_BLOCKED,
    SYNC_CMD,
    SYNC_FOLLOWER_BELL,
    SYNC_FOLLOWER_SLEEPS,
    SYNC_LEADER_BELL,
    SYNC_LEADER_SLEEPS,
    SYNC_STOPPED,
    SYNC_WAITED,
)

_LOCK_SPINS = 1024  # a spin lock's pauses (tens of microseconds) before it yields each try


@_inline
def _lock(lock):
    spins = 0
    while not atomic_cas(lock, 0, 0, 1):
        if spins < _LOCK_SPINS:  # the holder makes one key: usually a few hundred nanoseconds
            spins += 1
            spin_pause()
        else:  # the holder is not running: let it
            yield_cpu()
    _release(lock)


@_inline
def _unlock(lock):
    atomic_store(lock, 0, 0)
    _release(lock)


_SPIN_NS = 50_000  # how long a wait spins before it sleeps (most hand-overs take less)


@_inline
def _wait_for(sync, what, number, equal, watch, expected, sleeps, bell):
    """Wait until ``sync[what] == number`` is ``equal`` (the other thread posted there),
    spinning for ``_SPIN_NS``, then sleeping on ``sync[bell]`` with ``sync[sleeps]`` set,
    which ``_post`` rings. Gives up if ``sync[watch]`` stops being ``expected`` first (no
    watch if ``watch`` < 0). Returns the nanoseconds waited (0 for a wait of a few
    pauses), or -1 if given up. The leader waits for the follower's SYNC_DONE,
    SYNC_SETTLED and SYNC_FREED, given up if SYNC_STOPPED is set; the follower for the
    leader's next command and for its SYNC_SETTLE and SYNC_FREE, given up if a newer
    command comes (CMD_EXIT: the leader stopped with an error). Without a clock
    (``monotonic_ns`` is 0) it only spins."""
    start = np.int64(0)
    spins = 0
    given_up = False
    while (atomic_load(sync, what) == number) != equal:
        if watch >= 0 and atomic_load(sync, watch) != expected:
            given_up = True
            break
        spins += 1
        if spins & 15 != 0:
            spin_pause()
            continue
        now = monotonic_ns()
        if start == 0:
            start = now
        elif now - start > _SPIN_NS:
            ring = atomic_load(sync, bell)
            atomic_store(sync, sleeps, 1)
            full_fence()  # the poster sees the flag, or this sees its post
            if (atomic_load(sync, what) == number) != equal and (watch < 0 or atomic_load(sync, watch) == expected):
                sleep_while(sync, bell, ring)
            atomic_store(sync, sleeps, 0)
    waited = np.int64(-1) if given_up else monotonic_ns() - start if start != 0 else np.int64(0)
    _release(sync)
    return waited


@_inline
def _post(sync, what, value, sleeps, bell):
    """``sync[what] = value`` (a release store), and the bell rung if the other thread may
    be asleep (``_wait_for``)."""
    atomic_store(sync, what, value)
    full_fence()
    if atomic_load(sync, sleeps) != 0:
        atomic_store(sync, bell, sync[bell] + 1)
        wake_all(sync, bell)
    _release(sync)


@_inline
def _post_to_follower(sync, what, value):
    _post(sync, what, value, SYNC_FOLLOWER_SLEEPS, SYNC_FOLLOWER_BELL)


@_inline
def _post_to_leader(sync, what, value):
    _post(sync, what, value, SYNC_LEADER_SLEEPS, SYNC_LEADER_BELL)


@_inline
def _leader_waits_for(sync, what, number):
    """The leader's wait for the follower's post; False if the follower stopped. Adds the
    time waited to SYNC_WAITED, and counts the waits that outlasted the spin (SYNC_BLOCKED)."""
    waited = _wait_for(sync, what, number, True, SYNC_STOPPED, 0, SYNC_LEADER_SLEEPS, SYNC_LEADER_BELL)
    if waited < 0:
        return False
    sync[SYNC_WAITED] += waited
    if waited > _SPIN_NS:
        sync[SYNC_BLOCKED] += 1
    return True


@_inline
def _command(sync, command, code):
    """Hand the follower command number ``command`` (one post of the command word)."""
    _post_to_follower(sync, SYNC_CMD, (command << 2) | code)


_SLOW_NS = 500_000  # waits of less than this in a call of run_merges say nothing yet


@exported(lambda t: t.boolean(t.i8, t.i8, t.i8))
@_njit
def too_slow(waited, elapsed, share):
    """Whether a follower that kept the leader waiting ``waited`` ns of ``elapsed`` is
    too slow to be worth its hand-overs: more than 1/``share`` of the time (never if
    ``share`` is 0). Alone on a machine the leader waits a few per cent of its time
    (the classes' walks differ a little); with the follower's CPU taken by other work,
    most of it."""
    return share > 0 and waited >= _SLOW_NS and waited * share > elapsed


@exported(lambda t: t.none(t.I8))
@_njit
def stop_follower(sync):
    """Tell the follower to return (CMD_EXIT), from the leader's side: the caller of
    ``run_merges``, once it has returned."""
    _command(sync, (sync[SYNC_CMD] >> 2) + 1, CMD_EXIT)


@exported(lambda t: t.none(t.I8))
@_njit
def follower_stopped(sync):
    """Tell the leader that the follower's thread has stopped (SYNC_STOPPED): a leader
    still waiting for it gives up."""
    _post_to_leader(sync, SYNC_STOPPED, 1)
