"""The doors: CLI now; MCP and HTTP are generated from the same verb table."""
