"""The MCP server: one tool per agent operation (server.py), their lean schemas (tool_schema.py), the
inspector's resource templates, and the stdio wire of `strata mcp` with its early answers."""
