"""Capability ceilings and the secret guard."""
