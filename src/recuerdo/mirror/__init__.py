"""The mirror family: a whole document kept in memory as a mirror of a local file."""
