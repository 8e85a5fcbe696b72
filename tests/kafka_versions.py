"""The Kafka releases the real-cluster tests run on.

`make test` runs the pinned pair (localkafka.ZK_VERSION, KRAFT_VERSION). `make test-matrix`
(tools/matrix.py) runs the same tests once per listed release by setting these variables:

    CTLPLANE_TEST_ZK_VERSION=2.8.2 CTLPLANE_TEST_ZK_LISTENER=0 CTLPLANE_TEST_KRAFT_VERSION=3.6.2

Cluster names follow the release ("kraft-3.6", "zk-2.8"; the three-broker cluster without the listener
is "zk-2.8-plain"), and a recorded fixture names the release and listener it came from (faults.Timeline).
"""

from __future__ import annotations

import os

from harness.localkafka import KRAFT_VERSION, ZK_VERSION, cluster_label

ZK_UNDER_TEST = os.environ.get("CTLPLANE_TEST_ZK_VERSION") or ZK_VERSION
KRAFT_UNDER_TEST = os.environ.get("CTLPLANE_TEST_KRAFT_VERSION") or KRAFT_VERSION
# Whether the three-broker ZooKeeper-mode cluster sets KIP-291's control.plane.listener.name.
ZK_LISTENER = os.environ.get("CTLPLANE_TEST_ZK_LISTENER", "1") != "0"

ZK_NAME = cluster_label("zookeeper", ZK_UNDER_TEST) + ("" if ZK_LISTENER else "-plain")
KRAFT_NAME = cluster_label("kraft", KRAFT_UNDER_TEST)
# The one-broker cluster without the listener that shares the ZooKeeper of ZK_NAME.
ZK_NOLISTENER_NAME = cluster_label("zookeeper", ZK_UNDER_TEST, control_plane_listener=False)

# The session KRaft cluster's brokers also listen with SASL_PLAINTEXT for these users (PLAIN and
# SCRAM-SHA-256), so the quorum's view can be tested through an authenticated listener.
SASL_USERS = {"ctlplane": "quorum-Secret-4821"}
# Its SASL_PLAINTEXT listener asks every connection to log in again this often (connections.max.reauth.ms,
# KIP-368; Kafka's clients do so by themselves), so a credential revoked on the broker is refused on a
# connection already open: what the rotation tests need to tell a rotated credential from a kept connection.
SASL_REAUTH_MS = 10_000
