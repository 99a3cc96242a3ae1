"""Read models built from the event log: FTS, vectors, links and the top-of-block snapshot."""
