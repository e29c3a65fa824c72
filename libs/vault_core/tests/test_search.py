"""Full-text search (docs/design.md#search): query translation, BM25, filters, hits."""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Callable
from dataclasses import replace

import pytest

from tickets import Reach
from vault_core import scope
from vault_core.errors import InvalidArgumentError
from vault_core.index.store import Index
from vault_core.search import fts as search
from vault_core.search.fts import Filters
from vault_core.words import snippet

Build = Callable[..., Index]
SECOND = 1_000_000_000
T0 = 1_700_000_000 * SECOND  # 2023-11-14T22:13:20Z


@pytest.fixture
def build(build_index: Build) -> Build:
    return build_index


def paths_of(results: search.Results) -> list[str]:
    return [hit.path for hit in results.hits]


# ---------------------------------------------------------------------- query translation


def test_plain_words_are_quoted_and_and_ed() -> None:
    assert search.fts_query("rate limits") == '"rate" AND "limits"'
    assert search.fts_query("  e-mail   C++ ") == '"e-mail" AND "C++"'
    assert search.fts_query("foo AND or not") == '"foo" AND "AND" AND "or" AND "not"'
    assert search.fts_query("   ") == ""


@pytest.mark.parametrize(
    "query",
    ['"rate limits"', "lim*", "(a b)", "title:rate", "rate OR cache", "rate NOT cache"],
)
def test_fts_syntax_passes_through_unchanged(query: str) -> None:
    assert search.fts_query(query) == query


def test_in_fts_syntax_plain_words_must_all_occur(build: Build) -> None:
    index = build({"both.md": "rate limits apply\n", "one.md": "rate only\n", "x.md": "none\n"})
    assert paths_of(search.search(index, "limits rate", syntax="fts")) == ["both.md"]
    # quoted, so an FTS keyword typed as a word is just a word
    assert search.search(index, "rate NEAR", syntax="fts").total == 0


def test_fts_syntax_is_honoured(build: Build) -> None:
    index = build({
        "a.md": "rate limits apply\n", "b.md": "cache warming\n", "c.md": "limiter design\n",
        "d.md": "---\ntitle: Rate card\n---\nprices\n",
    })  # fmt: skip

    def fts(text: str) -> list[str]:
        return sorted(paths_of(search.search(index, text, syntax="fts")))

    assert fts("rate OR cache") == ["a.md", "b.md", "d.md"]
    assert fts("limit*") == ["a.md", "c.md"]
    assert fts("title:rate") == ["d.md"]
    assert fts('"limits apply"') == ["a.md"]


@pytest.mark.parametrize("query", ['"unterminated', "(open", "nosuchcolumn:word", '"a" OR'])
def test_a_syntax_error_becomes_a_readable_invalid_argument(build: Build, query: str) -> None:
    index = build({"a.md": "word\n"})
    with pytest.raises(InvalidArgumentError) as caught:
        search.search(index, query, syntax="fts")
    assert caught.value.code == "invalid_argument"
    assert caught.value.message.startswith(f"the search query {query!r} is not valid FTS5 syntax (")
    assert caught.value.message.endswith("so they are matched as words")


@pytest.mark.parametrize(
    "question",
    ['"unterminated', "(open", "nosuchcolumn:word", '"a" OR', "path: {{date:YYYY}}", "?", "C++ -x"],
)
def test_a_question_in_plain_words_is_never_refused(build: Build, question: str) -> None:
    index = build({"a.md": "word\n"})
    assert search.search(index, question).total >= 0


def test_a_question_finds_notes_that_hold_some_of_its_words_all_of_them_first(
    build: Build,
) -> None:
    index = build({
        "both.md": "rate limits apply to every client\n",
        "rate.md": "the rate of change\n",
        "limits.md": "limits and more limits, limits everywhere\n",
        "x.md": "nothing relevant\n",
    })  # fmt: skip
    found = search.search(index, "which rate limits apply?")
    assert paths_of(found)[0] == "both.md"
    assert set(paths_of(found)) == {"both.md", "rate.md", "limits.md"}
    assert found.total == 3


