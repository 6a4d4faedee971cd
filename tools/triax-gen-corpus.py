#!/usr/bin/env python3
"""Deterministic toy-grammar English corpus for Triax training tests.

Every sentence is produced from a small hand-written grammar (a few dozen
words and a handful of templates, plus small arithmetic facts such as
"three plus four is seven."); no text is copied from anywhere.  The output
is pure ASCII, lower case apart from a capital at the start of each
sentence, with one short paragraph per line.

The same --seed and --bytes always give the same bytes, on any platform and
Python version: randomness comes from a built-in splitmix64 generator, not
from Python's `random` module.

Needs only the Python standard library (so a build can run it to embed the
corpus without numpy).

The structure is deliberately repetitive so that a tiny byte-level
transformer can learn it within a few hundred steps.

Options:
  --seed S          generator seed (default 1)
  --bytes N         exact number of output bytes (default 200000)
  --out FILE        write the text to FILE (default: stdout)
  --emit-bin FILE   also write the byte-tokenized llm.c .bin
                    (256 x int32 header: 20240520, 1, ntokens; uint16 tokens)
  --emit-c FILE --symbol NAME
                    also write a C source holding that whole .bin image:
                      const unsigned char NAME[] = {...};
                      const unsigned long NAME_size = <bytes>;
"""

import argparse
import os
import re
import struct
import sys
import tempfile

MAGIC = 20240520
VERSION = 1
HEADER_INTS = 256

MASK64 = (1 << 64) - 1


class SplitMix64:
    """Tiny, fully specified PRNG so the corpus never depends on Python's."""

    def __init__(self, seed):
        self.state = seed & MASK64

    def next_u64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n):
        """Uniform integer in [0, n) (rejection sampling, no modulo bias)."""
        if n <= 0:
            raise ValueError("below() needs n > 0")
        limit = (1 << 64) - ((1 << 64) % n)
        while True:
            r = self.next_u64()
            if r < limit:
                return r % n

    def choice(self, seq):
        return seq[self.below(len(seq))]


# ---------------------------------------------------------------- vocabulary
NOUNS = ["cat", "dog", "bird", "fish", "king", "queen", "child", "farmer",
         "robot", "wizard", "baker", "horse"]
# singular noun -> plural noun
PLURAL = {n: n + "s" for n in NOUNS}
PLURAL["child"] = "children"
PLURAL["fish"] = "fish"
PLACES = ["garden", "forest", "house", "river", "castle", "market"]
THINGS = ["apple", "stone", "book", "cake", "ball", "hat"]
ADJECTIVES = ["big", "small", "red", "green", "old", "young", "happy", "sad"]
# (third person singular, plural / base, past)
VERBS = [("sees", "see", "saw"), ("likes", "like", "liked"),
         ("finds", "find", "found"), ("helps", "help", "helped"),
         ("follows", "follow", "followed"), ("calls", "call", "called"),
         ("makes", "make", "made"), ("wants", "want", "wanted")]
COLORS_OF = {"apple": "red", "stone": "grey", "book": "blue", "cake": "white",
             "ball": "green", "hat": "black"}
NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven",
           "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen",
           "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]


def np_(rng, plural=False):
    """Noun phrase: 'the [adj] noun' or 'the [adj] nouns'."""
    noun = rng.choice(NOUNS)
    word = PLURAL[noun] if plural else noun
    if rng.below(2):
        return "the " + rng.choice(ADJECTIVES) + " " + word
    return "the " + word


def s_transitive(rng):
    plural = rng.below(3) == 0
    verb = rng.choice(VERBS)
    v = verb[1] if plural else verb[0]
    return f"{np_(rng, plural)} {v} {np_(rng)}"


def article(word):
    return "an" if word[0] in "aeiou" else "a"


def s_past_place(rng):
    verb = rng.choice(VERBS)
    thing = rng.choice(THINGS)
    return (f"{np_(rng)} {verb[2]} {article(thing)} {thing} "
            f"in the {rng.choice(PLACES)}")


def s_is_adj(rng):
    if rng.below(2):
        return f"{np_(rng, True)} are {rng.choice(ADJECTIVES)}"
    return f"{np_(rng)} is {rng.choice(ADJECTIVES)}"


def s_color_fact(rng):
    thing = rng.choice(THINGS)
    return f"the {thing} is {COLORS_OF[thing]}"


def s_plus(rng):
    a = rng.below(11)
    b = rng.below(11)
    return f"{NUMBERS[a]} plus {NUMBERS[b]} is {NUMBERS[a + b]}"


def s_minus(rng):
    a = rng.below(21)
    b = rng.below(a + 1)
    return f"{NUMBERS[a]} minus {NUMBERS[b]} is {NUMBERS[a - b]}"


def s_count(rng):
    n = rng.below(19) + 2
    noun = rng.choice(NOUNS)
    return f"there are {NUMBERS[n]} {PLURAL[noun]} in the {rng.choice(PLACES)}"


