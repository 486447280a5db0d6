"""What Datasette lets actors do with the index database: read it with pi-memory-read and the global
scope, write it never.

The index holds every journal's paths, cwds, session names and search terms; only actors
allowed pi-memory-read whose cap is global (root, or everyone under `max_scope: global`) see it,
whatever else the configuration allows, and only pimem's indexer writes it. Other databases on
the same Datasette are left to their own rules.
"""

from __future__ import annotations

from datasette.permissions import PermissionSQL

from datasette_pi_memory.state import ACTION, state
from pimem_index import db

# Actions that change the index file (rows, tables, views, the schema).
WRITE_ACTIONS = frozenset(
    {
        "insert-row",
        "update-row",
        "delete-row",
        "create-table",
        "create-view",
        "alter-table",
        "set-column-type",
        "drop-table",
        "drop-view",
        "execute-write-sql",
    }
)
# Actions that show what the index holds (stored queries, downloads and the schema
# pages follow from these through also_requires and view-database).
READ_ACTIONS = frozenset({"view-database", "view-database-download", "view-table", "view-query", "execute-sql"})
READ_ONLY = "the pimem index is read-only through Datasette: only pimem's indexer writes it"

# Deny rules at the database level and for every table, view and stored query in it, so
# that no allow at any level (root's, a table's allow block) outranks them.
_CHILDREN = {
    "table": (
        "SELECT database_name AS parent, table_name AS child FROM catalog_tables "
        "UNION ALL SELECT database_name, view_name FROM catalog_views"
    ),
    "query": "SELECT database_name AS parent, name AS child FROM queries",
}


def index_database(datasette) -> str | None:
    """The name the index is served under on this Datasette, if it is served."""
    name = state(datasette).settings.database
    return name if name in datasette.databases else None


def revealing_databases(datasette) -> list[str]:
    """The databases that show the index: itself and, under --crossdb, _memory (which attaches it)."""
    name = index_database(datasette)
    if name is None:
        return []
    return [name, "_memory"] if datasette.crossdb and "_memory" in datasette.databases else [name]


async def index_rules(datasette, actor, action) -> PermissionSQL | None:
    """Deny writes on the index to everyone, and reads to actors without pi-memory-read or whose
    scope cap is narrower than global: the index's tables, SQL and term search span every project."""
    if action in WRITE_ACTIONS:
        name = index_database(datasette)
        return _deny(datasette, action, [name] if name else [], READ_ONLY)
    if action in READ_ACTIONS:
        names = revealing_databases(datasette)
        if not names:
            return None
        if not await datasette.allowed(action=ACTION, actor=actor):
            return _deny(datasette, action, names, f"the pimem index needs {ACTION}")
        cap = state(datasette).max_scope_for(actor)
        if cap != "global":
            return _deny(
                datasette, action, names, f"the pimem index's tables span every project; this actor's cap is {cap}"
            )
        return None
    return None


def _deny(datasette, action: str, names: list[str], reason: str) -> PermissionSQL | None:
    """Deny rules on these databases: at database level and for each child the action names."""
    if not names:
        return None
    # Parameter names carry the action: Datasette merges the parameters of an action and
    # of the one it also_requires into one dict.
    key = "pi_memory_" + action.replace("-", "_")
    params = {f"{key}_reason": reason, **{f"{key}_db{i}": name for i, name in enumerate(names)}}
    listed = ", ".join(f":{key}_db{i}" for i in range(len(names)))
    sql = " UNION ALL ".join(
        f"SELECT :{key}_db{i} AS parent, NULL AS child, 0 AS allow, :{key}_reason AS reason" for i in range(len(names))
    )
    children = _CHILDREN.get(getattr(datasette.actions[action].resource_class, "name", ""))
    if children:
        sql += (
            f" UNION ALL SELECT parent, child, 0 AS allow, :{key}_reason AS reason FROM ({children}) "
            f"WHERE parent IN ({listed})"
        )
    return PermissionSQL(sql=sql, params=params)


def refuse_writes(datasette, database):
    """A write_wrapper refusing any write to the index through Datasette's write connection."""
    if database != index_database(datasette):
        return None

    def refuse(conn):
        raise db.OperationalError(READ_ONLY)
        yield  # a generator, as write_wrapper expects

    return refuse