def test_word_variants_are_found(build: Build) -> None:
    index = build({
        "a.md": "Retry intervals and backoff\n", "b.md": "one connection per client\n",
        "c.md": "the property panel\n", "d.md": "Verknüpfungen zwischen Notizen\n",
    })  # fmt: skip
    assert paths_of(search.search(index, "interval")) == ["a.md"]
    assert paths_of(search.search(index, "connections")) == ["b.md"]
    assert paths_of(search.search(index, "properties")) == ["c.md"]
    assert paths_of(search.search(index, "Wie finde ich eine Verknüpfung?")) == ["d.md"]


def test_a_lone_question_mark_does_not_empty_the_query(build: Build) -> None:
    index = build({"import.md": "Importer depuis Evernote\n", "x.md": "autre chose\n"})
    assert paths_of(search.search(index, "importer Evernote ?")) == ["import.md"]


def test_chinese_and_japanese_sentences_match_inside_runs(build: Build) -> None:
    index = build({
        "zh.md": "---\ntitle: 别名\n---\n在笔记中使用别名可以更快地找到它。\n",
        "ja.md": "ノートにエイリアスを追加する方法\n", "en.md": "aliases in English\n",
    })  # fmt: skip
    assert paths_of(search.search(index, "别名")) == ["zh.md"]
    assert paths_of(search.search(index, "怎么使用别名")) == ["zh.md"]
    assert paths_of(search.search(index, "エイリアスを追加")) == ["ja.md"]
    (hit,) = search.search(index, "别名").hits
    assert "\u200b" not in hit.snippet
    assert "<<别>><<名>>" in hit.snippet or "<<别名>>" in hit.snippet


def test_an_exact_rare_word_beats_a_common_one(build: Build) -> None:
    files: dict[str, str | bytes] = {f"n{i}.md": "notes about notes\n" for i in range(20)}
    files["rare.md"] = "the zettelkasten method\n"
    index = build(files)
    assert paths_of(search.search(index, "zettelkasten notes"))[0] == "rare.md"


def test_diacritics_are_folded_both_ways(build: Build) -> None:
    index = build({"accent.md": "Das Café am Eck\n", "plain.md": "a cafe nearby\n"})
    assert sorted(paths_of(search.search(index, "cafe"))) == ["accent.md", "plain.md"]
    assert sorted(paths_of(search.search(index, "CAFÉ"))) == ["accent.md", "plain.md"]


# ---------------------------------------------------------------------- ranking


def _bm25(freq: float, tokens: int, avg_tokens: float, idf: float) -> float:
    """FTS5's BM25 (k1 = 1.2, b = 0.75) for one phrase; `freq` is already column-weighted."""
    k1, b = 1.2, 0.75
    return idf * freq * (k1 + 1) / (freq + k1 * (1 - b + b * tokens / avg_tokens))


def test_a_title_hit_outranks_a_body_hit_with_the_title_weighted_eight_to_one(
    build: Build,
) -> None:
    long_body = " ".join(f"w{n}" for n in range(29))
    index = build({
        "zebra.md": long_body + "\n",  # title "zebra" (from the file name), 1 + 29 tokens
        "b.md": "a zebra\n",  # title "b", 1 + 2 tokens
        "c.md": "one two three\n",  # 1 + 3 tokens
        "d.md": "four five six seven\n",  # 1 + 4 tokens
        "e.md": "eight nine ten eleven twelve\n",  # 1 + 5 tokens
    })  # fmt: skip
    avg = (30 + 3 + 4 + 5 + 6) / 5
    idf = math.log((5 - 2 + 0.5) / (2 + 0.5))
    results = search.search(index, "zebra", syntax="fts")
    assert [(hit.path, hit.score) for hit in results.hits] == [
        ("zebra.md", round(_bm25(8.0, 30, avg, idf), 4)),
        ("b.md", round(_bm25(1.0, 3, avg, idf), 4)),
    ]
    # unweighted, the short body hit would have won: the weight decides
    assert _bm25(1.0, 30, avg, idf) < _bm25(1.0, 3, avg, idf)


def test_score_is_positive_and_larger_is_better(build: Build) -> None:
    files: dict[str, str | bytes] = {f"filler{n}.md": "nothing here\n" for n in range(6)}
    files.update({
        "many.md": "apple apple apple apple pear\n",
        "one.md": "apple pear pear pear pear\n",
        "two.md": "apple apple pear pear pear\n",
    })  # fmt: skip
    index = build(files)
    hits = search.search(index, "apple").hits
    assert [hit.path for hit in hits] == ["many.md", "two.md", "one.md"]
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True)
    assert scores[-1] > 0
    assert len(set(scores)) == 3


