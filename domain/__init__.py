"""The memory domain: aggregates, events, command handlers and the pure rules behind them.

Imports nothing from the other layers of the project.
"""
