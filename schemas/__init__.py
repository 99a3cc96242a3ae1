"""The agent-facing contracts: pydantic models for every request and response, exported as JSON Schema.

Imports only pydantic. Field names follow ../shared/ARCHITECTURE.md ("Contracts"); extensions are marked.
"""
