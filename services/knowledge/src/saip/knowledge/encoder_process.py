"""The second process that BM25-encodes a large document's chunks while the service indexes them, and its wire format.

Qdrant Edge holds the GIL while it indexes, so encoding on a thread of the service cannot overlap it; in a process of
its own it runs on the other core. `python -m saip.knowledge.encoder_process` reads requests on stdin and answers each
on stdout, in order, as frames (a 4-byte little-endian length, then a pickle: the two ends are the same code, and the
service starts this process itself): a request is a list of texts, its answer their vectors
(`sparse.encode_document`), packed as three byte strings: each vector's length, then every index as a `uint32` and
every weight as a `float64` (so the weights are the same floats).

Packed, a vector costs the service one copy and two list conversions where a pickled tuple of numbers costs an object
per number to read back. This module imports only the encoder, so the process starts in a fraction of a second.
"""

from __future__ import annotations

import pickle
import struct
import sys
from array import array
from collections.abc import Sequence
from typing import BinaryIO

from saip.knowledge import sparse

HEADER = struct.Struct("<I")
Packed = tuple[bytes, bytes, bytes]


def frame(message: object) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(body)) + body


def pack(vectors: Sequence[sparse.SparseVector]) -> Packed:
    lengths, indices, values = array("I"), array("I"), array("d")
    for vector in vectors:
        lengths.append(len(vector.indices))
        indices.extend(vector.indices)
        values.extend(vector.values)
    return lengths.tobytes(), indices.tobytes(), values.tobytes()


def unpack(packed: Packed) -> list[sparse.SparseVector]:
    lengths, indices, values = (
        memoryview(packed[0]).cast("I"),
        memoryview(packed[1]).cast("I"),
        memoryview(packed[2]).cast("d"),
    )
    vectors, cursor = [], 0
    for length in lengths.tolist():
        end = cursor + length
        vectors.append(sparse.SparseVector(tuple(indices[cursor:end]), tuple(values[cursor:end])))
        cursor = end
    return vectors


def _read(source: BinaryIO, size: int) -> bytes | None:
    data = source.read(size)
    if not data:
        return None
    if len(data) != size:
        raise EOFError(f"the service's request ended after {len(data)} of {size} bytes")
    return data


def serve(source: BinaryIO, sink: BinaryIO) -> None:
    """Answer requests until the service closes `source` (its end of the pipe: it stopped, or it is done with us)."""
    while (header := _read(source, HEADER.size)) is not None:
        body = _read(source, HEADER.unpack(header)[0])
        if body is None:
            raise EOFError("the service's request ended after its header")
        texts: list[str] = pickle.loads(body)
        sink.write(frame(pack([sparse.encode_document(text) for text in texts])))
        sink.flush()


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
