"""The checkout's generators and runners (`python -m tools.<name>`); never installed (pyproject.toml)."""
