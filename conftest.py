"""What every test suite of the repository shares."""

from collections.abc import Iterator

import pytest
import structlog
from hypothesis import settings

# Hypothesis fails an example that runs longer than 200 ms by default: a wall-clock
# threshold, which a shared and loaded machine trips at random. Examples are judged on what
# they return, never on how fast.
settings.register_profile("secondbrain", deadline=None)
settings.load_profile("secondbrain")


@pytest.fixture(autouse=True)
def _structlog_restored() -> Iterator[None]:
    """Each test leaves structlog as it found it: a service started in a test configures it
    (a level filter among others), and a later test in the same process — which one depends
    on how `make test` shares the files out — would otherwise see none of its info events."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


LONGEST_FIRST = (
    "tests/deploy/test_containers.py",
    "services/node/tests/test_up.py",
    "services/center/tests/test_oauth_eviction.py",
    "services/center/tests/test_oauth_attacks.py",
)
"""The files that took longest (`--durations`), run first: side by side (`make test`), a
long file that started last would leave the other processes idle at the end."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.path.relative_to(config.rootpath).as_posix()
        return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: every other test keeps its place
