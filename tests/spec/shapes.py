"""Minimum response shapes of SPEC §14.1, written once for the tests that check them."""

# GET /api/runs/{id} (and each row of GET /api/runs).
RUN_KEYS = frozenset(
    {"id", "agent", "kind", "status", "summary", "reasons", "tokens_in", "tokens_out", "cost",
     "proposals"}
)  # fmt: skip
