"""The command API every edge calls and what it stands on: the one table of operations (operations.py),
the access check, the composition root (bootstrap.py) that builds everything from the one settings
object, structured logs, the workspace reads of anchors, the inspector's views, lean answers."""
