"""LlamaIndex adapter for recall-gate."""
