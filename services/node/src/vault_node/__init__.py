"""The vault node: MCP over HTTP for the vaults on this machine."""
