"""`strata serve`: the app and start-up (serve.py), the operations' routes and error answers
(endpoints.py), their OpenAPI description (openapi.py), /healthz (health.py), the access log
(middleware.py), the token watcher (watch.py), MCP over streamable HTTP (mcp_sessions.py), the checks
every route shares (security.py: Host, Origin, content type, tokens) and the inspector's page (page.py
and static/)."""
