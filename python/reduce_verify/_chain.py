"""Hash-chained JSON lines, the one format of the Trail and of the Recorder's manifest
(docs/audit.md, docs/DESIGN.md §12): each record is its compact JSON object with "chain"
appended last, the XXH3-128 of the previous record's chain (32 hex digits; GENESIS before the
first) followed by the record's own text without "chain". An edited, reordered or dropped
record breaks the link at the record after it. The command-line tool's reader is
verify/audit/chained_lines.h; this is the package's reader and writer, shared by trail.py and
recorder.py."""

import json
import os
import pathlib
from typing import IO, Any, Dict, List, Optional, Tuple, Union

from .errors import InputError
from .tensors import digest_bytes

GENESIS = "0" * 32  # the head before the first record
CHAIN_SUFFIX_LENGTH = len(',"chain":"') + 32 + len('"}')

Record = Dict[str, Any]


def chain_next(head: str, body: str) -> str:
    """The head after appending the record `body` (its JSON text without "chain"):
    XXH3-128 of the previous head's 32 hex digits followed by the body's bytes."""
    return digest_bytes(head.encode() + body.encode()).hex()


def chained_line(head: str, record: Record) -> Tuple[str, str]:
    """(line, new head): the record's compact JSON with its "chain" appended last."""
    body = json.dumps(record, separators=(",", ":"))
    chain = chain_next(head, body)
    return body[:-1] + f',"chain":"{chain}"}}', chain


class Chain:
    """A chained file as read: its records (without "chain") with their numbers (from 1),
    the head after the last complete one, heads[n] (the chain after record n) and ends[n]
    (the byte length of records 1 … n). A torn last line, still being written or cut by a
    crash, is left out; any other malformed line or broken link raises InputError naming
    file:record. `limit` stops after that many records (the rest is not read)."""

    def __init__(self, path: pathlib.Path, limit: Optional[int] = None):
        self.path = path
        self.records: List[Tuple[int, Record]] = []
        self.head = GENESIS
        self.heads = [GENESIS]
        self.ends = [0]
        data = path.read_bytes()
        at = 0
        while at < len(data) and (limit is None or len(self.records) < limit):
            newline = data.find(b"\n", at)
            line = data[at:] if newline < 0 else data[at:newline]
            number = len(self.records) + 1
            try:
                record, chain = self._record(line, number)
            except InputError:
                if newline >= 0 or number == 1:
                    raise
                break  # a torn last record
            self.records.append((number, record))
            self.head = chain
            self.heads.append(chain)
            at = len(data) if newline < 0 else newline + 1
            self.ends.append(at)

    def _record(self, line: bytes, number: int) -> Tuple[Record, str]:
        where = f"{self.path}:{number}"
        try:
            text = line.decode("ascii")
        except UnicodeDecodeError as error:
            raise InputError(f"{where}: not an ASCII line ({error})") from error
        suffix = text[-CHAIN_SUFFIX_LENGTH:]
        if len(text) <= CHAIN_SUFFIX_LENGTH or not suffix.startswith(',"chain":"') \
                or not suffix.endswith('"}'):
            raise InputError(f'{where}: does not end in ,"chain":"<32 hex digits>"}}')
        body, chain = text[:-CHAIN_SUFFIX_LENGTH] + "}", suffix[10:42]
        expected = chain_next(self.head, body)
        if chain != expected:
            raise InputError(f"{where}: the chain is broken: the record says {chain}, the "
                             f"records up to it give {expected}")
        try:
            record = json.loads(body)
        except ValueError as error:
            raise InputError(f"{where}: not JSON ({error})") from error
        if not isinstance(record, dict):
            raise InputError(f"{where}: not a JSON object")
        return record, chain


class ChainWriter:
    """Appends records to a chained file. Every rank of a run may keep the head (`head`, and
    the record count `records`): they all see the same records, so any rank's head resumes
    the chain; the writer's calls pass write=True, and write a whole line at a time,
    flushed."""

    def __init__(self, path: Union[str, "os.PathLike[str]"], head: str = GENESIS,
                 records: int = 0):
        self.path = pathlib.Path(path)
        self.head = head
        self.records = records
        self._file: Optional[IO[str]] = None

    def append(self, record: Record, write: bool = True) -> None:
        line, self.head = chained_line(self.head, record)
        self.records += 1
        if write:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = open(self.path, "a", encoding="ascii")
            self._file.write(line + "\n")  # one write a line: appended whole
            self._file.flush()

    def cut_after(self, records: int, head: str, write: bool = True) -> None:
        """Continues the chain after its record `records`, whose chain must be `head` (a
        checkpoint's): the writer's file is cut back to that record, records past it
        belonging to a run that was lost."""
        self.close()
        self.head, self.records = head, records
        if not write or records == 0:
            return
        if not self.path.is_file():
            raise InputError(f"{self.path}: nothing to resume (the checkpoint's chain head is "
                             f"{head})")
        chain = Chain(self.path, limit=records)
        if len(chain.records) < records:
            raise InputError(f"{self.path}: record {len(chain.records) + 1} is missing or torn; "
                             f"the checkpoint needs {records} records")
        if chain.heads[records] != head:
            raise InputError(f"{self.path}:{records}: its chain is not the checkpoint's head "
                             f"{head}: the file is not this run's")
        _truncate(self.path, chain.ends[records])

    def continue_file(self, kept: int, chain: Chain) -> None:
        """Continues `chain` (this file as read, by its writer) after its record `kept`, the
        records past it cut off (a closed file's end record, a torn last line)."""
        self.close()
        _truncate(self.path, chain.ends[kept])
        self.head, self.records = chain.heads[kept], kept

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _truncate(path: pathlib.Path, size: int) -> None:
    """Cuts the file to `size` bytes, ending its last kept record with a newline if it had
    none (a complete last line a crash left without one), so the next record starts a line."""
    with open(path, "rb+") as file:
        file.truncate(size)
        if size:
            file.seek(size - 1)
            if file.read(1) != b"\n":
                file.write(b"\n")
