"""Helpers that tests of this and other packages reuse: a vault on disk with a fixed clock,
and the files no tool would ever write, planted by hand."""

from __future__ import annotations

import contextlib
import ctypes
import datetime as dt
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vault_core.index.store import Index
from vault_core.library import OpenVault
from vault_core.search import embedding
from vault_core.search.vectors import VectorStore
from vault_core.vault import Vault

FIXED_NOW = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


class Clock:
    """A settable clock: `clock.now` is what the vault sees as the current time."""

    def __init__(self, now: dt.datetime = FIXED_NOW) -> None:
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += dt.timedelta(**delta)


@contextlib.contextmanager
def embedded(root: Path, files: dict[str, str | bytes]) -> Iterator[tuple[Index, VectorStore]]:
    """A vault of `files` with its index and its vectors made by the bundled model (waited
    for, up to a minute), for tests of search by meaning."""
    make_vault(root, files)
    index = Index.open(root / "test", "test")
    index.reconcile()
    model = embedding.shared(embedding.BUNDLED)
    assert model is not None
    vectors = VectorStore(index, model).start()
    end = time.monotonic() + 60
    while not vectors.ready() and time.monotonic() < end:
        time.sleep(0.02)
    try:
        yield index, vectors
    finally:
        vectors.stop()
        index.close()


def make_vault(
    root: Path, files: dict[str, str | bytes] | None = None, name: str = "test"
) -> Vault:
    """A vault in `root/name` holding `files` (vault-relative path → text or bytes)."""
    vault_root = root / name
    vault_root.mkdir(parents=True, exist_ok=True)
    for rel, content in (files or {}).items():
        target = vault_root.joinpath(*rel.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_bytes(content.encode("utf-8"))
    return Vault(vault_root, name, clock=Clock())


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` (dot directories included) → its bytes: proves nothing changed."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def corpus_dir(name: str = "obsidian-help-en") -> Path:
    """A corpus in the corpora folder beside the checkout: by default the English
    Obsidian Help vault, `obsidian-help-multilingual` the whole Help vault in all its
    languages.

    `SECONDBRAIN_CORPUS` overrides the English one's location. Tests that need it fail when
    it is missing rather than skip: a skipped corpus test would prove nothing.
    """
    override = os.environ.get("SECONDBRAIN_CORPUS")
    if override and name == "obsidian-help-en":
        return Path(override)
    repo = Path(__file__).resolve().parents[4]
    return repo.parent / "shared" / "corpora" / name


def plant_hostile_files(root: Path) -> dict[str, str]:
    """Put files into vault `root` that no tool would write, with OS calls and bytes names:
    names that are not UTF-8, text that is not, looping links (files and folders), links
    into `.git`, `.git/config`, `.secondbrain` and `.obsidian`, a named pipe. Returns what
    each is reported as: escaped vault-relative path → reason. `.git` must exist already.
    """
    raw = os.fsencode(root)
    for folder in (b"wiki", b"bad-\xff-folder", b"loops", b"links", b".secondbrain", b".obsidian"):
        os.makedirs(raw + b"/" + folder, exist_ok=True)  # noqa: PTH103 — bytes names, on purpose
    for name, data in (
        (b"wiki/bad-\x80.md", b"# bad name\n"),
        (b"bad-\xff-folder/inside.md", b"# in a bad folder\n"),
        (b"wiki/latin1.md", "caf\xe9\n".encode("latin-1")),
        (b".obsidian/app.json", b"{}\n"),
        (b".secondbrain/instructions.md", b"# instructions\n"),
    ):
        with open(raw + b"/" + name, "wb") as out:  # noqa: PTH123
            out.write(data)
    links = {
        b"loops/a.md": b"b.md", b"loops/b.md": b"a.md", b"loops/here": b".", b"loops/up": b"..",
        b"links/git": b"../.git", b"links/git-config.md": b"../.git/config",
        b"links/state": b"../.secondbrain", b"links/obsidian": b"../.obsidian",
        b"links/instructions.md": b"../.secondbrain/instructions.md",
    }  # fmt: skip
    for name, target in links.items():
        os.symlink(target, raw + b"/" + name)  # noqa: PTH211
    os.mkfifo(raw + b"/pipe.md")
    reasons = {"loops/": "symlink_loop", "links/": "symlink_hidden"}
    expected = {name.decode(): reasons[name.decode()[:6]] for name in links}
    return {
        **expected,
        "wiki/bad-\\x80.md": "bad_name",
        "bad-\\xff-folder": "bad_name",
        "wiki/latin1.md": "not_utf8",
        "pipe.md": "not_a_file",
    }


def plant_unreadable_file(root: Path) -> dict[str, str]:
    """A note in vault `root` with mode 000 (see `unprivileged` for root), reported so."""
    locked = root / "wiki" / "locked.md"
    locked.parent.mkdir(parents=True, exist_ok=True)
    locked.write_text("# locked\n")
    locked.chmod(0)
    return {"wiki/locked.md": "unreadable"}


_CAP_VERSION_3 = 0x20080522
_DAC_OVERRIDES = (1 << 1) | (1 << 2)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH


@contextlib.contextmanager
def unprivileged() -> Iterator[None]:
    """Within the calling thread, file permissions bind even for root: the two capabilities
    that bypass them leave the effective set (and come back on exit). A no-op for others."""
    if os.geteuid() != 0:
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable, for bits 0-31, 32-63
    if libc.capget(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capget failed")
    saved = data[0]
    data[0] &= ~_DAC_OVERRIDES
    if libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")
    try:
        yield
    finally:
        data[0] = saved
        libc.capset(header, data)


def unprivileged_command() -> list[str]:
    """What to put before a command so that, run as root, file permissions bind for it too
    (`setpriv` drops the two capabilities that bypass them); nothing for other users."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise RuntimeError("running as root needs setpriv (util-linux) to test unreadable files")
    dropped = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={dropped}", f"--bounding-set={dropped}"]


@contextlib.contextmanager
def held_open(name: str) -> Iterator[threading.Event]:
    """Opening the vault `name` waits until the event yielded is set (a first index of
    hours, in a test); every other vault opens as usual. Set and undone on exit."""
    release = threading.Event()
    real = OpenVault.open

    def slow(root: Path, vault: str, *args: Any, **kwargs: Any) -> OpenVault:
        if vault == name:
            release.wait()
        return real(root, vault, *args, **kwargs)

    OpenVault.open = slow  # type: ignore[method-assign,assignment]
    try:
        yield release
    finally:
        release.set()
        OpenVault.open = real  # type: ignore[method-assign]
