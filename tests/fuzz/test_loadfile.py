"""dbench load files as hostile input: the engine's parser (crates/engine/src/workload/replay/parse.rs),
reached as `fsmeter run dbench-quick --set loadfile=F` reaches it, turns any bytes into a load file or one
`fsmeter: error:` line naming the file and line: never a panic, another exception or a hang."""

from __future__ import annotations

from pathlib import Path

from fsmeter.engine import EngineSession
from fsmeter.spec import build_job, load_workload
from fuzz_common import FAST, SLOW, mutate, result_or_user_error
from hypothesis import given
from hypothesis import strategies as st

SEED = """Deltree "\\clients\\client1" NT_STATUS_OK
Mkdir "\\clients" NT_STATUS_OK
NTCreateX "\\clients\\client1" 0x1 0x2 16385 NT_STATUS_OK
Close 16385 NT_STATUS_OK
NTCreateX "\\clients\\client1\\mixfile" 0x40 0x1 9935 NT_STATUS_OBJECT_NAME_NOT_FOUND
QUERY_PATH_INFORMATION "\\clients\\client1\\~dmtmp" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND
FIND_FIRST "\\clients\\client1\\FILLER.*" 260 1366 0 NT_STATUS_NO_SUCH_FILE
NTCreateX "\\clients\\client1\\filler.000" 0x40 0x2 9938 NT_STATUS_OK
QUERY_FS_INFORMATION 1 NT_STATUS_OK
WriteX 9938 65534 1 1 NT_STATUS_OK
QUERY_FILE_INFORMATION 9938 258 NT_STATUS_OK
ReadX 9938 0 65536 65536 NT_STATUS_OK
LockX 9938 0 1 NT_STATUS_OK
UnlockX 9938 0 1 NT_STATUS_OK
Flush 9938 NT_STATUS_OK
Rename "\\clients\\client1\\filler.000" "\\clients\\client1\\filler.001" NT_STATUS_OK
Unlink "\\clients\\client1\\filler.001" 0x6 NT_STATUS_OK
Close 9938 NT_STATUS_OK
"""


def open_load_file(directory: Path, data: bytes):
    """Validate the job and open the engine session, which reads and checks the load file."""
    lf = directory / "load.txt"
    lf.write_bytes(data)
    job = build_job(load_workload("dbench-quick"), directory, {"loadfile": str(lf), "passes": 1})
    return EngineSession(job.engine_json()).phases()


def test_the_seed_is_a_load_file(tmp_path):
    assert "run" in open_load_file(tmp_path, SEED.encode())


@SLOW
@given(st.randoms(use_true_random=False), st.integers(1, 8))
def test_mutated_load_files_load_or_fail_in_one_line(tmp_path, rnd, edits):
    data = mutate(SEED, rnd, edits).encode("utf-8", "surrogateescape")
    result_or_user_error(open_load_file, tmp_path, data)


@FAST
@given(st.binary(max_size=300))
def test_any_bytes_load_or_fail_in_one_line(tmp_path, data):
    result_or_user_error(open_load_file, tmp_path, data)


_token = st.one_of(
    st.sampled_from(
        [
            "NTCreateX",
            "Close",
            "ReadX",
            "WriteX",
            "Rename",
            "Unlink",
            "Deltree",
            "LockX",
            "Find",
            "NT_STATUS_OK",
            "ERROR",
            "SUCCESS",
            "0x0",
            "0xffffffffffffffff1",
            "-1",
            "18446744073709551616",
            "99999999999999999999",
            '"\\a"',
            '"',
            "\\",
            "#",
        ]
    ),
    st.integers(-(1 << 70), 1 << 70).map(str),
    st.text(max_size=6),
)


@FAST
@given(st.lists(st.lists(_token, max_size=7).map(" ".join), min_size=1, max_size=8))
def test_lines_of_hostile_tokens_load_or_fail_naming_the_line(tmp_path, lines):
    data = "\n".join(lines).encode("utf-8", "surrogateescape")
    _, err = result_or_user_error(open_load_file, tmp_path, data)
    if err is not None:
        assert "load.txt" in err.message or "loadfile" in err.message


def test_non_utf8_paths_are_bytes_not_an_error(tmp_path):
    data = SEED.encode().replace(b"mixfile", b"mix\xff\xfefile")
    assert "run" in open_load_file(tmp_path, data)
