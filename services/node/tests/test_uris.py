"""The `secondbrain://VAULT/PATH` URIs: built and parsed in one place, refused when they name
anything else, and the resource links of tool results made from them."""

from __future__ import annotations

import pytest

from vault_node.errors import ProtocolError
from vault_node.uris import TEMPLATE, link, mime_of, parse_uri, uri_of


def test_a_uri_names_the_vault_and_the_path_percent_encoded() -> None:
    uri = uri_of("default", "wiki/a note#1.md")
    assert uri == "secondbrain://default/wiki/a%20note%231.md"
    assert parse_uri(uri) == ("default", "wiki/a note#1.md")


def test_every_path_comes_back_as_it_went_in() -> None:
    for rel in ("a.md", "ü/ß ?.md", "x/%41.md", "日本/メモ.md", "a/b/c d+e&f=g.png"):
        assert parse_uri(uri_of("v-1", rel)) == ("v-1", rel)


@pytest.mark.parametrize(
    "uri",
    [
        "https://default/a.md",
        "secondbrain:///a.md",
        "secondbrain://default/",
        "secondbrain://default/a.md?x=1",
        "secondbrain://default/a.md#top",
        "secondbrain://default/%FF.md",
        "",
    ],
)
def test_anything_but_a_note_uri_is_refused_with_the_shape_to_use(uri: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        parse_uri(uri)
    assert "secondbrain://VAULT/PATH" in str(caught.value)


def test_a_link_to_a_note_or_attachment_carries_its_uri_and_type() -> None:
    assert link("default", "wiki/A b.MD") == {
        "type": "resource_link",
        "uri": "secondbrain://default/wiki/A%20b.MD",
        "name": "wiki/A b.MD",
        "mimeType": "text/markdown",
    }
    assert link("default", "att/p.PNG")["mimeType"] == "image/png"
    assert mime_of("att/unknown.bin") == "application/octet-stream"


def test_the_template_is_the_uri_with_its_two_variables() -> None:
    assert TEMPLATE == "secondbrain://{vault}/{+path}"
