"""Path rules: cleaning, checking, matching, narrowing, and their place in a signed token."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickets import ClaimsError, Paths, Reach, RuleError, TokenError, issue, within
from tickets import testing as t
from tickets.reach import folder, inside
from vault_core import paths as node_paths
from vault_core.errors import InvalidPathError

ACME = Reach.of(["projects/acme"], ["projects/acme/inbox"], ["projects/acme/hr"])


@pytest.mark.parametrize(
    ("raw", "cleaned"),
    [
        ("projects/acme", "projects/acme"),
        (" ./projects\\acme/ ", "projects/acme"),
        ("projects/./acme", "projects/acme"),
        ("projects/x/../acme", "projects/acme"),
        ("Projekte/Café", "Projekte/Café"),
    ],
)
def test_a_rule_is_cleaned_like_a_node_path(raw: str, cleaned: str) -> None:
    assert folder(raw) == cleaned


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("", "empty"),
        ("/etc", "absolute"),
        ("C:/x", "absolute"),
        ("../other", "leaves the vault"),
        ("a/../..", "leaves the vault"),
        ("a//b", "empty segment"),
        (".git", "start with '.'"),
        ("notes/.secondbrain", "start with '.'"),
        ("a\x00b", "not valid Unicode"),
        ("a\udc80", "not valid Unicode"),
        ("a\tb", "control or text-direction character"),
        ("a\x85b", "control or text-direction character"),
        ("projects/\u202eemca", "control or text-direction character"),
        ("x" * 600, "longer than"),
    ],
)
def test_a_rule_that_does_not_clean_is_refused_with_the_reason(raw: str, problem: str) -> None:
    with pytest.raises(RuleError, match=problem):
        folder(raw)


segment = st.lists(
    st.sampled_from(["a", "B", "é", ".", "..", " ", "-", "_", "\\", "1"]), max_size=3
).map("".join)
raw_path = st.lists(segment, min_size=1, max_size=4).map("/".join)


@given(raw_path)
def test_a_rule_cleans_exactly_when_the_node_accepts_the_path(raw: str) -> None:
    """The center cleans rules with tickets, the node paths with vault_core: the two agree."""
    try:
        node = node_paths.clean(raw).rstrip("/")
    except InvalidPathError:
        node = None
    try:
        rule: str | None = folder(raw)
    except RuleError:
        rule = None
    if node is not None and rule is not None:
        assert rule == node
    # The node keeps a trailing slash's folder; a rule is always a folder: they differ only
    # where one of them refuses an empty result that the other would not produce.
    assert (node is None) == (rule is None) or raw.strip().rstrip("/\\") == ""


def test_matching_is_by_whole_folders_and_exclusions_win() -> None:
    assert ACME.reads("projects/acme/plan.md")
    assert ACME.reads("projects/acme")
    assert not ACME.reads("projects/acme2/plan.md")
    assert not ACME.reads("projects/acme/hr/salaries.md")
    assert not ACME.reads("Projects/acme/plan.md")  # case as the vault stores it
    assert ACME.writes("projects/acme/inbox/new.md")
    assert not ACME.writes("projects/acme/plan.md")


def test_write_defaults_to_read_and_may_be_nothing() -> None:
    assert Reach.of(["a"]).write == ("a",)
    assert Reach.of(["a"], []).write == ()
    assert not Reach.of(["a"], []).writes("a/x.md")


@pytest.mark.parametrize(
    ("read", "write", "exclude", "problem"),
    [
        ([], None, [], "reaches nothing"),
        (["a"], ["b"], [], "never wider than read"),
        (["a"], None, ["b/c"], "not inside a read folder"),
        (["a"], ["a/b"], ["a"], "excluded entirely"),
        ([f"f{i}" for i in range(40)], None, [], "at most 32"),
    ],
)
def test_inconsistent_rules_are_refused(
    read: list[str], write: list[str] | None, exclude: list[str], problem: str
) -> None:
    with pytest.raises(RuleError, match=problem):
        Reach.of(read, write, exclude)


def test_no_read_folders_is_the_whole_vault_with_its_exclusions_and_write_folders() -> None:
    whole = Reach.of(None, ["inbox"], ["hr"])
    assert whole.reads("anything/at/all.md")
    assert not whole.reads("hr/salaries.md")
    assert whole.writes("inbox/x.md")
    assert not whole.writes("notes/x.md")
    assert whole.to_claim() == {"write": ["inbox"], "exclude": ["hr"]}
    assert Reach.from_claim({"write": ["inbox"], "exclude": ["hr"]}) == whole
    assert whole.describe() == "read the whole vault; write inbox; except hr"
    assert within(Reach.of(["projects/acme"], []), whole) is None  # away from hr
    assert within(whole, ACME) is not None
    assert within(Reach.of(None, []), Reach.of(None, [], ["hr"])) is not None  # must keep hr out


def test_a_folder_inside_another_of_its_list_is_folded_into_it() -> None:
    assert Reach.of(["a/b", "a", "c"]).read == ("a", "c")


@pytest.mark.parametrize(
    ("inner", "ok"),
    [
        (Reach.of(["projects/acme/inbox"], None, []), True),
        (Reach.of(["projects/acme"], ["projects/acme/inbox"], ["projects/acme/hr"]), True),
        (Reach.of(["projects/acme"], [], ["projects/acme/hr"]), True),
        (Reach.of(["projects"], [], []), False),
        (Reach.of(["projects/acme/hr/x"], [], []), False),
        (Reach.of(["projects/acme"], [], []), False),  # would see the excluded hr folder
        (Reach.of(["projects/acme"], ["projects/acme"], ["projects/acme/hr"]), False),
        (None, False),
    ],
)
def test_delegation_only_narrows(inner: Reach | None, ok: bool) -> None:
    assert (within(inner, ACME) is None) is ok
    assert within(inner, None) is None


def _issue(**overrides: Any) -> Any:
    arguments: dict[str, Any] = {
        "iss": t.ISSUER,
        "sub": "alice",
        "aud": t.AUDIENCE,
        "scope": "read_write",
        "vaults": ["team"],
        "role": "editor",
        "now": t.NOW,
    }
    return issue(**{**arguments, **overrides})


def test_rules_travel_signed_and_the_verified_ticket_applies_them() -> None:
    claims = _issue(paths=Paths({"team": ACME}))
    payload = claims.to_payload()
    assert payload["paths"] == {
        "team": {
            "read": ["projects/acme"],
            "write": ["projects/acme/inbox"],
            "exclude": ["projects/acme/hr"],
        }
    }
    token = t.mint(**{**payload, "exp": t.NOW + 3600})
    ticket = t.verifier().verify(token)
    assert ticket.reach("team") == ACME
    assert ticket.reach("other") is None
    assert "paths" not in _issue().to_payload()


@pytest.mark.parametrize(
    ("paths", "problem"),
    [
        ({"team": {"read": ["../x"]}}, "leaves the vault"),
        ({"team": {"read": "projects"}}, "list of folder paths"),
        ({"team": {"read": ["a"], "delete": ["a"]}}, "read, write and exclude"),
        ({"other": {"read": ["a"]}}, "does not reach"),
        (["team"], "map vault names"),
    ],
)
def test_a_token_with_bad_rules_is_refused(paths: object, problem: str) -> None:
    with pytest.raises(TokenError) as refused:
        t.verifier().verify(t.mint(paths=paths))
    assert refused.value.reason == "bad_claims"
    assert problem in refused.value.detail


def test_issue_refuses_rules_for_a_vault_the_token_does_not_name() -> None:
    with pytest.raises(ClaimsError, match="does not reach"):
        _issue(paths=Paths({"other": ACME}))


def test_inside_is_by_segments() -> None:
    assert inside("a/b", "a")
    assert inside("a", "a")
    assert not inside("ab", "a")


def test_paths_match_rules_in_nfc_whatever_normal_form_they_are_stored_in() -> None:
    decomposed = unicodedata.normalize("NFD", "café/menu.md")
    assert decomposed != "café/menu.md"
    reach = Reach.of([unicodedata.normalize("NFD", "café")], None, ["café/old"])
    assert reach.read == ("café",)  # rules are kept in NFC
    assert reach.reads(decomposed)
    assert reach.writes(decomposed)
    assert not reach.reads(unicodedata.normalize("NFD", "café/old/x.md"))
    assert not Reach.of(["public"], None, ["public/café"]).reads(f"public/{decomposed}")


def test_exclusions_match_in_every_case_read_and_write_folders_only_in_their_own() -> None:
    reach = Reach.of(["public"], ["public/drafts"], ["public/secret", "public/Straße"])
    for hidden in ("public/Secret/a.md", "public/SECRET", "public/sEcReT/x/y.md",
                   "public/STRASSE/a.md", "public/strasse/a.md"):  # fmt: skip
        assert not reach.reads(hidden), hidden
        assert not reach.writes(hidden), hidden
    assert reach.reads("public/secretive/a.md")
    assert not reach.reads("PUBLIC/a.md")
    assert not reach.writes("public/Drafts/a.md")
    assert reach.writes("public/drafts/a.md")
