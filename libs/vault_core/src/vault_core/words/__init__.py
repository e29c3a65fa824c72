"""Words: the language of a text, its function words, a question as FTS5 terms, and the
folding and windows that search snippets use; shared by the index and search, which import
its modules directly. No other package needs it, so the face exports nothing.
"""

__all__: list[str] = []
