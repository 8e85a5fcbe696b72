"""A node's Prometheus endpoint (jmx_exporter's javaagent) as a source of MBean readings: its naming
(naming.py, the profiles in profiles.py and rules/), the page's text (text.py), the samples back to
readings (readings.py) and the HTTP read (client.py)."""
