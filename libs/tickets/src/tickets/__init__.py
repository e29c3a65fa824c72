"""secondbrain token format: Ed25519 JWS tickets, scopes, revocation snapshots, audit chain."""
