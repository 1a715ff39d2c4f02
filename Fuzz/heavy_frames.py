#!/usr/bin/env python3
"""Writes frames that sit just inside the property-list reader's budgets: the
ones that make the server hold the most while decoding. Fuzz/run.sh seeds the
frame and login-gate targets with them, whose harnesses check what decoding
held. Usage: heavy_frames.py FOLDER"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Fixtures"))
from generate import assemble, bp_array, bp_ascii, bp_data, bp_dict, bp_head, bp_int  # noqa: E402

MAXIMUM_FRAME = 128 * 1024


def frame(document: bytes) -> bytes:
    return struct.pack("<I", 4 + len(document)) + document


def data_message(extra_objects, ref_size=2):
    """A data message (command 3, identifier 1, data b"x") with one extra key
    "x" whose value is object 8, the first of the extra objects."""
    objects = [bp_dict([1, 2, 3, 4], [5, 6, 7, 8], ref_size), bp_ascii("command"), bp_ascii("identifier"),
               bp_ascii("data"), bp_ascii("x"), bp_int(3), bp_int(1), bp_data(b"x")]
    return objects + extra_objects


def shared_references(count):
    """One array of `count` references to one short string."""
    first = 8
    return data_message([bp_array([first + 1] * count, 2), bp_ascii("s" * 20)])


def many_strings(length, count):
    """An array of `count` distinct strings of `length` bytes."""
    first = 8
    strings = [bp_ascii(f"{i:0{length}d}") for i in range(count)]
    return data_message([bp_array(list(range(first + 1, first + 1 + count)), 2)] + strings)


def many_small_arrays(count):
    """An array of `count` one-element arrays, each a buffer of its own."""
    first = 8
    arrays = [bp_array([first + 1 + count], 2) for _ in range(count)]
    return data_message([bp_array(list(range(first + 1, first + 1 + count)), 2)] + arrays + [bp_int(0)])


def wide_dictionary(count):
    """A dictionary of `count` distinct keys, every value the same integer."""
    first = 8
    keys = [bp_ascii(f"k{i:05d}") for i in range(count)]
    value = first + 1 + count
    return data_message([bp_dict(list(range(first + 1, first + 1 + count)), [value] * count, 2)] + keys + [bp_int(0)])


def fits(objects):
    document = assemble(objects, ref_size=2)
    return len(document) + 4 <= MAXIMUM_FRAME, document


def largest(make, low, high):
    """The largest size in [low, high] whose frame fits in a frame."""
    while low < high:
        middle = (low + high + 1) // 2
        if fits(make(middle))[0]:
            low = middle
        else:
            high = middle - 1
    return fits(make(low))[1]


def main():
    folder = sys.argv[1]
    os.makedirs(folder, exist_ok=True)
    shapes = {
        # As many references as the reader's heap budget allows (32 bytes a value), then twice that.
        "shared-references": fits(shared_references(24000))[1],
        "shared-references-beyond": fits(shared_references(48000))[1],
        "many-short-strings": largest(lambda n: many_strings(16, n), 1, 20000),
        "many-long-strings": largest(lambda n: many_strings(200, n), 1, 2000),
        "many-small-arrays": largest(many_small_arrays, 1, 30000),
        "wide-dictionary": largest(wide_dictionary, 1, 20000),
    }
    for name, document in shapes.items():
        with open(os.path.join(folder, f"heavy-{name}.bin"), "wb") as out:
            out.write(frame(document))


if __name__ == "__main__":
    main()
