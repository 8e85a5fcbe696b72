"""The cluster's own answers through Kafka's Admin API (describeCluster, describeMetadataQuorum): the quorum's
view beside the nodes' readings, discovery's answers, and the only source of a cluster watched through the Admin
API alone. Read per cluster, not per node (client.py, Kafka's Java client in-process; its jars in jars/)."""
