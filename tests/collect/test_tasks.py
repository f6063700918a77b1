from __future__ import annotations

from pathlib import Path

from palaestra.collect.tasks import count_tasks, read_tasks


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text(text)
    return path


def test_bad_rows_name_line_and_field_and_keep_their_index(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "\n".join(
            [
                '{"responses_create_params": {"input": "hi"}}',
                "",
                "{not json",
                '{"other": 1}',
                '{"responses_create_params": {"input": [{"role": "user"}]}}',
                '{"responses_create_params": {"input": [{"role": "user", "content": "ok"}]}}',
                "[1, 2]",
            ]
        )
        + "\n",
    )
    lines = list(read_tasks(path))
    assert [t.index for t in lines] == [0, 1, 2, 3, 4, 5]
    assert [t.line for t in lines] == [1, 3, 4, 5, 6, 7]
    errors = {t.line: t.error for t in lines if t.error is not None}
    assert set(errors) == {3, 4, 5, 7}
    assert errors[3].describe().startswith(f"{path}:3: not valid JSON")
    assert errors[4].field == "responses_create_params"
    assert f"{path}:4: field 'responses_create_params'" in errors[4].describe()
    assert errors[5].field == "responses_create_params.input[0].content"
    assert "JSON object" in errors[7].reason
    assert lines[4].row["responses_create_params"]["input"][0]["content"] == "ok"


def test_limit_and_count(tmp_path: Path) -> None:
    row = '{"responses_create_params": {"input": "x"}}\n'
    path = write(tmp_path, row * 5 + "\n")
    assert count_tasks(path) == 5
    assert count_tasks(path, limit=3) == 3
    assert len(list(read_tasks(path, limit=2))) == 2


def test_reading_is_lazy(tmp_path: Path) -> None:
    path = write(tmp_path, '{"responses_create_params": {"input": "x"}}\n' * 3 + "{broken\n")
    iterator = read_tasks(path)
    first = next(iterator)
    assert first.error is None  # the broken last line has not been read yet
