"""The domain at the bottom of ctlplane: Kafka's nodes and answers read into snapshots, and what follows from
them. Nothing here imports the faces (dashboard, pipeline, demo) or the CLI that wires them.

- catalog.py, releases.py: which MBean becomes which series, on which release (one declarative table)
- sources/: where readings come from: a node's remote JMX (jmx/) or metrics endpoint (endpoint/), and the
  cluster's own answers through the Admin API (admin/); readings.py: readings into samples
- scraper.py: one round over every node, into model.py's snapshot
- discovery/: which nodes to read (the cluster's answers, DNS records, the evidence that a node left)
- health/: the health model, a pure function of snapshots
- families.py: the Prometheus series; history/: the Parquet rows; state.py: the latest observation
- http/: the HTTP face (/metrics, /api/v1, the guard in front of both)
- config/: the one typed config (its model, and file.py that loads it once); thresholds.py: every threshold's
  one home
- jvm/: the JVM every read runs in (the host's Java checked, the shipped Java classes compiled)
- memory.py, shards.py, subscribers.py: the process's own needs
"""
