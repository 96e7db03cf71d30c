"""Words of generated nhc.conf lines: quoting, host masks, arithmetic, sizes and counts.

All text is bytes. A value is rendered at two levels: the text `eval $CHECK` parses (the shell
level) and the text in the file, which NHC first reads with `read` without -r, so every backslash
the shell should see is written twice (`conf_escape`). Some cases deliberately skip that.

Every generated word is harmless when bash evaluates it: values never hold unquoted `;&<>|` or
backquotes, and `$(( ))` is always balanced (an unbalanced one could become a redirection).
"""

import random

UNSAFE_BARE = set(b"|&;<>()`'\"\n")


class Rng(random.Random):
    """random.Random over bytes choices, with the case's categories recorded as it goes."""

    def __init__(self, seed):
        super().__init__(seed)
        self.cats = set()

    def pick(self, items):
        return items[self.randrange(len(items))]

    def chance(self, p):
        return self.random() < p

    def tag(self, cat):
        self.cats.add(cat)


def conf_escape(shell_text):
    """The file text that `read` (without -r) turns into `shell_text`."""
    return shell_text.replace(b"\\", b"\\\\")


def single(value):
    return b"'" + value.replace(b"'", b"'\\''") + b"'"


def double(value, expand=False):
    specials = b'"`\\' if expand else b'"`\\$'
    return b'"' + bytes(_escaped(value, specials)) + b'"'


def _escaped(value, specials):
    out = bytearray()
    for byte in value:
        if byte in specials:
            out += b"\\"
        out.append(byte)
    return out


def ansi_c(value):
    out = bytearray(b"$'")
    for byte in value:
        if byte in b"\\'":
            out += b"\\" + bytes([byte])
        elif byte == 9:
            out += b"\\t"
        elif 32 <= byte < 127:
            out.append(byte)
        else:
            out += b"\\x%02x" % byte if byte % 2 else b"\\%03o" % byte
    return bytes(out + b"'")


def backslashed(value):
    return bytes(_escaped(value, b" \t\\'\"$`#*?[|&;<>(){}!"))


def word(rng, value, styles=("bare", "single", "double", "ansi", "backslash")):
    """`value` as one shell word in a random quoting style (bare only where it cannot run code)."""
    style = rng.pick(styles)
    if style == "bare" and (set(value) & UNSAFE_BARE or not value):
        style = "single"
    rng.tag("quote." + style)
    if style == "bare":
        if set(value) & set(b" \t\\$#*?"):
            rng.tag("quote.bare_special")
        return value
    if style == "single":
        return single(value)
    if style == "double":
        return double(value, expand=rng.chance(0.1))
    if style == "ansi":
        return ansi_c(value)
    return backslashed(value)


def spaced(rng, words):
    """Join words with one space, or now and then with runs of spaces and tabs."""
    if rng.chance(0.1):
        rng.tag("ws.runs")
        seps = [rng.pick([b"  ", b"\t", b" \t ", b"   "]) for _ in words]
        return b"".join(sep + w for sep, w in zip(seps, words))[len(seps[0]) :]
    return b" ".join(words)


# Host masks for n0042.cluster.example; those meant to match and those not.
MASKS_MATCH = [
    b"*",
    b"n0042*",
    b"*.cluster.example",
    b"n00[0-9][0-9].*",
    b"/^n0042/",
    b"/cluster/",
    b"/^n00[0-9]+\\.cluster\\.example$/",
    b"{n00[40-49].cluster.example}",
    b"{n0042.cluster.example}",
    b"{login1,n0042.cluster.example}",
    b"{n00[49-40].cluster.example}",
    b"{n[0040-0049].cluster.example}",
    b"{n00[4-49].cluster.example}",
    b"!n01*",
    b"!/^login/",
    b"!{n00[50-59].cluster.example}",
    b"n0042.cluster.example",
    b"*cluster*",
]
MASKS_OTHER = [
    b"n01*",
    b"N0042*",
    b"n0042",
    b"/^login/",
    b"{n00[50-59].cluster.example}",
    b"{n00[40-49]}",
    b"{n00[40-49].cluster.example,bad!syntax}",
    b"{n0042}",
    b"/[/",
    b"!*",
    b"!n0042*",
    b"!{n00[40-49].cluster.example}",
    b"n0042.cluster.example.",
    b"*.example.com",
]


