"""Compatibility profiles: other systems' names and shapes over the same engine."""