def test_without_a_query_newest_come_first_ties_by_path(build: Build) -> None:
    index = build(
        {"old.md": "x\n", "new.md": "x\n", "mid-b.md": "x\n", "mid-a.md": "x\n", "pic.png": b"p"},
        mtimes={"old.md": 1, "new.md": 30, "mid-b.md": 20, "mid-a.md": 20, "pic.png": 40},
    )
    results = search.search(index)
    assert paths_of(results) == ["new.md", "mid-a.md", "mid-b.md", "old.md"]
    assert results.total == 4  # attachments are never hits
    assert {(hit.score, hit.snippet) for hit in results.hits} == {(0.0, "")}


# ---------------------------------------------------------------------- filters

FILTER_FILES: dict[str, str | bytes] = {
    "projects/a.md": "---\ntags: [project/alpha, urgent]\n---\nword\n",
    "projects/sub/b.md": "---\ntags: [project]\n---\nword\n",
    "projects-old/c.md": "---\ntags: [projects, urgent]\n---\nword\n",
    "projects.md": "#project #urgent word\n",
    "a_b/d.md": "#a_b word\n",
    "axb/e.md": "#axb/sub word\n",
    "journal/2026-01-01.md": "word\n",
}


def test_prefix_matches_a_folder_and_nothing_beside_it(build: Build) -> None:
    index = build(FILTER_FILES)
    assert sorted(paths_of(search.search(index, "word", Filters(prefix="projects")))) == [
        "projects/a.md",
        "projects/sub/b.md",
    ]
    assert paths_of(search.search(index, filters=Filters(prefix="a_b/"))) == ["a_b/d.md"]


def test_glob_filters_the_whole_path(build: Build) -> None:
    index = build(FILTER_FILES)
    assert paths_of(search.search(index, "word", Filters(glob="journal/2026-*.md"))) == [
        "journal/2026-01-01.md"
    ]
    assert sorted(paths_of(search.search(index, filters=Filters(glob="projects/*")))) == [
        "projects/a.md",
        "projects/sub/b.md",
    ]


def test_tags_are_and_ed_and_a_tag_also_matches_its_subtags(build: Build) -> None:
    index = build(FILTER_FILES)

    def tagged(*tags: str) -> list[str]:
        return sorted(paths_of(search.search(index, filters=Filters(tags=tags))))

    assert tagged("project") == ["projects.md", "projects/a.md", "projects/sub/b.md"]
    assert tagged("#Project", "urgent") == ["projects.md", "projects/a.md"]
    assert tagged("project/alpha") == ["projects/a.md"]
    assert tagged("projects") == ["projects-old/c.md"]
    assert tagged("a_b") == ["a_b/d.md"]  # `_` is literal, not a wildcard
    assert tagged("project", "missing") == []


TAGGED = {
    (True, "project"): ["projects.md", "projects/a.md", "projects/sub/b.md"],
    (True, "project/alpha"): ["projects/a.md"],
    (True, "#Project"): ["projects.md", "projects/a.md"],
    (True, "a_b"): ["a_b/d.md"],
    (False, "project"): ["projects/a.md", "projects/sub/b.md"],
    (False, "project/alpha"): ["projects/a.md"],
    (False, "#Project"): ["projects/a.md"],
    (False, "a_b"): [],
}


@pytest.mark.parametrize("rare", [0, 10**6])
def test_a_rare_and_a_common_tag_filter_the_same(
    build: Build, monkeypatch: pytest.MonkeyPatch, rare: int
) -> None:
    """A tag on few notes is looked up in a list, a common one in each match's tags
    (`search.RARE_TAG`); both find the same notes, with and without path rules."""
    index = build(FILTER_FILES)
    monkeypatch.setattr(search, "RARE_TAG", rare)
    for rules in (None, Reach.of(["projects"])):
        with scope.applied(rules):
            for tags in (["project"], ["project/alpha"], ["#Project", "urgent"], ["a_b"]):
                found = search.search(index, filters=Filters(tags=tags))
                ranked = search.search(index, "word", Filters(tags=tags))
                wanted = TAGGED[(rules is None, tags[0])]
                assert sorted(paths_of(found)) == sorted(paths_of(ranked)) == wanted, tags