def s_and(rng):
    verb = rng.choice(VERBS)
    return f"{np_(rng)} and {np_(rng)} {verb[1]} {np_(rng)}"


# (weight, template); weights sum to 20
TEMPLATES = [(5, s_transitive), (3, s_past_place), (3, s_is_adj),
             (2, s_color_fact), (3, s_plus), (2, s_minus), (1, s_count),
             (1, s_and)]
_WEIGHTED = [t for w, t in TEMPLATES for _ in range(w)]


def sentence(rng):
    s = rng.choice(_WEIGHTED)(rng)
    return s[0].upper() + s[1:] + "."


def paragraph(rng):
    """3..6 sentences joined by single spaces, ended by a newline."""
    n = 3 + rng.below(4)
    return " ".join(sentence(rng) for _ in range(n)) + "\n"


def generate(seed, nbytes):
    """Return exactly `nbytes` bytes of ASCII corpus for `seed`."""
    rng = SplitMix64(seed)
    parts = []
    total = 0
    while total < nbytes:
        p = paragraph(rng)
        parts.append(p)
        total += len(p)
    text = "".join(parts)[:nbytes]
    data = text.encode("ascii")
    assert len(data) == nbytes
    return data


# ---------------------------------------------------------------- outputs
def bin_image(data):
    """llm.c .bin image with one token per byte (little-endian uint16)."""
    header = struct.pack("<%di" % HEADER_INTS, MAGIC, VERSION, len(data),
                         *([0] * (HEADER_INTS - 3)))
    toks = bytearray(2 * len(data))
    toks[0::2] = data  # low byte = the byte, high byte = 0
    return header + bytes(toks)


def c_source(image, symbol, seed, nbytes):
    lines = [
        "/* Generated by tools/triax-gen-corpus.py "
        f"--seed {seed} --bytes {nbytes}. Do not edit. */",
        f"/* llm.c token file image: 1024-byte header + {nbytes} uint16 byte tokens. */",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        f"extern const unsigned char {symbol}[];",
        f"extern const unsigned long {symbol}_size;",
        f"const unsigned char {symbol}[] = {{",
    ]
    per_line = 16
    for i in range(0, len(image), per_line):
        chunk = image[i:i + per_line]
        lines.append("  " + ",".join(f"0x{b:02x}" for b in chunk) + ",")
    lines.append("};")
    lines.append(f"const unsigned long {symbol}_size = {len(image)}UL;")
    lines += ["#ifdef __cplusplus", "}", "#endif", ""]
    return "\n".join(lines).encode("ascii")


def write_atomic(path, data):
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise OSError(2, f"output directory {directory} does not exist", path)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".",
                               suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


C_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="triax-gen-corpus",
        description="Deterministic toy-grammar English corpus generator.")
    p.add_argument("--seed", type=int, default=1, help="seed (default 1)")
    p.add_argument("--bytes", type=int, default=200000, dest="nbytes",
                   help="exact output size in bytes (default 200000)")
    p.add_argument("--out", help="output text file (default stdout)")
    p.add_argument("--emit-bin", metavar="FILE",
                   help="also write the byte-tokenized llm.c .bin file")
    p.add_argument("--emit-c", metavar="FILE",
                   help="also write a C source embedding the .bin image")
    p.add_argument("--symbol", help="C symbol name for --emit-c")
    args = p.parse_args(argv)

    prog = "triax-gen-corpus"
    if args.nbytes <= 0:
        print(f"{prog}: error: --bytes must be positive, got {args.nbytes}",
              file=sys.stderr)
        return 2
    if args.nbytes > 2**31 - 1:
        print(f"{prog}: error: --bytes {args.nbytes} exceeds the int32 token "
              "count of the .bin header", file=sys.stderr)
        return 2
    if args.seed < 0:
        print(f"{prog}: error: --seed must be >= 0", file=sys.stderr)
        return 2
    if args.emit_c and not args.symbol:
        print(f"{prog}: error: --emit-c needs --symbol NAME", file=sys.stderr)
        return 2
    if args.symbol and not args.emit_c:
        print(f"{prog}: error: --symbol is only used with --emit-c", file=sys.stderr)
        return 2
    if args.symbol and not C_IDENT.match(args.symbol):
        print(f"{prog}: error: --symbol {args.symbol!r} is not a C identifier",
              file=sys.stderr)
        return 2

    data = generate(args.seed, args.nbytes)
    try:
        if args.out:
            write_atomic(args.out, data)
        else:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        if args.emit_bin or args.emit_c:
            image = bin_image(data)
            if args.emit_bin:
                write_atomic(args.emit_bin, image)
            if args.emit_c:
                write_atomic(args.emit_c,
                             c_source(image, args.symbol, args.seed, args.nbytes))
    except OSError as e:
        print(f"{prog}: error: {e.filename}: cannot write: {e.strerror}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
