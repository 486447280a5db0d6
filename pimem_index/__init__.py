"""Index Pi coding-agent session journals into a disposable SQLite index that holds no text.

This module is the library's public surface: what the Datasette plugin and a user's script use. The layers
beneath it (see docs/design.md) import only the layers below them:

- the ground floor: ``errors``, ``humanize``, ``journal`` (Pi's format), ``locations``, ``db``, ``store``;
- ``redaction``: masking secrets, on the way in and on the way out;
- ``index``: the write side (parsing, workers, the indexer); ``search``: the read side (requests, scope, word
  forms, ranking, the reread), which never imports ``index``;
- ``session``: views of sessions (lists, conversations, usage figures);
- ``manage``: status, forget, junk journals; and ``cli``, the ``pimem`` command, on top (not imported here).
"""

__version__ = "0.1.0"

from pimem_index import db, journal, replies, store
from pimem_index.errors import Arg, UserError
from pimem_index.humanize import counted, duration, noun
from pimem_index.index import indexer
from pimem_index.journal import local_time
from pimem_index.locations import (
    Locations,
    checked_journal,
    location_args,
    make_folder,
    record_folders,
    refreshed,
    refuse_planted,
    resolve,
    watch_command,
)
from pimem_index.manage.folders import listing as folder_listing
from pimem_index.manage.status import status as index_status
from pimem_index.memo import IndexMemo
from pimem_index.search import query, session_ids, wordforms
from pimem_index.search.request import (
    ReadRequest,
    SearchRequest,
    SessionsRequest,
    UsageRequest,
    check_offset,
    query_args,
    query_terms,
)
from pimem_index.search.scope import (
    EXAMPLE_CWD,
    allowed,
    checked_setting,
    figures_scope,
    offered,
    page_default_scope,
    wider,
)
from pimem_index.session import activity, browse, conversation, lineage
from pimem_index.store import open_located

__all__ = [
    "EXAMPLE_CWD",
    "Arg",
    "IndexMemo",
    "Locations",
    "ReadRequest",
    "SearchRequest",
    "SessionsRequest",
    "UsageRequest",
    "UserError",
    "activity",
    "allowed",
    "browse",
    "check_offset",
    "checked_journal",
    "checked_setting",
    "conversation",
    "counted",
    "db",
    "duration",
    "figures_scope",
    "folder_listing",
    "index_status",
    "indexer",
    "journal",
    "lineage",
    "local_time",
    "location_args",
    "noun",
    "offered",
    "open_located",
    "page_default_scope",
    "query",
    "query_args",
    "query_terms",
    "record_folders",
    "refreshed",
    "make_folder",
    "refuse_planted",
    "replies",
    "resolve",
    "session_ids",
    "store",
    "watch_command",
    "wider",
    "wordforms",
]
