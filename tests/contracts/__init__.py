"""Seed contracts: one suite per seed system, each test one promise of its behaviour reference."""
