"""The authorization center: members, grants, tokens, revocations and a hash-chained audit.

`create_app(settings)` builds the HTTP service; `secondbrain-center` (center.cli) is
the operator's command line. Domain modules never raise HTTP errors, only
`center.errors`; the routes under `center.routes` are thin glue.
"""
