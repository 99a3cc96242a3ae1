"""The edges: CLI, command API and (later) MCP and HTTP — parse, validate, call, render."""
