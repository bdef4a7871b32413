"""How an entry scores against a query (SPEC §6.1, ranking): the formula, pure, shared by
the engine (memory.search, which finds the candidates through the index) and the slow
reference of the tests (which scores every entry of the scope), as memory.text is.

An entry's own score adds up, for each query word it holds, BM25's term weight on the
project's folded words — the word's rarity (idf) times its frequency in the entry,
saturated (K1) and set against the entry's length (B): a short line that holds the rare
word outranks a long paragraph that holds it once among many common words. A query word in
the heading the entry sits under — or the title of its page — counts as half an occurrence
(HEADING). Two query
words that stand side by side in the query and in the entry (`quốc ca`, `dược sĩ`) add
their pair's weight again (PAIR). An entry in a note of a day the query names counts that
date as one more word (DATE). An entry that holds a query word then scores at least a
share (NEIGHBOUR) of the own score of the entry just before it in its file — the answer that
follows a question — and a smaller share (FOLLOWED) of the entry just after it: the fact
whose subject the next line names ("- 50 triệu" / "- giá anh Tuấn chốt hôm qua"). An entry
holding no query word is never a hit.

No IO and no Django here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

K1 = 1.2  # term frequency saturation
B = 0.5  # how much an entry's length counts (0: not at all, 1: fully)
PAIR = 1.0  # a pair of query words side by side, as a share of its words' weight
DATE = 2.0  # a note of a day the query names, as a share of a word's weight
NEIGHBOUR = 0.9  # an entry holding a query word scores at least this share of the one before
FOLLOWED = 0.7  # … and at least this share of the one after it
HEADING = 0.5  # a query word in the heading an entry sits under (or the page's title)
POOL = 30  # candidates scored by this formula: the best by rarity (SPEC §6.1)
# When a query matches at most this many words of the text (its forms), each form is
# counted in an entry (list.count, in C) rather than every word of the entry looked up:
# the same counts, with fewer steps in Python.
COUNTED_FORMS = 8


def idf(df: int, entries: int) -> float:
    """BM25's idf of a word held by `df` of `entries` entries, in thousandths, rounded, as a
    float: ln(1 + (N − df + ½) / (df + ½))."""
    return float(round(1000 * math.log(1 + (entries - df + 0.5) / (df + 0.5))))


def length_norm(length: int, average: float) -> float:
    """BM25's length normalisation of an entry of `length` words: K1·(1 − B + B·length/average)."""
    return K1 * (1 - B + B * length / average) if average > 0 else K1


def term(weight: float, tf: float, norm: float) -> float:
    """BM25's term weight: `weight` (an idf, thousandths) × tf·(K1+1) / (tf + norm), `norm`
    the entry's length_norm."""
    return weight * tf * (K1 + 1) / (tf + norm)


def pairs_of(sequence: Sequence[str], words: Sequence[str]) -> tuple[tuple[int, int], ...]:
    """The pairs of query words (indexes into `words`) that stand side by side in the
    query's folded word `sequence` (repeats included), each once, in order."""
    where = {word: index for index, word in enumerate(words)}
    found: dict[tuple[int, int], None] = {}
    for left, right in zip(sequence, sequence[1:], strict=False):
        if left != right and left in where and right in where:
            found[(where[left], where[right])] = None
    return tuple(found)


def score(
    entry_words: Sequence[str],
    forms: Mapping[str, tuple[int, ...]],
    weights: Sequence[float],
    pairs: Iterable[tuple[int, int]],
    average: float,
    date_weight: float = 0.0,
    heading: Sequence[str] = (),
) -> float:
    """The own score of an entry whose folded words, in order and with repeats, are
    `entry_words`: `forms` maps each word of the text a query word matches to the query
    words it stands for, `weights` are the query words' idf (thousandths), `pairs` the
    query's side-by-side pairs, `average` the scope's mean entry length in words,
    `date_weight` the weight of the date the query names (0 when the entry's note is not
    of such a day), and `heading` the folded words of the heading it sits under (a query
    word there counts HEADING times as often as in the entry: the page's topic)."""
    norm = length_norm(len(entry_words), average)
    tf: dict[int, float] = {}  # whole counts
    held: list[tuple[str, int]] | None = None  # (form, times) of the forms it holds
    if len(forms) <= COUNTED_FORMS:  # each form counted in C: the usual query
        held = []
        for form, indexes in forms.items():
            times = entry_words.count(form)
            if times:
                held.append((form, times))
                for index in indexes:
                    tf[index] = tf.get(index, 0) + times
    else:
        for word in entry_words:
            for index in forms.get(word, ()):
                tf[index] = tf.get(index, 0) + 1
    frequency: dict[int, float] = tf
    if heading:
        frequency = dict(tf)
        for word in heading:
            for index in forms.get(word, ()):
                frequency[index] = frequency.get(index, 0) + HEADING
    total = 0.0
    for index in sorted(frequency) if len(frequency) > 1 else frequency:
        total += term(weights[index], frequency[index], norm)
    if pairs and len(tf) > 1:  # a pair needs two words held (most entries hold one or all)
        wanted = [pair for pair in pairs if pair[0] in tf and pair[1] in tf]
        if wanted:
            total = _with_pairs(total, _positions(entry_words, forms, held), weights, wanted, norm)
    if date_weight:
        total += term(DATE * date_weight, 1, norm)
    return total


def _positions(
    entry_words: Sequence[str],
    forms: Mapping[str, tuple[int, ...]],
    held: list[tuple[str, int]] | None,
) -> dict[int, tuple[int, ...]]:
    """Where in the entry a query word stands: position → the query words it counts for.
    With `held` (the forms it holds, each with how often), found by list.index in C."""
    if held is None:
        return {i: found for i, word in enumerate(entry_words) if (found := forms.get(word))}
    at: dict[int, tuple[int, ...]] = {}
    for form, times in held:
        position = -1
        for _ in range(times):
            position = entry_words.index(form, position + 1)
            at[position] = forms[form]
    return at


def _with_pairs(
    total: float,
    at: Mapping[int, tuple[int, ...]],
    weights: Sequence[float],
    wanted: list[tuple[int, int]],
    norm: float,
) -> float:
    """`total` with what the query's pairs `wanted` add (PAIR) where they stand side by
    side in the entry (`at`: _positions), one by one."""
    together: dict[tuple[int, int], int] = {}
    for position, current in at.items():
        previous = at.get(position - 1)
        if previous:
            for a in previous:
                for b in current:
                    if (a, b) in wanted:
                        together[(a, b)] = together.get((a, b), 0) + 1
    for a, b in wanted:
        if (a, b) in together:
            weight = PAIR * (weights[a] + weights[b]) / 2
            total += term(weight, together[(a, b)], norm)
    return total


def with_neighbour(own: float, before: float, after: float = 0.0, *, holds_a_word: bool) -> float:
    """An entry's score: its own, or — when it holds a query word itself — NEIGHBOUR × the
    own score of the entry before it (the answer after the question) or FOLLOWED × the own
    score of the entry after it (the line that names what this one is about), if more."""
    if not holds_a_word:
        return own
    return max(own, NEIGHBOUR * before, FOLLOWED * after)


def shown(value: float) -> float:
    """A score as hits carry it and ranks compare it: in thousandths, three decimals."""
    return round(value / 1000, 3)
