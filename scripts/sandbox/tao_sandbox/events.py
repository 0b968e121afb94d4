"""TensorBoard event files, byte for byte in TensorBoard's format (TFRecord framing of ``Event``
protocol buffers), as Lightning's ``TensorBoardLogger`` leaves them in
``<results_dir>/lightning_logs/version_1/events.out.tfevents.<time>.<host>.<pid>.0``."""

from __future__ import annotations

import os
import socket
import struct
import time


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        crc = n
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _field(number: int, wire: int, payload: bytes) -> bytes:
    return _varint(number << 3 | wire) + payload


def _bytes_field(number: int, data: bytes) -> bytes:
    return _field(number, 2, _varint(len(data)) + data)


def event(
    wall_time: float, step: int = 0, *, version: str = "", scalar: tuple[str, float] | None = None
) -> bytes:
    """An ``Event`` message: wall_time (1), step (2), file_version (3) or summary (5) holding one
    ``Value`` (tag 1, simple_value 2)."""
    msg = _field(1, 1, struct.pack("<d", wall_time)) + _field(2, 0, _varint(step))
    if version:
        msg += _bytes_field(3, version.encode())
    if scalar is not None:
        tag, value = scalar
        val = _bytes_field(1, tag.encode()) + _field(2, 5, struct.pack("<f", value))
        msg += _bytes_field(5, _bytes_field(1, val))
    return msg


def record(data: bytes) -> bytes:
    """TFRecord framing: length, masked CRC of the length, data, masked CRC of the data."""
    length = struct.pack("<Q", len(data))
    return (
        length + struct.pack("<I", masked_crc(length)) + data + struct.pack("<I", masked_crc(data))
    )


def read_records(path: str) -> list[bytes]:
    """The records of an event file, each CRC checked (for tests)."""
    out = []
    with open(path, "rb") as handle:
        blob = handle.read()
    pos = 0
    while pos < len(blob):
        (length,) = struct.unpack_from("<Q", blob, pos)
        (len_crc,) = struct.unpack_from("<I", blob, pos + 8)
        if len_crc != masked_crc(blob[pos : pos + 8]):
            raise ValueError(f"{path}: bad length CRC at {pos}")
        data = blob[pos + 12 : pos + 12 + length]
        (data_crc,) = struct.unpack_from("<I", blob, pos + 12 + length)
        if data_crc != masked_crc(data):
            raise ValueError(f"{path}: bad data CRC at {pos}")
        out.append(data)
        pos += 16 + length
    return out


class EventWriter:
    """One event file per run (Lightning opens a new one each time ``fit`` starts)."""

    def __init__(self, logdir: str) -> None:
        os.makedirs(logdir, exist_ok=True)
        name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.{os.getpid()}.0"
        self.path = os.path.join(logdir, name)
        self._file = open(self.path, "ab")  # noqa: SIM115 - open for the run
        self._write(event(time.time(), version="brain.Event:2"))

    def _write(self, data: bytes) -> None:
        self._file.write(record(data))
        self._file.flush()

    def scalar(self, tag: str, value: float, step: int) -> None:
        self._write(event(time.time(), step, scalar=(tag, float(value))))

    def close(self) -> None:
        self._file.close()
