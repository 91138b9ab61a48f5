"""What recuerdo tells PostgreSQL's planner on each connection it opens. A value the server's
operator set (in the configuration, for the database or the role, or in the URL) is left as
it is."""

from __future__ import annotations

from typing import Any

# PostgreSQL's stock cost of a page read at random (4, a spinning disk's) made its planner read
# every item of a memory to join them with the few hundred rows of one tag (decision 0048): a
# memory's pages are mostly in memory or on a solid-state disk. A value the server's operator
# set is left as it is.
_PAGES_MOSTLY_CACHED = (
    "SELECT set_config('random_page_cost', '1.1', false) FROM pg_settings"
    " WHERE name = 'random_page_cost' AND source = 'default'"
)
# psycopg prepares a statement run five times on a connection, and PostgreSQL then plans it
# once for any parameters (a generic plan) when that looks as cheap: an entry search became
# a walk of every id testing each row, 23-25 ms at 20,000 entries against 2.7 ms by the
# trigram indexes, whatever the needle (decision 0056). Each statement is planned for its
# parameters.
_PLANNED_FOR_PARAMETERS = (
    "SELECT set_config('plan_cache_mode', 'force_custom_plan', false) FROM pg_settings"
    " WHERE name = 'plan_cache_mode' AND source = 'default'"
)


def configure(conn: Any) -> None:
    """Apply both settings to a new connection of the pool."""
    conn.execute(_PAGES_MOSTLY_CACHED)
    conn.execute(_PLANNED_FOR_PARAMETERS)
