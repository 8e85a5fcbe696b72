"""Where a node's readings come from: one seam, several sources.

Every source answers the same question, "what do these MBeans of this node read now?", as RawReadings
(ctlplane/exporter/model.py), and the catalogue maps those to series the same way whichever answered:
- `jmx/`: remote JMX (RMI), the node's MBeans themselves.
- `endpoint/`: the node's Prometheus endpoint, jmx_exporter's javaagent as Amazon MSK (:11001), Strimzi
  (:9404) and Confluent's jmx-monitoring-stacks run it, or the Strimzi Metrics Reporter; a naming profile
  turns its series back into MBean readings, and what the profile's naming drops is simply absent
  (docs/sources.md).
- `admin/`: the cluster's own answers through the Admin API, read per cluster, not per node: the quorum's
  view beside the nodes' readings, or the only source of a cluster watched through the Admin API alone.
"""
