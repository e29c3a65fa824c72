"""child: hostile bytes are decoded in a child process under bounds the kernel keeps, and at
most SLOTS such children run at once."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from vault_core import UnreadableAttachmentError, child, deadline
from vault_core.errors import DeadlineError


def script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "work.py"
    path.write_text("import json, sys\n" + body, encoding="utf-8")
    return path


def test_the_child_reads_its_input_and_answers_json(tmp_path: Path) -> None:
    echo = script(tmp_path, "data = sys.stdin.buffer.read()\nprint(json.dumps({'n': len(data)}))\n")
    assert child.run(echo, [], b"12345", "a.bin", memory=256 * 2**20, seconds=30) == {"n": 5}


def test_the_child_reads_an_open_file_itself(tmp_path: Path) -> None:
    echo = script(tmp_path, "data = sys.stdin.buffer.read()\nprint(json.dumps({'n': len(data)}))\n")
    (tmp_path / "big.bin").write_bytes(b"x" * 100_000)
    with (tmp_path / "big.bin").open("rb") as source:
        found = child.run(echo, [], source, "big.bin", memory=256 * 2**20, seconds=30)
    assert found == {"n": 100_000}


def test_the_address_space_bound_stops_an_allocation_and_says_so(tmp_path: Path) -> None:
    greedy = script(tmp_path, "block = bytearray(400 * 2**20)\nprint(json.dumps({}))\n")
    with pytest.raises(UnreadableAttachmentError) as caught:
        child.run(greedy, [], b"", "bomb.bin", memory=200 * 2**20, seconds=30)
    assert caught.value.reason == "reading it needed more than 200 MiB of memory"


def test_a_child_that_crashes_is_a_clear_error(tmp_path: Path) -> None:
    crash = script(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    with pytest.raises(UnreadableAttachmentError) as caught:
        child.run(crash, [], b"", "a.png", memory=256 * 2**20, seconds=30)
    assert "the reader stopped" in caught.value.reason
    assert caught.value.path == "a.png"


def test_the_child_gets_none_of_the_parents_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECONDBRAIN_SECRET", "hunter2")
    env = script(tmp_path, "import os\nprint(json.dumps(sorted(os.environ)))\n")
    found = child.run(env, [], b"", "a.bin", memory=256 * 2**20, seconds=30)
    assert "SECONDBRAIN_SECRET" not in found


def test_with_every_slot_taken_a_call_waits_for_its_deadline_and_runs_no_child(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "ran"
    touch = script(tmp_path, f"open({str(marker)!r}, 'w').close()\nprint('{{}}')\n")
    for _ in range(child.SLOTS):
        assert child.slots.acquire(blocking=False)
    try:
        with pytest.raises(DeadlineError), deadline.Limit(0.2).active():
            child.run(touch, [], b"", "a.png", memory=256 * 2**20, seconds=30)
        with pytest.raises(UnreadableAttachmentError, match="other files are being read"):
            child.run(touch, [], b"", "a.png", memory=256 * 2**20, seconds=0.2)
        assert not marker.exists()
    finally:
        for _ in range(child.SLOTS):
            child.slots.release()
    child.run(touch, [], b"", "a.png", memory=256 * 2**20, seconds=30)
    assert marker.exists()


def test_the_index_waits_for_a_slot_however_long_it_takes(tmp_path: Path) -> None:
    echo = script(tmp_path, "print(json.dumps({'ran': True}))\n")
    found: list[object] = []

    def index_read() -> None:
        try:
            found.append(child.run(echo, [], b"", "a.pdf", memory=256 * 2**20, seconds=5,
                                   call_deadline=False))  # fmt: skip
        except UnreadableAttachmentError as exc:
            found.append(exc)

    for _ in range(child.SLOTS):
        assert child.slots.acquire(blocking=False)
    reader = threading.Thread(target=index_read)
    try:
        reader.start()
        reader.join(6.0)  # longer than its 5 s bound: a call would have given up by now
        assert found == []
    finally:
        for _ in range(child.SLOTS):
            child.slots.release()
    reader.join(30)
    assert found == [{"ran": True}]
