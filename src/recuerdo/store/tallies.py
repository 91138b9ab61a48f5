"""The step ``m031_item_tallies``: what a memory holds, counted as it is written.

The overview, the summary and ``status`` count everything a tenant holds: by item type, by
scope, entries by category and writer, and the characters stored. Counted from the rows, each
read every row of the tenant: at 100,000 entries ``overview`` took 155 ms and ``status`` 46 ms,
and the memory lens, which asked ``status`` once more for each scope, took over 3 s to show
its overview page (docs/decisions/0057-item-tallies.md has the figures).

So the store keeps the counts itself. ``item_tallies`` holds one row per tenant, item type,
scope, entry category and writer, and deleted or not: how many items, and their characters.
Triggers on ``items`` keep it (an insert adds, a delete takes away, an update that moves an
item takes it out of one row and into another), in the same transaction as the write, so a
count is never behind what a reader can see, whichever door or family wrote. A row that falls
to zero is deleted: a forgotten scope's name does not stay behind in a count.

Mail is not counted here: who may read a message depends on the reader (its conversation's
members), so it is counted for each reader from the conversations the reader is a member of
(``core/items.readable_mail``).

Readers ask :func:`counts` for the sums they need.

The tallies are derived: left out of backups (a restore's inserts count again) and compared
with a recount by ``check``. Every backend takes the step: SQLite's four triggers are SQL
statements, PostgreSQL's three call a function each.
"""

from __future__ import annotations

from .base import Params, Row, Tx

TABLE = "item_tallies"

_KEY = ("tenant", "item_type", "scope", "category", "source", "deleted")
_KEYED = ", ".join(_KEY)


def _keyed(row: str) -> dict[str, str]:
    """The key of the tally an item row (``new``, ``old`` or a table alias) counts in."""
    return {
        "tenant": f"{row}.tenant",
        "item_type": f"{row}.item_type",
        "scope": f"{row}.scope",
        # Entries are counted by category and writer; other items by type and scope alone.
        "category": f"CASE WHEN {row}.item_type = 'entry' THEN coalesce({row}.category, '')"
        " ELSE '' END",
        "source": f"CASE WHEN {row}.item_type = 'entry' THEN coalesce({row}.source, '')"
        " ELSE '' END",
        "deleted": f"CASE WHEN {row}.status = 'deleted' THEN 1 ELSE 0 END",
    }


def _values(row: str) -> str:
    return ", ".join(f"{value} AS {column}" for column, value in _keyed(row).items())


def _matches(row: str) -> str:
    return " AND ".join(f"{column} = {value}" for column, value in _keyed(row).items())


_GROUPED = (
    "SELECT {values}, count(*) AS items, coalesce(sum(length({row}.content)), 0) AS chars"
    " FROM {table} {row} WHERE {row}.item_type <> 'mail' GROUP BY 1, 2, 3, 4, 5, 6"
)
RECOUNT = _GROUPED.format(values=_values("i"), row="i", table="items /* every tenant */")
"""The tallies counted again from the rows (the step fills the table so; ``check`` compares)."""

DIFFERENCES = (
    f"WITH kept AS (SELECT {_KEYED}, items, chars FROM {TABLE} /* every tenant */),"
    f" counted AS ({RECOUNT})"
    " SELECT (SELECT count(*) FROM (SELECT * FROM kept EXCEPT SELECT * FROM counted) a)"
    " + (SELECT count(*) FROM (SELECT * FROM counted EXCEPT SELECT * FROM kept) b)"
)
"""How many tallies differ from a recount (missing, left over or wrong): ``check``'s count.
Each side is read once (a CTE named twice is computed once by both engines)."""
CHECKED = "item tallies that differ from the items"


def counts(
    tx: Tx, tenant: str, by: str, where: str = "", params: Params = (), *, chars: bool = False
) -> list[Row]:
    """The tenant's tallies summed (``n``: items; and ``chars`` when asked: the sorter carries
    each column summed, a tenth of a millisecond over 2,805 tallies) for each value of the
    columns ``by`` (comma-separated), over the tallies matching ``where`` (with ``params``)."""
    condition = f" AND {where}" if where else ""
    summed = ", sum(chars) AS chars" if chars else ""
    return tx.all(
        f"SELECT {by}, sum(items) AS n{summed} FROM {TABLE} WHERE tenant = ?{condition}"
        f" GROUP BY {by} ORDER BY {by}",
        (tenant, *params),
    )


_ADD = (
    f"INSERT INTO {TABLE} ({_KEYED}, items, chars) SELECT {_values('new')}, 1,"
    f" length(new.content) WHERE new.item_type <> 'mail' ON CONFLICT ({_KEYED})"
    f" DO UPDATE SET items = {TABLE}.items + 1, chars = {TABLE}.chars + excluded.chars"
)
_TAKE = (
    f"UPDATE {TABLE} SET items = items - 1, chars = chars - length(old.content)"
    f" WHERE old.item_type <> 'mail' AND {_matches('old')}"
)
_EMPTIED = f"DELETE FROM {TABLE} WHERE items = 0 AND {_matches('old')}"
_WATCHED = "tenant, item_type, scope, category, source, status, content"
_SAME_TALLY = " AND ".join(
    f"({old}) = ({new})"
    for old, new in zip(_keyed("old").values(), _keyed("new").values(), strict=True)
)

