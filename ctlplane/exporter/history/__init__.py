"""The history archive: every scrape round as rows of one long table, in Parquet files by day and cluster.

    table.py    the rows' schema (the one definition; the pipeline's Spark schema derives from it), the
                partitions, the health series' names, and a buffer of rows in its columns. Pyarrow only:
                the pipeline imports this and nothing else of the exporter's history
    rows.py     a round's observation as rows
    archive.py  the files: atomic partitioned writes, retention, leftovers of interrupted writes, compaction
    writer.py   the exporter's writer thread and its self-metrics

Layout under the root:

    <root>/date=YYYY-MM-DD/cluster=<name>/part-<unix ms>-<seq>-<random token>.parquet

A file is written as `.part-….parquet.tmp` (a dot name Spark, DuckDB and pyarrow skip), fsynced and then
renamed, so a crash never leaves a half-written file visible; a crash's leftover is removed later.
Pyarrow only: the exporter must not need Spark.
"""
