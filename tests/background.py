"""The Spark tests' processes run below the other tests' priority (nice 10). On 2 cores a Spark job takes
both for minutes, and beside it the fault table's Kafka brokers missed their 9 s heartbeat session: a
running broker fenced for a session that timed out (the controller's log said so), which fails a row that
asserts only restarts fenced it. The Kafka clusters under test must get the CPU their timing needs; the
Spark jobs only take longer. (Linux niceness is per thread and inherited by what a thread starts.)"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

NICENESS = 10
NICE = ("nice", "-n", str(NICENESS))  # a command's prefix: it and everything it starts run below


@contextlib.contextmanager
def below_the_other_tests() -> Iterator[None]:
    """Processes this thread starts meanwhile (a local Spark session's JVM) run NICENESS below; the thread
    is back at its own priority after (the tests run as root, which may lower it again)."""
    before = os.getpriority(os.PRIO_PROCESS, 0)
    os.setpriority(os.PRIO_PROCESS, 0, before + NICENESS)
    try:
        yield
    finally:
        with contextlib.suppress(PermissionError):
            os.setpriority(os.PRIO_PROCESS, 0, before)
