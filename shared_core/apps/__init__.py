"""Applications on top of the core: the ``recall-gate`` command, the demo, the MCP server."""
