"""The serving runtime both transports share (`strata mcp` over stdio, `strata serve` over HTTP): the
operation lane (dispatcher.py), the projection workers and scheduler of a serving process
(background.py), waits for read-your-writes (consistency.py), the stall watch (stalls.py), and the door
through which a local store's hooks ask `strata mcp` their reads (hook_door.py)."""
