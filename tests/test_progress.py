"""``lmms_spatial.progress``: tqdm bars with a total, silent when stderr is not a terminal."""

from __future__ import annotations

from lmms_spatial.progress import progress


def test_a_bar_has_its_total_and_stays_silent_off_a_terminal(capsys):
    with progress(range(5), total=5, desc="work", unit="row") as bar:
        assert sum(bar) == 10  # the items pass through unchanged
    assert (bar.total, bar.disable) == (5, True)  # pytest captures stderr: not a terminal
    assert capsys.readouterr().err == ""
