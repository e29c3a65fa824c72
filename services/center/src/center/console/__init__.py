"""The center's web console (`/console`): requests, members, grants, tokens, nodes and the
audit log in a browser. Every page calls the same domain functions as the HTTP API, with
the same permission checks, and its changes are audited with `channel: console`."""
