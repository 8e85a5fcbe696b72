"""Batch jobs over the history archive (PySpark): episodes, alert-threshold sweeps and daily reports."""