def test_modified_after_keeps_notes_modified_at_or_after_the_moment(build: Build) -> None:
    index = build(
        {"old.md": "word\n", "edge.md": "word\n", "new.md": "word\n"},
        mtimes={"old.md": 9, "edge.md": 10, "new.md": 11},
    )
    found = search.search(index, "word", Filters(modified_after_ns=T0 + 10 * SECOND))
    assert sorted(paths_of(found)) == ["edge.md", "new.md"]


def test_a_time_filter_goes_by_a_notes_own_updated_date_before_its_files(
    build: Build,
) -> None:
    """A vault checked out anew has every file changed now: its notes' dates still tell."""
    index = build(
        {
            "stale.md": "---\nupdated: 1970-01-01\n---\nword\n",
            "fresh.md": "---\nupdated: 2026-03-10T08:00:00Z\n---\nword\n",
            "undated.md": "---\nupdated: soon\n---\nword\n",
            "plain.md": "word\n",
        },
        mtimes={"stale.md": 11, "fresh.md": 9, "undated.md": 11, "plain.md": 9},
    )
    since = Filters(modified_after_ns=T0 + 10 * SECOND)
    assert sorted(paths_of(search.search(index, "word", since))) == ["fresh.md", "undated.md"]
    before = Filters(modified_before_ns=T0 + 10 * SECOND)
    assert sorted(paths_of(search.search(index, "word", before))) == ["plain.md", "stale.md"]
    day = int(dt.datetime(2026, 3, 10, 23, tzinfo=dt.UTC).timestamp() * 1e9)
    assert "fresh.md" in paths_of(search.search(index, "word", Filters(modified_after_ns=day)))
    assert paths_of(search.search(index, "word", Filters(modified_after_ns=day + 10**14))) == []
    next_day = day + 2 * 3600 * SECOND  # a note's own date is compared by the day
    within = Filters(modified_after_ns=day - 86_400 * SECOND, modified_before_ns=next_day)
    assert paths_of(search.search(index, "word", within)) == ["fresh.md"]
    assert paths_of(search.search(index, "word", replace(within, modified_before_ns=day))) == []


