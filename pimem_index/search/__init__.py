"""The read side: requests checked once, scopes, word forms, ranking, pages of results and the trusted reread.

Never imports `pimem_index.index`: reading the index needs nothing of how it is written."""
