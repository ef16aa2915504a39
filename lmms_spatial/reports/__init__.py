"""Paper-layout reports computed from finished runs (results and samples files)."""
