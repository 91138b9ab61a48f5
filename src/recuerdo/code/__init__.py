"""The code store: read-only views of ingested git repositories (see ``ingest.py``)."""
