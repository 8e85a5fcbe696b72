"""The HTTP face: the FastAPI app (app), what it refuses (guard), the /metrics page (page) and its
encoding, and the JSON API (jsonapi)."""
