"""docs/node.md cannot drift from the code: the tool table, every setting, every error code."""

from __future__ import annotations

from pathlib import Path

from vault_node.config import NodeConfig
from vault_node.errors import ERROR_CODES
from vault_node.reference import HEADER, tools_table, with_tools_table

DOC = Path(__file__).resolve().parents[3] / "docs" / "node.md"


def test_the_tool_table_in_the_docs_is_the_generated_one() -> None:
    assert tools_table() in DOC.read_text(encoding="utf-8")


def test_make_docs_rewrites_a_stale_tool_table_and_nothing_else() -> None:
    stale = f"# Node\n\n## Tools\n\n{HEADER}| `gone` | read | — | Old. |\n\nAfter the table.\n"
    page = with_tools_table(stale)
    assert page == f"# Node\n\n## Tools\n\n{tools_table()}\nAfter the table.\n"
    assert with_tools_table(DOC.read_text(encoding="utf-8")) == DOC.read_text(encoding="utf-8")


def test_every_setting_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = [name for name in NodeConfig.model_fields if f"| `{name}` |" not in text]
    assert missing == []


def test_every_error_code_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert [code for code in sorted(ERROR_CODES) if f"| `{code}` |" not in text] == []


def test_every_cli_verb_of_the_node_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    for verb in ("secondbrain serve", "secondbrain validate"):
        assert verb in text
