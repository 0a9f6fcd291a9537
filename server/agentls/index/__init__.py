"""The workspace search index behind ``search_semantic``, ``agentls index`` and
``agentls search``: chunking (``chunker``), the SQLite store (``store``), keeping it
current (``index``), embedders (``embedding``) and hybrid search (``query``)."""
