"""Retrieval: BM25 over scoped partitions, fusion, and the in-process partition views."""
