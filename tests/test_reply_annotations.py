"""The functions that make a reply say so: their return annotation is the reply's type (pimem_index.replies),
so mypy checks what they build and their callers read, not a bare dict."""

from __future__ import annotations

import inspect
import typing

import pytest

from datasette_pi_memory import api
from datasette_pi_memory.server import daemon
from pimem_index import replies
from pimem_index.index import indexer
from pimem_index.manage import folders, status
from pimem_index.search import query, session_info
from pimem_index.session import activity

ANNOTATED = [
    (query.search, replies.SearchReply),
    (query.summaries, replies.SearchReply),
    (query.read, replies.ReadReply),
    (query.indexing_state, replies.Indexing),
    (session_info.sessions_map, dict[str, replies.SessionInfo]),
    (activity.usage, replies.UsageReply),
    (activity.sessions, replies.SessionsReply),
    (status.status, replies.StatusReply),
    (folders.listing, list[replies.JournalFolder]),
    (indexer.failed_journals, list[replies.FailedJournal]),
    (indexer.IndexReport.as_json, replies.IndexReply),
    (daemon.status, replies.ServeStatusReply),
    (api.call, replies.ApiReply),
    (api.search, replies.SearchReply),
    (api.read, replies.ReadReply),
]


@pytest.mark.parametrize("function, reply", ANNOTATED, ids=lambda v: getattr(v, "__qualname__", ""))
def test_a_function_that_makes_a_reply_is_annotated_with_its_type(function, reply):
    returned = typing.get_type_hints(function)["return"]
    assert returned == reply
    assert returned not in (dict, typing.Any), "never a bare dict"


def test_every_reply_type_is_returned_by_some_annotated_function():
    returned = {typing.get_type_hints(f)["return"] for f, _ in ANNOTATED}
    made_here = {
        t
        for _, t in inspect.getmembers(replies, typing.is_typeddict)
        if t.__name__.endswith("Reply") and t.__name__ not in ("IdentityReply", "ErrorReply", "FoldersReply")
    }
    assert made_here <= returned | set(typing.get_args(replies.ApiReply))
