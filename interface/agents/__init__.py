"""Agent clients: `strata init` (clients.py, writing each client's configuration safely through
config_files.py), the lifecycle hooks (hooks.py) and which repository a folder belongs to
(repo_identity.py)."""
