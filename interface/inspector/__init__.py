"""The inspector: a web page (served by `strata serve` at /) and the read-only operations behind it, to
see, search and correct what agents remember, now or as of any past moment."""
