"""The command API every edge calls and what it stands on: the one table of operations (operations.py),
the access check, the composition root (bootstrap.py) that builds everything from the one settings
object, structured logs, the workspace reads of anchors, the inspector's views, lean answers, and the
stand-in through which the root and the API import the read path on first use (lazy.py)."""
