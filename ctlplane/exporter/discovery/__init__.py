"""Which nodes to read: from the cluster's own answers (answers), DNS records (dns), and the evidence
that a node left the cluster (departures)."""
