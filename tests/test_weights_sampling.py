"""The weights fingerprint of a large file samples blocks spread over the whole file (issue 42): a change in the
middle of a checkpoint, where a retrained tensor sits, gives another fingerprint. Fast: two 2 MiB files."""

from __future__ import annotations

from lmms_spatial.plugin import weights


def _checkpoint(folder, changed_at: int | None):
    folder.mkdir()
    data = bytearray(2 * 1024 * 1024 + weights.BLOCK_BYTES)  # over WHOLE_FILE_BYTES: sampled, not read whole
    if changed_at is not None:
        data[changed_at] = 1
    (folder / "model.bin").write_bytes(bytes(data))
    return str(folder)


def test_a_change_inside_a_middle_sampled_block_changes_the_fingerprint(tmp_path):
    # 64 blocks of 4096 bytes at 0, span/63, 2*span/63, ... with span = size - 4096 = 2 MiB: block 32 starts at
    # 2097152 * 32 // 63 = 1065220; a byte 10 into it is read
    base = weights.local(_checkpoint(tmp_path / "a", None))
    assert weights.local(_checkpoint(tmp_path / "b", 1065220 + 10)) != base
    assert weights.local(_checkpoint(tmp_path / "c", None)) == base  # same bytes elsewhere: same fingerprint


def test_the_last_block_ends_at_the_end_of_the_file(tmp_path):
    size = 2 * 1024 * 1024 + weights.BLOCK_BYTES
    base = weights.local(_checkpoint(tmp_path / "a", None))
    assert weights.local(_checkpoint(tmp_path / "b", size - 1)) != base