_SQLITE_TRIGGERS = (
    f"CREATE TRIGGER item_tallies_insert AFTER INSERT ON items BEGIN {_ADD}; END",
    f"CREATE TRIGGER item_tallies_delete AFTER DELETE ON items BEGIN {_TAKE}; {_EMPTIED}; END",
    # An edit of a note's text stays in its tally: one row changed, not one out and one in.
    f"CREATE TRIGGER item_tallies_edit AFTER UPDATE OF {_WATCHED} ON items"
    f" WHEN new.item_type <> 'mail' AND {_SAME_TALLY} BEGIN UPDATE {TABLE}"
    f" SET chars = chars + length(new.content) - length(old.content) WHERE {_matches('new')};"
    " END",
    f"CREATE TRIGGER item_tallies_move AFTER UPDATE OF {_WATCHED} ON items"
    f" WHEN NOT (new.item_type <> 'mail' AND {_SAME_TALLY})"
    f" BEGIN {_TAKE}; {_EMPTIED}; {_ADD}; END",
)

# PostgreSQL counts each statement's rows at once (its transition tables): a bulk load of 1,000
# entries, sent 100 rows a statement (store/row_groups.py), is 10 statements for the tallies,
# not 1,000. An update has no transition tables with a column list, so it is counted row by
# row, by a function planned once per session: each connection plans every statement for its
# parameters (decision 0056), and would plan the function's statements, which take the row's
# values as parameters, again at every row. The statements over transition tables take no
# parameters, and PostgreSQL plans those once anyway.
_SAME_GROUP = " AND ".join(f"t.{column} = g.{column}" for column in _KEY)


def _trigger_function(name: str, body: str, *, settings: str = "") -> str:
    return (
        f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql{settings} AS $$\nBEGIN\n"
        f"{body}\n    RETURN NULL;\nEND\n$$"
    )


_POSTGRES_FUNCTIONS = (
    _trigger_function(
        "recuerdo_tally_added",
        f"""    INSERT INTO {TABLE} ({_KEYED}, items, chars)
    {_GROUPED.format(values=_values("a"), row="a", table="added")}
    ON CONFLICT ({_KEYED}) DO UPDATE SET items = {TABLE}.items + excluded.items,
        chars = {TABLE}.chars + excluded.chars;""",
    ),
    _trigger_function(
        "recuerdo_tally_removed",
        f"""    UPDATE {TABLE} t SET items = t.items - g.items, chars = t.chars - g.chars
    FROM ({_GROUPED.format(values=_values("o"), row="o", table="gone")}) g
    WHERE {_SAME_GROUP};
    DELETE FROM {TABLE} t USING (SELECT DISTINCT {_values("o")} FROM gone o) g
    WHERE t.items = 0 AND {_SAME_GROUP};""",
    ),
    _trigger_function(
        "recuerdo_tally_moved",
        f"""    IF new.item_type <> 'mail' AND {_SAME_TALLY} THEN
        UPDATE {TABLE} SET chars = chars + length(new.content) - length(old.content)
        WHERE {_matches("new")};
        RETURN NULL;
    END IF;
    {_TAKE};
    {_EMPTIED};
    {_ADD};""",
        settings=" SET plan_cache_mode = force_generic_plan",
    ),
)
_POSTGRES_TRIGGERS = (
    "CREATE TRIGGER item_tallies_insert AFTER INSERT ON items REFERENCING NEW TABLE AS added"
    " FOR EACH STATEMENT EXECUTE FUNCTION recuerdo_tally_added()",
    "CREATE TRIGGER item_tallies_delete AFTER DELETE ON items REFERENCING OLD TABLE AS gone"
    " FOR EACH STATEMENT EXECUTE FUNCTION recuerdo_tally_removed()",
    f"CREATE TRIGGER item_tallies_update AFTER UPDATE OF {_WATCHED} ON items"
    " FOR EACH ROW EXECUTE FUNCTION recuerdo_tally_moved()",
)


def m031_item_tallies(tx: Tx) -> None:
    """The step, on both stores (registered in each later_steps.py): the table, its triggers,
    and the counts of what the memory already holds."""
    big = "INTEGER" if tx.dialect == "sqlite" else "BIGINT"
    tx.execute(
        f"CREATE TABLE {TABLE} (tenant TEXT NOT NULL, item_type TEXT NOT NULL,"
        " scope TEXT NOT NULL, category TEXT NOT NULL, source TEXT NOT NULL,"
        f" deleted INTEGER NOT NULL, items {big} NOT NULL, chars {big} NOT NULL,"
        f" PRIMARY KEY ({_KEYED}))" + (" WITHOUT ROWID" if tx.dialect == "sqlite" else "")
    )
    if tx.dialect == "sqlite":
        for trigger in _SQLITE_TRIGGERS:
            tx.execute(trigger)
    else:
        from .postgres.ddl import tenant_policies

        for statement in (*_POSTGRES_FUNCTIONS, *_POSTGRES_TRIGGERS):
            tx.execute(statement)
        tenant_policies(tx)
    tx.execute(f"INSERT INTO {TABLE} ({_KEYED}, items, chars) {RECOUNT}")
