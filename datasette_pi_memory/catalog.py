"""What metadata.yaml gives the index under any Datasette: descriptions, table settings, canned queries.

Applied from the startup hook to the database that serves the index, so a plain
`datasette serve history.sqlite` has the same search box, facets, descriptions and canned
queries as `pimem serve`. What the instance's own configuration or metadata already sets wins.
"""

from __future__ import annotations

import copy
from pathlib import Path

METADATA = Path(__file__).with_name("metadata.yaml")
METADATA_DATABASE = "history"  # the key metadata.yaml describes the index under
TABLE_CONFIG_KEYS = (
    *("hidden", "sort", "sort_desc", "size", "sortable_columns"),
    *("label_column", "facets", "fts_table", "fts_pk", "searchmode"),
)
QUERY_OPTIONS = ("title", "description", "description_html", "hide_sql", "fragment", "parameters")


def index_description() -> dict:
    """metadata.yaml's block for the index database (tables, columns, queries), empty if absent."""
    from datasette.utils import parse_metadata

    if not METADATA.exists():
        return {}
    metadata = parse_metadata(METADATA.read_text())
    return copy.deepcopy((metadata.get("databases") or {}).get(METADATA_DATABASE) or {})


def instance_metadata() -> dict:
    """metadata.yaml's instance-level words (title, description, license) without the index block."""
    from datasette.utils import parse_metadata

    if not METADATA.exists():
        return {}
    metadata = parse_metadata(METADATA.read_text())
    return {key: value for key, value in metadata.items() if key != "databases"}


async def apply(datasette, database: str) -> None:
    """Give `database` (the served index) metadata.yaml's table settings, descriptions and queries."""
    described = index_description()
    tables = described.get("tables") or {}
    _merge_table_config(datasette, database, tables)
    await _describe(datasette, database, described, tables)
    await _add_queries(datasette, database, described.get("queries") or {})


def _merge_table_config(datasette, database: str, tables: dict) -> None:
    """Table settings (facets, fts_table, sort, hidden...) into the instance config, where not set already."""
    if datasette.config is None:
        datasette.config = {}
    configured = datasette.config.setdefault("databases", {}).setdefault(database, {}).setdefault("tables", {})
    for table, described in tables.items():
        settings = {key: described[key] for key in TABLE_CONFIG_KEYS if key in described}
        if settings:
            target = configured.setdefault(table, {})
            for key, value in settings.items():
                target.setdefault(key, copy.deepcopy(value))


async def _describe(datasette, database: str, described: dict, tables: dict) -> None:
    """Database, table and column descriptions, each only where the instance has none."""
    if described.get("description") and "description" not in await datasette.get_database_metadata(database):
        await datasette.set_database_metadata(database, "description", described["description"])
    for table, about in tables.items():
        if about.get("description") and "description" not in await datasette.get_resource_metadata(database, table):
            await datasette.set_resource_metadata(database, table, "description", about["description"])
        for column, words in (about.get("columns") or {}).items():
            if words and "description" not in await datasette.get_column_metadata(database, table, column):
                await datasette.set_column_metadata(database, table, column, "description", words)


async def _add_queries(datasette, database: str, queries: dict) -> None:
    """metadata.yaml's canned queries (read-only SQL over the index), unless one of that name exists."""
    for name, query in queries.items():
        if await datasette.get_query(database, name) is not None:
            continue
        options = {key: query[key] for key in QUERY_OPTIONS if key in query}
        await datasette.add_query(database, name, query["sql"], source="plugin", replace=False, **options)
