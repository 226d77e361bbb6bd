"""The checker's own time limit, in CPU seconds of this process (not wall time).

A check is Python over the query's tree plus a few metadata queries; on a machine shared with
other jobs its wall time grows with the load while the work it does does not. So a check is
bounded by the CPU time it uses: :func:`cpu_budget` arms the process's profiling timer
(``ITIMER_PROF``: user and system time of every thread of the process, DuckDB's included),
which interrupts the check with :class:`CheckOverrun` once it has used its budget, however
busy the machine is. Where that timer cannot be used (not the main thread, or no
``setitimer``) the check runs to its end and is refused after it when it used more.

Example:
    >>> with cpu_budget(5.0) as spent:
    ...     _ = sum(range(1000))
    >>> 0.0 <= spent.seconds < 5.0
    True
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType


class CheckOverrun(BaseException):
    """The check used its CPU budget. A BaseException, so that the checker's own fail-closed
    ``except Exception`` (AR99) does not swallow it: the caller reports the time limit.

    Args:
        budget_s: the budget, CPU seconds.
        spent_s: what the check had used when it was stopped.
    """

    def __init__(self, budget_s: float, spent_s: float) -> None:
        self.budget_s, self.spent_s = budget_s, spent_s
        super().__init__(f"the check used {spent_s:.2f} s of CPU (budget {budget_s:g} s)")


@dataclass
class Spent:
    """CPU seconds a check used (filled when its :func:`cpu_budget` block ends)."""

    seconds: float = 0.0


@contextmanager
def cpu_budget(seconds: float) -> Iterator[Spent]:
    """Bound the block to ``seconds`` of this process's CPU time (see the module docstring).

    Raises:
        CheckOverrun: the block used more than ``seconds`` of CPU.
    """
    spent = Spent()
    start = time.process_time()
    armed = False
    previous: object = None
    if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread() \
            and signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0):

        def stop(_signum: int, _frame: FrameType | None) -> None:
            raise CheckOverrun(seconds, time.process_time() - start)

        previous = signal.signal(signal.SIGPROF, stop)
        signal.setitimer(signal.ITIMER_PROF, seconds)
        armed = True
    try:
        yield spent
    finally:
        if armed:
            signal.setitimer(signal.ITIMER_PROF, 0.0)
            signal.signal(signal.SIGPROF, previous)  # type: ignore[arg-type]
        spent.seconds = time.process_time() - start
    if spent.seconds > seconds:
        raise CheckOverrun(seconds, spent.seconds)
