"""Search: full text (FTS5 and BM25), vectors, the two fused, passages under a budget, and
answers read from the index (docs/design.md#search).

Other packages search through these names; the modules not named here are its own business.
"""

from vault_core.search import answers, embedding, hybrid, passages
from vault_core.search.fts import SYNTAXES, Filters, modified

__all__ = [
    "SYNTAXES",
    "Filters",
    "answers",
    "embedding",
    "hybrid",
    "modified",
    "passages",
]
