"""The service layer: every use case that reads or changes memory, implemented once, one module per
family (memories, feedback, recall, review, hygiene, tokens, archetypes, inspection, digest,
learning). The operations table (interface/app/operations.py) names
them; `CommandAPI` (interface/app/api.py) parses a request, checks access and calls them; every
transport, the CLI's generated commands included, reaches them through the table. Only this layer
(and the domain below it) calls the event log's commands (tests/unit/test_one_door.py)."""
