"""Views of sessions for the pages and the CLI: lists and entries, a session as a conversation, usage figures."""
