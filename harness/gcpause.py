"""A real stop-the-world GC pause of a JVM, as long as a test wants: its GC log written into a pipe the test
stops reading.

HotSpot's unified logging writes synchronously, and the `gc+age` trace lines (the survivor ages) are written by
the serial collector from inside a young collection, with every Java thread stopped at the safepoint. Given
`-Xlog:gc+age=trace:file=<a FIFO>` (a FIFO is supported: LogFileOutput turns rotation off for it), a full
pipe blocks that write, and the collection, until the pipe is read again. The JVM's own collector clock counts
the whole stop (GarbageCollectorMXBean CollectionTime: checked on JDK 17 with the serial collector, a 10 s
hold read as ~11 s more collection time), its threads stop as in any long pause (Kafka's heartbeats, the JMX
connector) and resume where they were: a long GC pause in every observable way. Loopback only, no root.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import threading
from pathlib import Path
from types import TracebackType

_F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ (Linux), absent from older Pythons' fcntl
_PIPE_BYTES = 4096  # the smallest pipe: a few log lines fill what the filler leaves
_POLL_SECONDS = 0.05


class GcPausePipe:
    """A FIFO at `path` for a JVM's GC log (`jvm_option`), drained until `hold()`, drained again on `release()`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.unlink(missing_ok=True)
        os.mkfifo(path)
        # the read end first: the JVM's open for writing blocks until a reader exists
        self._reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        fcntl.fcntl(self._reader, _F_SETPIPE_SZ, _PIPE_BYTES)
        self._draining = threading.Event()
        self._draining.set()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._drain, name=f"gc-log-{path.name}", daemon=True)
        self._thread.start()

    @property
    def jvm_option(self) -> str:
        return f"-Xlog:gc+age=trace,gc+phases=info:file={self.path}"

    def hold(self) -> None:
        """Stop reading and fill the pipe: the JVM's next young collection stops at its first log line."""
        self._draining.clear()
        writer = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
        try:
            with contextlib.suppress(BlockingIOError):
                while True:
                    os.write(writer, b"\n" * 512)
        finally:
            os.close(writer)

    def release(self) -> None:
        """Read again: the held collection ends, and the JVM goes on."""
        self._draining.set()

    def close(self) -> None:
        self._draining.set()
        self._closed.set()
        self._thread.join(5)
        os.close(self._reader)
        self.path.unlink(missing_ok=True)

    def __enter__(self) -> GcPausePipe:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def _drain(self) -> None:
        while not self._closed.is_set():
            if self._draining.is_set():
                with contextlib.suppress(BlockingIOError):
                    while os.read(self._reader, 65536):
                        pass
            self._closed.wait(_POLL_SECONDS)


def request_collection(pid: int, java: str) -> subprocess.Popen[bytes]:
    """`jcmd <pid> GC.run` in the background (System.gc(): with the serial collector a young collection runs
    first, ScavengeBeforeFullGC); it returns only when the collection does. `java`: the JVM's java executable."""
    jcmd = Path(java).with_name("jcmd")
    command = [str(jcmd) if jcmd.exists() else (shutil.which("jcmd") or "jcmd"), str(pid), "GC.run"]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