def test_a_notes_own_date_is_a_day_in_the_time_zone_its_bounds_are_midnights_of(
    build: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    """East of UTC, "yesterday" runs from a midnight that is still the day before in UTC:
    a note dated that day is in it all the same."""
    index = build({"dated.md": "---\nupdated: 2026-03-10\n---\nword\n"})
    monkeypatch.setenv("TZ", "Etc/GMT-2")  # two hours east of UTC, no summer time
    time.tzset()
    try:
        zone = dt.timezone(dt.timedelta(hours=2))
        start, end = (dt.datetime(2026, 3, day, tzinfo=zone) for day in (10, 11))
        bounds = Filters(
            modified_after_ns=int(start.timestamp()) * SECOND,
            modified_before_ns=int(end.timestamp()) * SECOND,
        )
        assert paths_of(search.search(index, "word", bounds)) == ["dated.md"]
    finally:
        monkeypatch.undo()
        time.tzset()


def test_the_time_bounds_may_go_by_a_notes_created_date(build: Build) -> None:
    index = build(
        {
            "made-long-ago.md": "---\ncreated: 2020-01-01\nupdated: 2026-03-10\n---\nword\n",
            "made-lately.md": "---\ncreated: 2026-03-09\nupdated: 2026-03-09\n---\nword\n",
        }
    )
    day = int(dt.datetime(2026, 3, 1, tzinfo=dt.UTC).timestamp()) * SECOND
    changed = Filters(modified_after_ns=day)
    assert sorted(paths_of(search.search(index, "word", changed))) == [
        "made-lately.md",
        "made-long-ago.md",
    ]
    made = replace(changed, dated_by="created")
    assert paths_of(search.search(index, "word", made)) == ["made-lately.md"]


def test_modified_before_keeps_notes_modified_before_the_moment(build: Build) -> None:
    index = build(
        {"old.md": "word\n", "edge.md": "word\n", "new.md": "word\n"},
        mtimes={"old.md": 9, "edge.md": 10, "new.md": 11},
    )
    found = search.search(index, "word", Filters(modified_before_ns=T0 + 10 * SECOND))
    assert paths_of(found) == ["old.md"]
    assert search.search(index, "", Filters(modified_before_ns=-(10**30))).total == 0


def test_query_and_filters_combine(build: Build) -> None:
    files = dict(FILTER_FILES)
    files["projects/other.md"] = "---\ntags: [urgent]\n---\nsomething else\n"
    index = build(files)
    found = search.search(index, "word", Filters(tags=["urgent"], prefix="projects"))
    assert paths_of(found) == ["projects/a.md"]


# ---------------------------------------------------------------------- paging and hits


def test_total_counts_every_match_whatever_the_limit_and_offset(build: Build) -> None:
    files: dict[str, str | bytes] = {f"n{n:02}.md": "common\n" for n in range(30)}
    files["other.md"] = "rare\n"
    index = build(files, mtimes={f"n{n:02}.md": n for n in range(30)})
    everything = search.search(index, "common", limit=100)
    page = search.search(index, "common", limit=5, offset=10)
    assert (everything.total, len(everything.hits)) == (30, 30)
    assert (page.total, paths_of(page)) == (30, paths_of(everything)[10:15])
    recent = search.search(index, limit=3, offset=1)  # other.md, written just now, is first
    assert (recent.total, paths_of(recent)) == (31, ["n29.md", "n28.md", "n27.md"])
    assert search.search(index, "common", offset=40).total == 30


def test_snippets_mark_the_hits(build: Build) -> None:
    index = build({"a.md": "---\ntitle: T\n---\nBefore the Needle after.\n", "b.md": "x\n"})
    (hit,) = search.search(index, "needle").hits
    assert hit.snippet == "Before the <<Needle>> after.\n"


def test_a_note_holding_one_word_800000_times_gets_its_snippet_from_a_window(
    build: Build,
) -> None:
    # FTS5's snippet() over the whole note scored every match against every other:
    # this search took minutes. The snippet now looks at snippet.WINDOW characters.
    planted = "# Big\n\n" + "word " * 800_000
    index = build({"big.md": planted, "small.md": "# Small\n\na word here\n"})
    results = search.search(index, "word")
    assert sorted(paths_of(results)) == ["big.md", "small.md"]
    big = next(hit for hit in results.hits if hit.path == "big.md")
    assert big.snippet.startswith("# Big\n\n<<word>> <<word>> <<word>>")
    assert big.snippet.endswith(" … ")
    assert len(big.snippet) < snippet.WINDOW
    small = next(hit for hit in results.hits if hit.path == "small.md")
    assert small.snippet == "# Small\n\na <<word>> here\n"


def test_hits_carry_title_tags_modified_and_bytes(build: Build) -> None:
    text = "---\ntitle: Found It\ntags: [Beta, alpha/one]\n---\nneedle #gamma\n"
    index = build({"wiki/a.md": text, "b.md": "x\n"}, mtimes={"wiki/a.md": 0})
    (hit,) = search.search(index, "needle").hits
    assert (hit.path, hit.title, hit.tags, hit.modified, hit.bytes) == (
        "wiki/a.md",
        "Found It",
        ["beta", "alpha/one", "gamma"],
        "2023-11-14T22:13:20Z",
        len(text.encode()),
    )


def test_modified_is_rfc3339_utc_with_seconds() -> None:
    assert search.modified(T0 + 999_999_999) == "2023-11-14T22:13:20Z"
    assert search.modified(0) == "1970-01-01T00:00:00Z"


def test_like_escape_makes_wildcards_literal() -> None:
    assert search.like_escape("a_b%c\\d") == "a\\_b\\%c\\\\d"


def test_a_modified_after_beyond_sqlite_integers_matches_nothing_instead_of_failing(
    build: Build,
) -> None:
    index = build({"a.md": "# A\nalpha\n"})
    filters = Filters(modified_after_ns=10**30)
    assert search.search(index, "alpha", filters).total == 0
    assert search.search(index, "", Filters(modified_after_ns=-(10**30))).total == 1


def test_a_quoted_phrase_holding_or_is_highlighted_as_the_phrase(build: Build) -> None:
    index = build({"a.md": "# A\n\nchoose this OR that, not both\n"})
    (hit,) = search.search(index, '"this OR that"').hits
    assert "<<this OR that>>" in hit.snippet
