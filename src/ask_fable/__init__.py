"""ask-fable: an MCP server for hard engineering questions, answered by one model or several."""

__version__ = "0.1.0"
