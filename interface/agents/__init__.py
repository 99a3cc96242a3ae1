"""Agent clients: `strata init` (clients.py, which edits each client's configuration through
config_edits.py and writes it safely through config_files.py), the lifecycle hooks (hooks.py: what a
moment names, hook_cues.py; how a hook reads a server or a local store, hook_recall.py) and which
repository a folder belongs to (repo_identity.py)."""
