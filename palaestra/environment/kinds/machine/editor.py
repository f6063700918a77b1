"""A file editor over a machine's work dir, with the ``str_replace_editor`` conventions.

The command set agents trained with SWE-agent and OpenHands know: ``view`` (a file as
``cat -n`` prints it, optionally a line range; a directory two levels deep), ``create``
(never over an existing file), ``str_replace`` (the old text must occur exactly once),
``insert`` (after a line number; 0 is the top) and ``undo_edit``.

It works on the host side, directly on the work dir, and the work dir is written by
untrusted code: every path is walked one component at a time from the work dir's own
descriptor with ``O_NOFOLLOW``, so a symbolic link anywhere in it (or ``..``, or a path
outside the work dir) is refused, never followed with the host's privileges. Files it
creates belong to the sandbox's uid, as if the shell had made them.

Over a box (``palaestra.sandbox.machines``) the editor's root is the box's whole file system
(``inside`` is ``/``), relative paths start from the image's workdir (``relative_to``) and
new files belong to the image's user and group.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
from collections.abc import Iterator
from pathlib import Path

from palaestra.errors import ToolError

MAX_FILE_BYTES = 4 * 1024 * 1024
"""The largest file the editor reads or edits."""
VIEW_CHARS = 16_000
"""The most characters of a file ``view`` shows; a longer view is cut and says where."""
LIST_ENTRIES = 300
SNIPPET_LINES = 4
UNDO_DEPTH = 10

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Editor:
    """Edits files under ``root`` (host path), named as the sandbox sees them (``inside``)."""

    def __init__(
        self,
        root: Path,
        inside: str,
        *,
        owner: int | None = None,
        group: int | None = None,
        relative_to: str | None = None,
    ) -> None:
        self.root = root
        self.inside = inside.rstrip("/") or "/"
        self.owner = owner
        self.group: int = (owner if group is None else group) or 0
        self.relative_to = relative_to or self.inside
        self._history: dict[str, list[bytes]] = {}

    def view(self, path: str, view_range: list[int] | None = None) -> str:
        shown, parts = self._resolve(path)
        with self._parent(parts, shown) as parent:
            name = parts[-1] if parts else None
            if name is None or _is_directory(parent, name):
                if view_range is not None:
                    raise ToolError("view_range is for files, not directories")
                return self._listing(parent if name is None else None, parts, shown)
            text = self._read(parent, name, shown)
        lines = _lines(text)
        first, last = 1, len(lines)
        if view_range is not None:
            first, last = _range(view_range, len(lines))
        body, cut = _numbered(lines[first - 1 : last], first, VIEW_CHARS)
        header = f"Here's the result of running `cat -n` on {shown}:"
        if cut is not None:
            body += (
                f"\n[... view cut at line {cut} of {len(lines)}: "
                "ask for a view_range to see more ...]"
            )
        return f"{header}\n{body}"

    def create(self, path: str, file_text: str) -> str:
        shown, parts = self._resolve(path)
        if not parts:
            raise ToolError(f"{shown} is the work dir itself, not a file")
        with self._parent(parts, shown, make=True) as parent:
            data = file_text.encode()
            try:
                fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                             0o644, dir_fd=parent)  # fmt: skip
            except FileExistsError:
                raise ToolError(
                    f"File already exists at: {shown}. Cannot overwrite files using command "
                    "`create`: edit it with `str_replace` or `insert`."
                ) from None
            except OSError as error:
                raise ToolError(f"cannot create {shown}: {error.strerror}") from None
            try:
                if self.owner is not None:
                    os.fchown(fd, self.owner, self.group)
                _write_all(fd, data)
            finally:
                os.close(fd)
        self._history.setdefault(shown, []).append(b"")  # undo of a create empties it
        return f"File created successfully at: {shown}"

    def str_replace(self, path: str, old_str: str, new_str: str = "") -> str:
        if not old_str:
            raise ToolError("old_str must not be empty")
        shown, parts = self._file(path)
        with self._parent(parts, shown) as parent:
            text = self._read(parent, parts[-1], shown)
            count = text.count(old_str)
            if count == 0:
                raise ToolError(
                    f"No replacement was performed: old_str did not appear verbatim in {shown}."
                )
            if count > 1:
                starts = _occurrence_lines(text, old_str)
                raise ToolError(
                    f"No replacement was performed: old_str occurs {count} times in {shown} "
                    f"(starting on lines {', '.join(map(str, starts))}). Include more lines "
                    "around it so that it occurs exactly once."
                )
            at = text.index(old_str)
            edited = text[:at] + new_str + text[at + len(old_str) :]
            self._write(parent, parts[-1], shown, text, edited)
        first = text[:at].count("\n") + 1
        return _edited(shown, edited, first, first + new_str.count("\n"))

    def insert(self, path: str, insert_line: int, new_str: str) -> str:
        shown, parts = self._file(path)
        with self._parent(parts, shown) as parent:
            text = self._read(parent, parts[-1], shown)
            lines = text.split("\n")
            count = len(_lines(text))
            if not 0 <= insert_line <= count:
                raise ToolError(
                    f"insert_line {insert_line} is out of range: {shown} has {count} lines "
                    f"(0 inserts at the top, {count} at the end)"
                )
            added = new_str.split("\n")
            if new_str.endswith("\n"):
                added.pop()
            if not text:
                lines = []
            edited = "\n".join(lines[:insert_line] + added + lines[insert_line:])
            if not text:
                edited += "\n"
            self._write(parent, parts[-1], shown, text, edited)
        return _edited(shown, edited, insert_line + 1, insert_line + len(added))

    def undo_edit(self, path: str) -> str:
        shown, parts = self._file(path)
        history = self._history.get(shown)
        if not history:
            raise ToolError(f"No edit of {shown} to undo.")
        with self._parent(parts, shown) as parent:
            text = self._read(parent, parts[-1], shown)
            previous = history.pop().decode()
            self._write(parent, parts[-1], shown, text, previous, record=False)
        body, _ = _numbered(_lines(previous), 1, VIEW_CHARS)
        return f"Last edit to {shown} undone successfully. Here's the file now:\n{body}"

    def _resolve(self, path: str) -> tuple[str, list[str]]:
        """The path as shown to the model, and its components below the work dir."""
        if not path.strip():
            raise ToolError("path is empty")
        if "\0" in path:
            raise ToolError("path contains a NUL byte")
        joined = path if path.startswith("/") else posixpath.join(self.relative_to, path)
        normal = posixpath.normpath(joined)
        if normal.startswith("//"):
            normal = normal[1:]
        if normal != self.inside and not normal.startswith(self.inside.rstrip("/") + "/"):
            raise ToolError(f"{path} is outside the work dir {self.inside}: refused")
        relative = normal[len(self.inside) :].strip("/")
        return normal, [part for part in relative.split("/") if part]

    def _file(self, path: str) -> tuple[str, list[str]]:
        shown, parts = self._resolve(path)
        if not parts:
            raise ToolError(f"{shown} is a directory, not a file")
        return shown, parts

    @contextlib.contextmanager
    def _parent(self, parts: list[str], shown: str, *, make: bool = False) -> Iterator[int]:
        """A descriptor of the directory holding ``parts[-1]`` (of the work dir itself
        when ``parts`` is empty), reached without following any link."""
        fd = os.open(self.root, _DIRECTORY)
        try:
            for part in parts[:-1]:
                if make:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=fd)
                        if self.owner is not None:
                            os.chown(part, self.owner, self.group, dir_fd=fd)
                try:
                    child = os.open(part, _DIRECTORY, dir_fd=fd)
                except OSError as error:
                    raise ToolError(_refusal(shown, part, error, fd)) from None
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    def _read(self, parent: int, name: str, shown: str) -> str:
        fd = _open_regular(parent, name, shown, os.O_RDONLY)
        try:
            info = os.fstat(fd)
            if info.st_size > MAX_FILE_BYTES:
                raise ToolError(
                    f"{shown} is {info.st_size} bytes, over the editor's {MAX_FILE_BYTES} "
                    "bytes: look at it with the shell (head, sed -n, grep)"
                )
            data = b""
            while chunk := os.read(fd, 1 << 20):
                data += chunk
        finally:
            os.close(fd)
        try:
            return data.decode()
        except UnicodeDecodeError:
            raise ToolError(f"{shown} is not UTF-8 text: look at it with the shell") from None

    def _write(
        self, parent: int, name: str, shown: str, old: str, new: str, *, record: bool = True
    ) -> None:
        fd = _open_regular(parent, name, shown, os.O_WRONLY)
        try:
            if os.fstat(fd).st_nlink > 1:
                raise ToolError(f"{shown} is not a regular file with one name: not edited")
            os.ftruncate(fd, 0)
            _write_all(fd, new.encode())
        finally:
            os.close(fd)
        if record:
            history = self._history.setdefault(shown, [])
            history.append(old.encode())
            del history[:-UNDO_DEPTH]

    def _listing(self, parent: int | None, parts: list[str], shown: str) -> str:
        """Files and directories up to two levels below ``shown``, hidden ones left out."""
        with contextlib.ExitStack() as stack:
            if parent is None:  # a directory below the work dir: open it, links refused
                holder = stack.enter_context(self._parent([*parts, ""], shown))
            else:
                holder = parent
            entries: list[str] = []
            total = 0
            for entry, is_dir in _entries(holder):
                total += 1
                if len(entries) < LIST_ENTRIES:
                    entries.append(f"{shown.rstrip('/')}/{entry}{'/' if is_dir else ''}")
                if is_dir:
                    try:
                        below = os.open(entry, _DIRECTORY, dir_fd=holder)
                    except OSError:
                        continue
                    try:
                        for child, child_dir in _entries(below):
                            total += 1
                            if len(entries) < LIST_ENTRIES:
                                name = f"{shown.rstrip('/')}/{entry}/{child}"
                                entries.append(name + ("/" if child_dir else ""))
                    finally:
                        os.close(below)
        header = (
            f"Here's the files and directories up to 2 levels deep in {shown}, "
            "excluding hidden items:"
        )
        lines = [header, f"{shown}", *entries] if entries else [header, "(empty)"]
        if total > len(entries):
            lines.append(f"[... {total - len(entries)} more entries not shown ...]")
        return "\n".join(lines)


def _entries(directory: int) -> list[tuple[str, bool]]:
    """Visible entries of an open directory, sorted: (name, is a real directory)."""
    with os.scandir(directory) as scan:
        found = [
            (entry.name, entry.is_dir(follow_symlinks=False))
            for entry in scan
            if not entry.name.startswith(".")
        ]
    return sorted(found)


def _open_regular(parent: int, name: str, shown: str, mode: int) -> int:
    """``name`` in the directory ``parent`` opened for ``mode``, refused (a ``ToolError``)
    unless it is a regular file.

    The type is checked before the file is opened: an ``O_PATH`` descriptor names the inode
    without opening it (a FIFO's writer is not woken, a device's driver is not called), and
    only a regular file is then opened, through that descriptor (``/proc/self/fd``), so the
    inode checked is the one opened even if the box swaps the name meanwhile; ``O_NONBLOCK``
    besides, and the name itself is never followed if it is a link."""
    try:
        handle = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except OSError as error:
        raise ToolError(_refusal(shown, name, error, parent)) from None
    try:
        kind = os.fstat(handle).st_mode
        if stat.S_ISLNK(kind):
            raise ToolError(
                f"{shown}: '{name}' is a symbolic link; the editor does not follow links"
            )
        if not stat.S_ISREG(kind):
            raise ToolError(
                f"{shown} is {_kind(kind)}, not a regular file: the editor opens only regular files"
            )
        try:
            return os.open(
                f"/proc/self/fd/{handle}", mode | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
            )
        except OSError as error:
            raise ToolError(f"{shown}: {error.strerror}") from None
    finally:
        os.close(handle)


def _kind(mode: int) -> str:
    """What a non-regular file is, for a refusal."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    return next((name for test, name in kinds if test(mode)), "not a file")


