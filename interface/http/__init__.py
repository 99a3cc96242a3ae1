"""`strata serve`: the HTTP JSON endpoint and its OpenAPI description, MCP over streamable HTTP,
health, the checks every route shares (security.py: Host, Origin, content type, tokens) and the
inspector's page (page.py and static/)."""
