"""An Admin client's security settings, made again from their files when one changes: a rotated password,
client certificate, key, key store, keytab or OIDC client secret takes effect at the next call, without a
restart. A Kubernetes Secret renews by swapping its directory's `..data` link, so each file is known by its
identity through symlinks (sources/files.py), never by its name alone.

Kafka's client reads its credentials once, when it is made (the SASL login, the key stores), so a renewal
means a new client: `renewed()` says when the old one must be closed. A broker that forces
re-authentication (`connections.max.reauth.ms`, KIP-368) refuses a revoked credential on a connection that
is already open, so a client kept past a rotation would fail at the broker's next check, not at once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ctlplane.exporter.sources.files import file_stamps


class ClientSecurity:
    """`make()` builds the settings (security_properties(): SASL's JAAS config, the TLS material) from the
    files it reads; `files` are those files. Safe from several threads (a quorum reader and a canary)."""

    def __init__(self, make: Callable[[], Mapping[str, str]], files: Sequence[str | Path] = ()) -> None:
        self._make = make
        self._files = tuple(str(file) for file in files)
        self._lock = threading.Lock()
        self._stamps = file_stamps(self._files)
        self._properties = dict(make())

    @classmethod
    def fixed(cls, properties: Mapping[str, str] | None) -> ClientSecurity:
        """Settings that never change (no file behind them)."""
        settled = dict(properties or {})
        return cls(lambda: settled)

    def properties(self) -> dict[str, str]:
        """The settings now: the last ones made (they hold secrets: never log them)."""
        with self._lock:
            return dict(self._properties)

    def renewed(self) -> bool:
        """Whether a file changed since the settings were made, and they have been made again from it: the caller
        closes its client and makes a new one. ValueError (one line, naming the file) where they cannot be made
        now (a file half renewed, unreadable): the old settings stay, and the next call tries again."""
        with self._lock:
            stamps = file_stamps(self._files)
            if stamps == self._stamps:
                return False
            properties = dict(self._make())
            self._properties, self._stamps = properties, stamps
            return True
