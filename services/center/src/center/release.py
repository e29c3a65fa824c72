"""The installed release, as `/healthz`, the API schema, the start line and
`secondbrain-center version` report it: read from the package metadata when first asked,
not when any `center` module loads (the CLI's start-up pays for it only in `version`)."""

from importlib.metadata import PackageNotFoundError, version

try:
    VERSION = version("secondbrain")
except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
    VERSION = "0.0.0"
