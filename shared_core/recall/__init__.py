"""The read side: recall rules, the recall gate, and gating of wrapped retrievers' results."""
