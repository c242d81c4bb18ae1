"""The commit a result is stamped with."""

from reorder.base import provenance


def test_the_commit_a_run_names_wins_over_git(monkeypatch) -> None:
    monkeypatch.setenv("REORDER_COMMIT", "abc1234")
    assert provenance.commit() == "abc1234"


def test_without_a_name_git_or_the_commit_file_answers(monkeypatch) -> None:
    monkeypatch.delenv("REORDER_COMMIT", raising=False)
    assert provenance.commit() not in ("", "abc1234")
