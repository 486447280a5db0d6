"""Index Pi coding-agent session journals into a disposable SQLite index that holds no text."""

__version__ = "0.1.0"
