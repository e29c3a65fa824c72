"""The center as OAuth 2.1 authorization server for MCP clients (docs/design.md#oauth).

Split by concern: `metadata` (RFC 8414), `clients` (RFC 7591 registration), `authorize`
and `pages` (the login page and its CSRF-bound form), `codes` (authorization codes),
`refresh` (rotation, families, reuse detection), `token` (the token endpoint),
`resources` (RFC 8707) and `limits` (per-IP rate limits). `server.OAuthServer` holds
what one running app keeps in memory. Authlib supplies the PKCE and metadata models;
its server classes are synchronous and know no resource indicators, refresh families
or S256-only policy, so the flows themselves are written here.
"""
