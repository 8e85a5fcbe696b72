"""The web dashboard (Plotly Dash on the exporter's FastAPI app): fleet, cluster, alerts and history pages."""
