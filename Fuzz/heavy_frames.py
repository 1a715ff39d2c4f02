#!/usr/bin/env python3
"""Writes frames that sit just inside the property-list reader's budgets: the
ones that make the server hold the most while decoding (and a few packets
messages in our own layout). Fuzz/run.sh seeds the
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


def our_packets(count, with_segment_sizes, length=40):
    """A packets message (command 8) laid out as our writer lays it out: keys
    identifier, command, packets, protocols (and segment-sizes) in that order,
    each array followed by its elements. The frame reader reads this layout
    directly, so these seeds lead the fuzzer to its checks."""
    arrays = 3 if with_segment_sizes else 2
    keys = 2 + arrays
    objects_count = 1 + keys + 2 + arrays * (1 + count)
    ref_size = 1 if objects_count <= 256 else 2
    first_array = 1 + keys + 2
    array_objects = [first_array + slot * (1 + count) for slot in range(arrays)]
    names = ["identifier", "command", "packets", "protocols", "segment-sizes"][:keys]
    objects = [bp_dict(list(range(1, keys + 1)), [1 + keys, 2 + keys] + array_objects, ref_size)]
    objects += [bp_ascii(name) for name in names] + [bp_int(7), bp_int(8)]
    columns = [[bp_data(bytes([i % 256]) * (length + i)) for i in range(count)],
               [bp_int(2 if i % 2 == 0 else 30) for i in range(count)],
               [bp_int(1000 + i) for i in range(count)]]
    for slot in range(arrays):
        objects.append(bp_array([array_objects[slot] + 1 + i for i in range(count)], ref_size))
        objects += columns[slot]
    return assemble(objects, ref_size=ref_size)


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
    # Not heavy: the IP path's message as our peers write it, inside and past the direct reader's limit.
    shapes.update({
        "our-packets-2": our_packets(2, False),
        "our-packets-3-segment-sizes": our_packets(3, True),
        "our-packets-200-segment-sizes": our_packets(200, True, 4),
        "our-packets-300": our_packets(300, False, 4),
    })
    for name, document in shapes.items():
        with open(os.path.join(folder, f"heavy-{name}.bin"), "wb") as out:
            out.write(frame(document))


if __name__ == "__main__":
    main()
