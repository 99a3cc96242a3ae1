"""Processes and threads that follow the log and feed the projections; scheduled jobs."""
