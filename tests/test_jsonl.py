"""The one JSON-lines reader (records, hits, cases, BEIR): typed errors naming the file or line, never text."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared_core import HitParseError, InputError
from shared_core.evaluation import load_cases, read_jsonl_records
from shared_core.model.jsonl import iter_jsonl, read_jsonl

SECRET_LINE = '{"body": "the door code is 4412"'  # broken JSON holding text that must not leak


def test_lines_are_numbered_and_blank_lines_skipped(tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl"
    f.write_text('{"a": 1}\n\n   \n{"b": 2}\n', encoding="utf-8")
    assert list(iter_jsonl(f)) == [(1, {"a": 1}), (4, {"b": 2})]
    assert read_jsonl(f) == read_jsonl_records(f) == [{"a": 1}, {"b": 2}]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (f"\n{SECRET_LINE}\n", "line 2: not valid JSON, column"),
        ("\n[1, 2]\n", "line 2: expected a JSON object, got list"),
    ],
)
def test_a_bad_line_is_named_by_number_never_by_text(tmp_path: Path, content: str, message: str) -> None:
    f = tmp_path / "r.jsonl"
    f.write_text(content, encoding="utf-8")
    for read in (read_jsonl, read_jsonl_records, load_cases):
        with pytest.raises(HitParseError, match=message) as err:
            read(f)
        assert "door code" not in str(err.value)


def test_an_unreadable_file_is_an_input_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="case file not found"):
        load_cases(tmp_path / "missing.jsonl")
    with pytest.raises(InputError, match="is a folder, not a file"):
        read_jsonl(tmp_path)
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes('{"a": 1}\n{"b": "caf\xe9"}\n'.encode("latin-1"))
    with pytest.raises(InputError, match="is not UTF-8 text"):
        read_jsonl(latin)
