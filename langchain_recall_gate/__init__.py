"""LangChain adapter for recall-gate."""
