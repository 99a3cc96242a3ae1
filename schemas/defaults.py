"""The defaults of a read that the contract publishes and the engine applies, defined once here.

Imports nothing: the recall engine (projections/) and the lifecycle hooks, which run on the standard
library alone, read them from here without loading pydantic.
"""

DEFAULT_BAR = 0.2
"""The default of min_relevance, the engine's bar: below it, an answer's relevance returns nothing."""
TEXT_CHARS = 320
"""The default of max_text_chars: a result's text is cut after about this many characters (at a word),
with a marker saying how much more there is; `read` with `memory_ids` gives memories whole."""
DEFAULT_LIMIT = 20
"""The most results of a read that names no limit (the contract's default: ../shared/ARCHITECTURE.md)."""
