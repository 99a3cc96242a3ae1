"""The `strata` command: its entry point (launch.py, which routes `strata mcp` and `strata hook` past
the heavy imports), the typer app (main.py), terminal rendering, operator views, the demo."""