def mask(rng):
    if rng.chance(0.65):
        return b"*"
    if rng.chance(0.7):
        chosen = rng.pick(MASKS_MATCH)
    else:
        chosen = rng.pick(MASKS_OTHER)
    kind = {b"/": "regex", b"{": "range", b"!": "negated"}.get(chosen[:1], "glob")
    rng.tag("mask." + kind)
    return chosen


ARITH_ATOMS = [
    b"1",
    b"0",
    b"2",
    b"010",
    b"0x1f",
    b"2#101",
    b"36#z",
    b"-3",
    b"9223372036854775807",
    b"NOPE",
    b"$NOPE",
    b"A",
]
HW_ATOMS = [b"HW_CORES", b"$HW_SOCKETS", b"HW_THREADS"]
ARITH_OPS = [b"+", b"-", b"*", b"/", b"%", b"**", b"<<", b" == ", b" < ", b"&", b"|", b" ^ "]


def arith_expr(rng, depth=0, hw=False):
    """An arithmetic expression; it names NHC's HW_* variables only when `hw`."""
    if depth > 1 or rng.chance(0.4):
        return rng.pick(ARITH_ATOMS + HW_ATOMS if hw else ARITH_ATOMS)
    form = rng.randrange(5)
    left, right = arith_expr(rng, depth + 1, hw), arith_expr(rng, depth + 1, hw)
    if form == 0:
        return b"(" + left + b")" + rng.pick(ARITH_OPS) + right
    if form == 1:
        return b"-" + left
    if form == 2:
        return left + b" > " + right + b" ? " + right + b" : " + left
    if form == 3:
        return left + rng.pick([b"/0", b"%0", b"/ 0"])
    return left + rng.pick(ARITH_OPS) + right


def arith(rng, inner=None, hw=False):
    """A `$(( ))` word, sometimes quoted; host-independent unless `hw`."""
    rng.tag("arith")
    text = b"$((" + (inner if inner is not None else arith_expr(rng, hw=hw)) + b"))"
    return double(text, expand=True) if rng.chance(0.3) else text


SIZE_NUMBERS = [
    b"1",
    b"0",
    b"2",
    b"120",
    b"121",
    b"900",
    b"2044",
    b"2048",
    b"10",
    b"1.5",
    b"010",
    b"08",
    b"0x10",
    b"-1",
]
SIZE_UNITS = [
    b"",
    b"k",
    b"K",
    b"m",
    b"M",
    b"g",
    b"G",
    b"t",
    b"T",
    b"p",
    b"P",
    b"e",
    b"E",
    b"kb",
    b"MB",
    b"gB",
    b"b",
    b"B",
]


def size(rng, percent=True):
    """A size argument as NHC's checks take it: units, percentages, odd numbers, empty."""
    roll = rng.random()
    if percent and roll < 0.3:
        rng.tag("size.percent")
        return rng.pick([b"0", b"1", b"10", b"11", b"88", b"89", b"90", b"99", b"100", b"101", b"1.5", b"x"]) + b"%"
    if roll < 0.38:
        rng.tag("size.edge")
        return rng.pick([b"''", b"8e", b"16E", b"9e", b"1024P", b"k", b"1kk", b"1 g", b"1x"])
    if roll < 0.45:
        rng.tag("size.arith")
        return arith(rng, rng.pick([b"1<<10", b"2**20", b"120+1", b"1/0", b"010*2", b"HW_CORES*0"])) + rng.pick(
            [b"", b"k", b"m"]
        )
    rng.tag("size.unit")
    return rng.pick(SIZE_NUMBERS) + rng.pick(SIZE_UNITS)


COUNT_VALUES = [
    b"0",
    b"6",
    b"7",
    b"10",
    b"16",
    b"17",
    b"1k",
    b"1K",
    b"2m",
    b"1g",
    b"1e",
    b"9e",
    b"1.5k",
    b"010",
    b"-1",
    b"''",
]


def count(rng):
    """An inode count or percentage, as check_fs_i* take them."""
    if rng.chance(0.3):
        rng.tag("size.percent")
        return rng.pick([b"0", b"37", b"38", b"62", b"63", b"64", b"100"]) + b"%"
    rng.tag("size.count")
    return rng.pick(COUNT_VALUES)