def _is_directory(parent: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _refusal(shown: str, part: str, error: OSError, parent: int) -> str:
    """One line on why ``part`` (in the directory ``parent``) could not be opened."""
    with contextlib.suppress(OSError):
        if stat.S_ISLNK(os.stat(part, dir_fd=parent, follow_symlinks=False).st_mode):
            return f"{shown}: '{part}' is a symbolic link; the editor does not follow links"
    if error.errno == errno.ENOENT:
        return f"{shown} does not exist"
    if error.errno == errno.ENOTDIR:
        return f"{shown}: '{part}' is not a directory"
    return f"{shown}: {error.strerror}"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _lines(text: str) -> list[str]:
    """The lines of ``text`` as ``cat -n`` numbers them (a final newline ends a line)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _range(view_range: list[int], count: int) -> tuple[int, int]:
    if len(view_range) != 2:
        raise ToolError("view_range must be two numbers: [first line, last line] (-1: the end)")
    first, last = view_range
    if last == -1:
        last = count
    if not 1 <= first <= max(count, 1) or last < first or last > count:
        raise ToolError(
            f"view_range {view_range} is out of range: the file has {count} lines "
            "(lines count from 1; -1 as the last number means the end)"
        )
    return first, last


def _numbered(lines: list[str], first: int, limit: int) -> tuple[str, int | None]:
    """``cat -n`` of ``lines`` numbered from ``first``, cut at ``limit`` characters (and
    the last line number shown, when cut)."""
    out: list[str] = []
    size = 0
    for number, line in enumerate(lines, first):
        row = f"{number:6}\t{line}"
        if size + len(row) + 1 > limit and out:
            return "\n".join(out), number - 1
        out.append(row)
        size += len(row) + 1
    return "\n".join(out), None


def _occurrence_lines(text: str, old: str) -> list[int]:
    starts: list[int] = []
    at = text.find(old)
    while at != -1 and len(starts) < 20:
        starts.append(text[:at].count("\n") + 1)
        at = text.find(old, at + 1)
    return starts


def _edited(shown: str, text: str, first: int, last: int) -> str:
    """The confirmation of an edit: a numbered snippet around the changed lines."""
    lines = _lines(text)
    start = max(1, first - SNIPPET_LINES)
    end = min(len(lines), max(last, first) + SNIPPET_LINES)
    body, _ = _numbered(lines[start - 1 : end], start, VIEW_CHARS)
    return (
        f"The file {shown} has been edited. Here's the result of running `cat -n` on a "
        f"snippet of {shown}:\n{body}\n"
        "Review the changes and make sure they are as expected. Edit the file again if necessary."
    )
