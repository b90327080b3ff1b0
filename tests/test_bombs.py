"""Bounded reading: decompression bombs, huge tables and hostile JSON of every format (issue 17).

Every case is refused through the API with the right exception and through the CLI with
exit 2 and one line. Most use a small cap (``max_input_bytes`` / ``JAGGED_MAX_INPUT_BYTES``)
so they stay cheap; two realistic bombs run against the default cap in a subprocess whose
peak RSS is measured.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from clitools import assert_bad_input, run_cli

import jagged
from jagged.readers import items as items_module
from jagged.readers import limits
from jagged.readers.limits import InputTooLargeError

KIB, MIB, GIB = 1024, 1024 ** 2, 1024 ** 3
CAP = 64 * KIB  # the small cap of the cheap tests
CAP_TEXT = "64 KiB, the input cap (65,536 bytes)"
RAISE_HINT = "JAGGED_MAX_INPUT_BYTES"


def bad_via_cli(path: Path, monkeypatch, *fragments: str, cap: int | None = CAP) -> str:
    """``jagged metrics PATH`` under the cap: exit 2, one line holding every fragment."""
    if cap is not None:
        monkeypatch.setenv(limits.ENV_VAR, str(cap))
    try:
        return assert_bad_input("metrics", path, fragments=fragments)
    finally:
        monkeypatch.delenv(limits.ENV_VAR, raising=False)


# --- Inspect .eval archives ----------------------------------------------------------------

def zip_archive(members: list[tuple[str, int, bytes, int, int]]) -> bytes:
    """A zip file from (name, method, compressed bytes, CRC-32, recorded size) -- any method, any size claimed."""
    out, central = bytearray(), bytearray()
    for name, method, data, crc, size in members:
        encoded, offset = name.encode(), len(out)
        out += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 63, 0, method, 0, 0x21, crc, len(data), size,
                           len(encoded), 0) + encoded + data
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 63, 63, 0, method, 0, 0x21, crc, len(data),
                               size, len(encoded), 0, 0, 0, 0, 0, offset) + encoded
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), len(out), 0)
    return bytes(out + central + end)


HEADER = json.dumps({"version": 2, "status": "success", "eval": {"task": "quiz", "model": "m/x", "created":
                                                                  "2025-01-01T00:00:00+00:00"},
                     "results": {"scores": []}}).encode()


def sample_json(sid: int, padding: int = 0) -> bytes:
    return json.dumps({"id": sid, "epoch": 1, "scores": {"match": {"value": "C"}},
                       "metadata": {"pad": "x" * padding}}).encode()


def zstd_member(name: str, data: bytes, *, recorded: int | None = None) -> tuple[str, int, bytes, int, int]:
    return (name, 93, zstandard.ZstdCompressor().compress(data), zlib.crc32(data),
            len(data) if recorded is None else recorded)


def deflate_member(name: str, data: bytes) -> tuple[str, int, bytes, int, int]:
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    return name, 8, packer.compress(data) + packer.flush(), zlib.crc32(data), len(data)


def write_eval(path: Path, members: list[tuple[str, int, bytes, int, int]]) -> Path:
    path.write_bytes(zip_archive([zstd_member("header.json", HEADER), *members]))
    return path


def test_a_small_archive_reads(tmp_path):
    """The hand-made archives are valid: zstd and deflate members under the cap read as usual."""
    path = write_eval(tmp_path / "ok.eval", [zstd_member("samples/1_epoch_1.json", sample_json(1)),
                                             deflate_member("samples/2_epoch_1.json", sample_json(2))])
    dataset = jagged.load(path, max_input_bytes=CAP)
    assert dataset.scores["score"].tolist() == [1.0] and dataset.scores["n_items"].tolist() == [2]


@pytest.mark.parametrize("kind", ["zstd", "deflate"])
def test_member_beyond_the_cap(tmp_path, monkeypatch, kind):
    big = sample_json(1, padding=4 * CAP)  # compresses to about 300 bytes
    member = (zstd_member if kind == "zstd" else deflate_member)("samples/1_epoch_1.json", big)
    path = write_eval(tmp_path / f"{kind}.eval", [member])
    assert path.stat().st_size < 1000
    with pytest.raises(InputTooLargeError) as info:
        jagged.load(path, max_input_bytes=CAP)
    assert str(info.value).startswith(f"{kind}.eval: member samples/1_epoch_1.json is recorded as more than {CAP_TEXT}")
    bad_via_cli(path, monkeypatch, f"{kind}.eval: member samples/1_epoch_1.json", CAP_TEXT, RAISE_HINT)
    assert jagged.load(path, max_input_bytes=8 * CAP).scores["n_items"].tolist() == [1]  # raised: read


def test_member_whose_recorded_size_lies_stops_at_it(tmp_path, monkeypatch):
    """A zstd member recording 100 bytes (and whose frame claims nothing) is decompressed only to byte 101."""
    big = sample_json(1, padding=50 * MIB)
    name, method, data, crc, _ = zstd_member("samples/1_epoch_1.json", big)
    path = write_eval(tmp_path / "liar.eval", [(name, method, data, crc, 100)])
    with pytest.raises(jagged.JaggedInputError, match="expands to more than the 100 bytes the archive records"):
        jagged.load(path)
    bad_via_cli(path, monkeypatch, "liar.eval: member samples/1_epoch_1.json cannot be read", cap=None)


def test_several_members_count_together(tmp_path, monkeypatch):
    """Members each under the cap are refused once the archive's members together pass it."""
    members = [zstd_member(f"samples/{i}_epoch_1.json", sample_json(i, padding=CAP // 3)) for i in range(1, 6)]
    path = write_eval(tmp_path / "many.eval", members)
    with pytest.raises(InputTooLargeError, match=r"many.eval: the members up to samples/3_epoch_1.json are recorded "
                                                 r"as more than 64 KiB"):
        jagged.load(path, max_input_bytes=CAP)
    bad_via_cli(path, monkeypatch, "many.eval: the members up to samples/3_epoch_1.json", CAP_TEXT)
    assert jagged.load(path, max_input_bytes=4 * CAP).scores["n_items"].tolist() == [5]


def test_archive_budget_refuses_before_decompressing(tmp_path):
    """A member that would take the archive's members past the cap is refused before it is decompressed."""
    data = b"x" * (3 * MIB)
    path = tmp_path / "raw.zip"
    path.write_bytes(zip_archive([zstd_member("m", data)]))
    from jagged.readers.files import read_member
    from jagged.readers.limits import Budget

    with zipfile.ZipFile(path) as archive:
        budget = Budget("raw.zip", cap=4 * MIB)
        budget.used = 2 * MIB  # earlier members: the recorded 3 MiB is refused before decompressing
        with pytest.raises(InputTooLargeError, match="the members up to m are recorded as"):
            read_member(archive, "m", path, budget)
        assert read_member(archive, "m", path, Budget("raw.zip", cap=4 * MIB)) == data


# --- gzip CSV -------------------------------------------------------------------------------

def long_csv(rows: int) -> bytes:
    domains = np.arange(rows) % 50
    models = np.arange(rows) // 50
    lines = [f"model-{m},domain-{d},0.{(m * 7 + d) % 90 + 10}" for m, d in zip(models, domains)]
    return ("model,domain,score\n" + "\n".join(lines) + "\n").encode()


def test_gzip_csv_bomb(tmp_path, monkeypatch):
    text = long_csv(20_000)
    path = tmp_path / "scores.csv.gz"
    path.write_bytes(gzip.compress(text, 9))
    assert len(text) > 6 * CAP
    with pytest.raises(InputTooLargeError) as info:
        jagged.load(path, max_input_bytes=CAP)
    assert str(info.value).startswith(f"scores.csv.gz expands to more than {CAP_TEXT}")
    bad_via_cli(path, monkeypatch, "scores.csv.gz expands to more than", CAP_TEXT, RAISE_HINT)
    # raised (argument, then environment): the same file is read, and equals the plain CSV
    raised = jagged.load(path, max_input_bytes=len(text)).scores
    monkeypatch.setenv(limits.ENV_VAR, f"{len(text) // KIB + 1}K")
    from_env = jagged.load(path).scores
    plain = tmp_path / "scores.csv"
    plain.write_bytes(text)
    pd.testing.assert_frame_equal(raised, from_env)
    pd.testing.assert_frame_equal(raised, jagged.load(plain).scores)
    assert len(raised) == 20_000


def test_plain_file_beyond_the_cap(tmp_path, monkeypatch):
    path = tmp_path / "scores.csv"
    path.write_bytes(long_csv(5_000))
    with pytest.raises(InputTooLargeError, match=re.escape(f"scores.csv is more than {CAP_TEXT}")):
        jagged.load(path, max_input_bytes=CAP)
    bad_via_cli(path, monkeypatch, "scores.csv is more than", CAP_TEXT)


def test_gzip_beyond_the_keep_budget_is_read_twice_and_equal(tmp_path, monkeypatch):
    """Past KEEP_BYTES the output is counted, dropped and decompressed again: the same table."""
    text = long_csv(3_000)
    path = tmp_path / "s.csv.gz"
    path.write_bytes(gzip.compress(text))
    monkeypatch.setattr(limits, "KEEP_BYTES", 1000)
    assert limits.gunzip_file(path) == text


# --- Parquet ---------------------------------------------------------------------------------

def repeated_rows(path: Path, rows: int, *, items: bool = False, row_group_size: int | None = None) -> Path:
    """Rows of the same values: a small file that decodes to many bytes."""
    columns = {"model": pa.array(["model-a"] * rows), "domain": pa.array(["algebra"] * rows)}
    if items:
        columns["item"] = pa.array(np.arange(rows))
        columns["correct"] = pa.array(np.ones(rows, dtype=np.int8))
    else:
        columns["score"] = pa.array(np.full(rows, 0.5))
    pq.write_table(pa.table(columns), path, row_group_size=row_group_size)
    return path


def test_parquet_of_repeated_rows(tmp_path, monkeypatch):
    path = repeated_rows(tmp_path / "rows.parquet", 2_000_000)
    assert path.stat().st_size < 200 * KIB
    with pytest.raises(InputTooLargeError) as info:  # by the footer: 2M rows of at least 16 bytes, before any scan
        jagged.load(path, max_input_bytes=MIB)
    assert str(info.value).startswith("rows.parquet (2,000,000 rows in 1 Parquet file(s), by their footers) decodes "
                                      "to more than 1 MiB, the input cap")
    # 200,000 strings of 1,000 characters: the footer counts their offsets (3.2 MB in all), decoding finds 200 MB
    n = 200_000
    model = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array(["m" * 1000]))
    pq.write_table(pa.table({"model": model, "domain": pa.array(["d"] * n), "score": pa.array(np.full(n, 0.5))}),
                   path := tmp_path / "long.parquet", store_schema=False)  # read back as plain strings
    with pytest.raises(InputTooLargeError) as info:
        jagged.load(path, max_input_bytes=8 * MIB)
    message = str(info.value)
    assert message.startswith("long.parquet (decoded, ") and "expands to more than 8 MiB, the input cap" in message
    assert int(message.split("decoded, ")[1].split(" rows")[0].replace(",", "")) < n  # stopped early
    bad_via_cli(path, monkeypatch, "long.parquet (decoded, ", "8 MiB, the input cap", cap=8 * MIB)


def test_parquet_within_a_raised_cap_equals_pandas(tmp_path):
    path = repeated_rows(tmp_path / "items.parquet", 30_000, items=True)
    with pytest.raises(InputTooLargeError):
        jagged.load(path, max_input_bytes=100 * KIB)
    dataset = jagged.load(path, max_input_bytes=10 * MIB)
    assert dataset.scores[["score", "n_items"]].values.tolist() == [[1.0, 30_000.0]]
    pd.testing.assert_frame_equal(dataset.items.reset_index(drop=True),
                                  jagged.load(path).items.reset_index(drop=True))


def test_parquet_scan_counts_rows_and_bytes(tmp_path, monkeypatch):
    """Actual rows and Arrow bytes, against an independent count; kept batches rebuild the same frame."""
    path = repeated_rows(tmp_path / "r.parquet", 200_000, row_group_size=50_000)
    from jagged.readers.files import read_parquet, scan_parquet

    table = pq.read_table(path)
    scan = scan_parquet(path)
    assert scan.rows == 200_000
    assert scan.nbytes == pytest.approx(table.nbytes, rel=0.01)
    assert scan.batches is not None
    dropped = scan_parquet(path, keep_bytes=10_000)
    assert dropped.batches is None and dropped.rows == 200_000 and dropped.nbytes == scan.nbytes
    pd.testing.assert_frame_equal(read_parquet(path, dropped), pd.read_parquet(path))


# Parquet footer: a minimal Thrift compact-protocol walker to rewrite FileMetaData.num_rows (field 3)
# and each RowGroup.num_rows (FileMetaData field 4, RowGroup field 3) in place, same byte length.

def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _skip(buf: bytes, pos: int, ftype: int) -> int:
    if ftype in (1, 2):  # bool true / false: in the field header
        return pos
    if ftype == 3:
        return pos + 1
    if ftype in (4, 5, 6):
        return _varint(buf, pos)[1]
    if ftype == 7:
        return pos + 8
    if ftype == 8:
        n, pos = _varint(buf, pos)
        return pos + n
    if ftype in (9, 10):
        head = buf[pos]
        pos += 1
        n, etype = head >> 4, head & 0x0F
        if n == 15:
            n, pos = _varint(buf, pos)
        for _ in range(n):
            pos = _skip(buf, pos, etype)
        return pos
    if ftype == 12:
        return _struct(buf, pos, lambda *a: None)
    raise ValueError(f"thrift type {ftype}")


def _struct(buf: bytes, pos: int, visit, path: tuple[int, ...] = ()) -> int:
    last = 0
    while True:
        head = buf[pos]
        pos += 1
        if head == 0:
            return pos
        delta, ftype = head >> 4, head & 0x0F
        if delta:
            field = last + delta
        else:
            raw, pos = _varint(buf, pos)
            field = (raw >> 1) ^ -(raw & 1)
        last = field
        visit(path + (field,), ftype, pos)
        if ftype == 9 and path + (field,) == (4,):  # row_groups: into each RowGroup
            head = buf[pos]
            pos += 1
            n = head >> 4
            if n == 15:
                n, pos = _varint(buf, pos)
            for index in range(n):
                pos = _struct(buf, pos, visit, (4, index))
        else:
            pos = _skip(buf, pos, ftype)


def set_footer_rows(data: bytes, rows: int, *, row_groups: bool = False) -> bytes:
    """A Parquet file whose footer declares ``rows`` rows (and each row group too, if asked)."""
    length = struct.unpack("<I", data[-8:-4])[0]
    start = len(data) - 8 - length
    footer = bytearray(data[start:-8])
    spots: list[int] = []

    def visit(path, ftype, pos):
        if ftype == 6 and (path == (3,) or (row_groups and len(path) == 3 and path[0] == 4 and path[2] == 3)):
            spots.append(pos)

    _struct(bytes(footer), 0, visit)
    assert spots
    for pos in spots:
        end = _varint(bytes(footer), pos)[1]
        zigzag, encoded = rows * 2, bytearray()
        for i in range(end - pos):  # the same width: a non-canonical varint, as Thrift allows
            encoded.append((zigzag & 0x7F) | (0x80 if i < end - pos - 1 else 0))
            zigzag >>= 7
        assert zigzag == 0
        footer[pos:end] = encoded
    return data[:start] + bytes(footer) + data[-8:]


def test_footer_editor_makes_declared_less_than_actual(tmp_path):
    path = repeated_rows(tmp_path / "e.parquet", 400, items=True, row_group_size=100)
    path.write_bytes(set_footer_rows(path.read_bytes(), 10))
    meta = pq.read_metadata(path)
    assert meta.num_rows == 10 and [meta.row_group(i).num_rows for i in range(4)] == [100] * 4
    assert len(pd.read_parquet(path)) == 400  # what a reader actually gets


def test_edited_footer_does_not_skip_the_out_of_core_path(tmp_path, monkeypatch):
    path = repeated_rows(tmp_path / "edited.parquet", 400, items=True, row_group_size=100)
    path.write_bytes(set_footer_rows(path.read_bytes(), 10))
    monkeypatch.setattr(items_module, "IN_MEMORY_MAX_ROWS", 50)  # declared 10 < 50 < 400 actual
    import jagged.readers.tables as loaders

    def fail(*args, **kwargs):
        raise AssertionError("read into memory: the footer's 10 rows were believed")

    monkeypatch.setattr(loaders, "read_parquet", fail)
    dataset = jagged.load(path)
    assert dataset.items is None and "aggregated out of core" in dataset.details["items"]
    assert dataset.scores["n_items"].tolist() == [400]


def test_edited_footer_bomb_is_refused_on_its_actual_rows(tmp_path, monkeypatch):
    path = repeated_rows(tmp_path / "edited.parquet", 1_000_000, row_group_size=250_000)
    path.write_bytes(set_footer_rows(path.read_bytes(), 10))
    assert pq.read_metadata(path).num_rows == 10
    with pytest.raises(InputTooLargeError, match=r"edited.parquet \(1,000,000 rows in 1 Parquet file\(s\), by their "
                                                 r"footers\) decodes"):  # the row groups' counts, not the total
        jagged.load(path, max_input_bytes=MIB)
    bad_via_cli(path, monkeypatch, "edited.parquet (1,000,000 rows", "1 MiB, the input cap", cap=MIB)


def test_row_groups_edited_too_read_only_the_declared_rows(tmp_path):
    """Row groups declaring fewer rows: pyarrow decodes only those, so that is what is read (and bounded)."""
    path = repeated_rows(tmp_path / "rg.parquet", 400, items=True, row_group_size=100)
    path.write_bytes(set_footer_rows(path.read_bytes(), 10, row_groups=True))
    assert jagged.load(path).scores["n_items"].tolist() == [40]


# --- JSON: depth, huge integers, huge arrays --------------------------------------------------

DEEP = "[" * 200_000 + "]" * 200_000


@pytest.mark.parametrize("name, text", [
    ("results.json", DEEP),
    ("results_deep.json", '{"results": {"t": {"acc,none": ' + DEEP + '}}, "configs": {}}'),
    ("samples_t_2025.jsonl", '{"doc_id": 0}\n' + DEEP + "\n"),
    ("bigint.json", '{"results": {"t": {"acc,none": ' + "7" * 5000 + '}}, "configs": {}}'),
    ("bigint_samples_t.jsonl", '{"doc_id": 0}\n{"doc_id": ' + "9" * 5000 + "}\n"),
])
def test_hostile_json_is_one_line(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    reason = "nested too deeply" if "[[[" in text else "an integer with more digits than Python converts"
    with pytest.raises(jagged.JaggedInputError, match=reason) as info:
        jagged.load(path)
    assert type(info.value) is jagged.JaggedInputError and str(info.value).startswith(name)
    line = assert_bad_input("metrics", path, fragments=(name, reason))
    if name.endswith(".jsonl"):
        assert "(line 2)" in line


def test_integer_too_large_for_a_float_is_one_line(tmp_path):
    """400 digits parse (the limit is 4,300) but no float holds them: an input error, not an OverflowError."""
    path = tmp_path / "results.json"
    path.write_text('{"results": {"t": {"acc,none": 1' + "0" * 400 + ', "alias": "t"}}, "configs": {"t": {}}, '
                    '"model_name": "m"}')
    with pytest.raises(jagged.JaggedInputError, match="results.json: a number is too large"):
        jagged.load(path)
    assert_bad_input("metrics", path, fragments=("results.json: a number is too large",))


def test_hostile_json_in_a_folder_is_named(tmp_path):
    """In a folder it is a damaged file: a warning names it, and with nothing else to read, exit 2."""
    (tmp_path / "results.json").write_text(DEEP)
    code, _, err = run_cli("metrics", tmp_path)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 2 and "Traceback" not in err
    assert lines[0].startswith("jagged: warning: ") and "1 damaged file(s) skipped: results.json" in lines[0]
    assert lines[1].startswith("jagged: error: ") and "results.json (not readable JSON: nested too deeply" in lines[1]


def test_hostile_json_inside_an_eval_member(tmp_path):
    path = write_eval(tmp_path / "deep.eval", [zstd_member("samples/1_epoch_1.json", DEEP.encode())])
    assert_bad_input("metrics", path, fragments=("deep.eval: member samples/1_epoch_1.json: not readable JSON: "
                                                 "nested too deeply",))
    path = write_eval(tmp_path / "int.eval", [deflate_member("samples/1_epoch_1.json",
                                                            b'{"id": ' + b"1" * 5000 + b"}")])
    assert_bad_input("metrics", path, fragments=("int.eval: member samples/1_epoch_1.json", "more digits"))


def test_huge_array_is_charged_for_its_values(tmp_path, monkeypatch):
    """``[{},{},...]``: 3 bytes of text per value but ~70 bytes of Python objects; charged 64 per ``{`` and ``,``."""
    n = 10_000
    path = tmp_path / "samples_t_2025.jsonl"
    path.write_text("[" + ",".join(["{}"] * n) + "]")
    assert path.stat().st_size < 40 * KIB  # the bytes alone pass the cap
    with pytest.raises(InputTooLargeError) as info:
        jagged.load(path, max_input_bytes=CAP)
    assert str(info.value).startswith(f"samples_t_2025.jsonl (JSON of 30,001 bytes, about 20,000 values) would need "
                                      f"more than {CAP_TEXT}")
    bad_via_cli(path, monkeypatch, "samples_t_2025.jsonl (JSON of 30,001 bytes", CAP_TEXT)
    assert limits.JSON_VALUE_BYTES * 2 * n + 30_001 > CAP


def test_deep_json_string_inside_an_eee_file_is_ignored_like_other_bad_details(tmp_path):
    from jagged.readers.eee import detail_dict as _detail_dict

    assert _detail_dict('{"a": ' * 100_000 + "1" + "}" * 100_000) is None
    assert _detail_dict('{"n": ' + "1" * 5000 + "}") is None
    assert _detail_dict('{"n": 3}') == {"n": 3}


# --- the cap itself ----------------------------------------------------------------------------

def test_cap_precedence_and_parsing(monkeypatch):
    monkeypatch.delenv(limits.ENV_VAR, raising=False)
    assert limits.max_input_bytes() == limits.DEFAULT_MAX_INPUT_BYTES == 2 * GIB
    monkeypatch.setenv(limits.ENV_VAR, "3G")
    assert limits.max_input_bytes() == 3 * GIB
    with limits.input_cap(4096) as cap:
        assert cap == 4096 and limits.max_input_bytes() == 4096
        with limits.input_cap(None):
            assert limits.max_input_bytes() == 4096
    assert limits.max_input_bytes() == 3 * GIB
    assert [limits.parse_size(v, "x") for v in ("10", "2k", "512MiB", "1 GB", 7)] == [10, 2048, 512 * MIB, GIB, 7]
    for bad in ("0", "-5", "lots", "1.5G", True, -(10 ** 5000), "9" * 100, 10 ** 5000, "2T"):
        with pytest.raises(jagged.JaggedInputError) as info:
            limits.parse_size(bad, "max_input_bytes")
        assert str(info.value).startswith("max_input_bytes: ") and len(str(info.value)) < 120


def test_cli_flag_sets_the_cap(tmp_path):
    path = tmp_path / "scores.csv.gz"
    path.write_bytes(gzip.compress(long_csv(5_000)))
    assert_bad_input("metrics", path, "--max-input-bytes", 4096,
                     fragments=("scores.csv.gz expands to more than 4 KiB",))
    code, out, err = run_cli("metrics", path, "--max-input-bytes", 10 * MIB)
    assert code == 0, err
    assert len(pd.read_csv(io.StringIO(out))) == 100


def test_bad_environment_value_is_one_line(tmp_path, monkeypatch):
    path = tmp_path / "s.csv"
    path.write_text("model,domain,score\nA,x,0.5\nA,y,0.6\n")
    monkeypatch.setenv(limits.ENV_VAR, "plenty")
    assert_bad_input("metrics", path, fragments=("JAGGED_MAX_INPUT_BYTES: 'plenty' is not a number of bytes",))


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "scores.csv"
    os.mkfifo(fifo)
    assert_bad_input("metrics", fifo, fragments=("not a regular file",))


def test_the_bundled_inputs_read_the_same_under_the_default_cap():
    from jagged.readers.files import read_csv
    from jagged.resources import data_dir

    frame = read_csv(data_dir() / items_module.BUNDLED_ITEMS_NAME)
    with gzip.open(data_dir() / items_module.BUNDLED_ITEMS_NAME) as handle:
        expected = pd.read_csv(io.BytesIO(handle.read()), keep_default_na=False, na_values=[""])
    assert len(frame) == len(expected) and list(frame.columns) == list(expected.columns)


# --- realistic bombs against the default cap, peak memory measured ----------------------------

PEAK_RSS_LIMIT = 500 * MIB


def run_measured(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, int]:
    """Run ``jagged ARGS`` in a child of a wrapper process; (exit status, stderr, the CLI's peak RSS in bytes)."""
    wrapper = ("import json, resource, subprocess, sys\n"
               "p = subprocess.run([sys.executable, '-m', 'jagged.cli', *sys.argv[1:]], capture_output=True,\n"
               "                   text=True)\n"
               "print(json.dumps([p.returncode, p.stderr, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))\n")
    environment = {k: v for k, v in os.environ.items() if k != limits.ENV_VAR}
    out = subprocess.run([sys.executable, "-c", wrapper, *args], capture_output=True, text=True, check=True,
                         env={**environment, **(env or {})})
    code, err, peak_kib = json.loads(out.stdout)
    return code, err, peak_kib * 1024


def assert_one_line(err: str, *fragments: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jagged: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_realistic_zstd_eval_bomb_default_cap_bounded_memory(tmp_path):
    """The issue's bomb: a small .eval whose zstd members expand to 4 GB (one recording it, one lying)."""
    frame = zstandard.ZstdCompressor(level=3).compress(bytes(128 * MIB))
    data = frame * 31  # 31 frames of 128 MiB: 3.9 GiB of zeros, read across frames
    crc = 0  # never reached: both are refused on their sizes first
    honest = ("samples/1_epoch_1.json", 93, data, crc, 31 * 128 * MIB)
    lying = ("samples/1_epoch_1.json", 93, data, crc, 2_000_000_000)  # under the 2 GiB cap; actually 4.2 GB
    for name, member in (("honest.eval", honest), ("lying.eval", lying)):
        path = write_eval(tmp_path / name, [member])
        assert path.stat().st_size < 1 * MIB
        code, err, peak = run_measured("metrics", str(path))
        assert code == 2, err
        if name == "honest.eval":
            assert_one_line(err, "honest.eval: member samples/1_epoch_1.json is recorded as more than 2 GiB")
        else:
            assert_one_line(err, "lying.eval: member samples/1_epoch_1.json cannot be read (expands to more than the "
                                 "2,000,000,000 bytes the archive records)")
        print(f"{name}: {path.stat().st_size / KIB:.0f} KiB file, peak RSS {peak / MIB:.0f} MiB")
        assert peak < PEAK_RSS_LIMIT, f"{name}: peak RSS {peak / MIB:.0f} MiB"


def test_realistic_gzip_csv_bomb_default_cap_bounded_memory(tmp_path):
    """A 12 MB gzip CSV of 3 GB of rows (concatenated gzip members), refused at 2 GiB with bounded memory."""
    block = b"".join(b"model-a,domain-%03d,0.5\n" % (i % 10) for i in range(2_000_000))  # 46 MB
    member = gzip.compress(block, 9)
    path = tmp_path / "bomb.csv.gz"
    with open(path, "wb") as handle:
        handle.write(gzip.compress(b"model,domain,score\n"))
        for _ in range(3 * GIB // len(block) + 1):
            handle.write(member)
    assert path.stat().st_size < 16 * MIB  # the issue's: 28 MB for 6 GB
    code, err, peak = run_measured("metrics", str(path))
    print(f"gzip bomb: {path.stat().st_size / MIB:.1f} MiB file, peak RSS {peak / MIB:.0f} MiB")
    assert code == 2, err
    assert_one_line(err, "bomb.csv.gz expands to more than 2 GiB, the input cap (2,147,483,648 bytes)")
    assert peak < PEAK_RSS_LIMIT, f"peak RSS {peak / MIB:.0f} MiB"
