"""The per-call deadline stops reads: SQLite statements, loops over notes, index queries."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable

import pytest

from vault_core import deadline
from vault_core.deadline import Limit
from vault_core.errors import DeadlineError
from vault_core.index.store import Index
from vault_core.search import answers as queries
from vault_core.search import fts as search

Build = Callable[..., Index]
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


def test_a_deadline_of_one_second_interrupts_an_endless_statement(build_index: Build) -> None:
    index = build_index({"a.md": "# A\n"})

    def endless() -> None:
        with index.querying() as conn:
            conn.execute(ENDLESS).fetchone()

    with pytest.raises(DeadlineError) as caught:
        Limit(1.0).run(endless)
    assert caught.value.code == "timeout"
    assert "deadline of 1 s" in caught.value.message
    assert "narrow it" in caught.value.message
    # The reader went back to the pool and answers the next query, which has no deadline.
    assert search.search(index, "").total == 1
    assert queries.stats(index)["notes"] == 1


def test_a_connection_outlives_the_interrupt() -> None:
    conn = sqlite3.connect(":memory:")

    def endless() -> None:
        with deadline.interruptible(conn):
            conn.execute(ENDLESS).fetchone()

    with pytest.raises(DeadlineError):
        Limit(0.2).run(endless)
    assert conn.execute("SELECT 41 + 1").fetchone() == (42,)


def test_without_a_deadline_nothing_is_interrupted() -> None:
    conn = sqlite3.connect(":memory:")
    with deadline.interruptible(conn):
        row = conn.execute(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000)"
            " SELECT count(*) FROM c"
        ).fetchone()
    assert row == (200_000,)
    deadline.check()  # no limit: never raises


def test_a_call_already_past_its_deadline_does_no_work(build_index: Build) -> None:
    index = build_index({"a.md": "# A\n"})
    ran: list[int] = []
    with pytest.raises(DeadlineError):
        Limit(0).run(ran.append, 1)
    assert ran == []
    with pytest.raises(DeadlineError):
        Limit(-1).run(queries.stats, index)


def test_an_index_query_checks_the_deadline_before_its_first_statement(
    build_index: Build,
) -> None:
    index = build_index({"a.md": "# A\n\nword\n"})
    limit = Limit(60)

    def late() -> None:
        limit.at = 0  # as if the minute had gone by inside the handler
        search.search(index, "word")

    with pytest.raises(DeadlineError):
        limit.run(late)


def test_a_loop_over_items_stops_at_the_deadline() -> None:
    limit = Limit(60)
    seen = []

    def walk() -> None:
        for n in deadline.checked(range(10)):
            seen.append(n)
            if n == 3:
                limit.at = 0

    with pytest.raises(DeadlineError):
        limit.run(walk)
    assert seen == [0, 1, 2, 3]


def test_the_deadline_belongs_to_the_thread_that_runs_under_it() -> None:
    inside: list[Limit | None] = []
    other: list[Limit | None] = []
    limit = Limit(60)

    def work() -> None:
        inside.append(deadline.current())
        thread = threading.Thread(target=lambda: other.append(deadline.current()))
        thread.start()
        thread.join()

    limit.run(work)
    assert inside == [limit]
    assert other == [None]
    assert deadline.current() is None
