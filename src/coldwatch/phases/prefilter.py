"""A fast 'which rules match this line?' for the classifier's hot path.

One alternation of every rule's pattern costs more per line than the rules one by one (Python's
regex engine has no multi-literal search). Most alternatives must contain some literal text; the
prefilter indexes each by one 4-character slice of that text, so a line is tested only against the
alternatives whose slice it contains, plus the few that have no literal of 4 characters. Exact: the
answer is what searching each pattern would say (non-ASCII lines search each pattern)."""

from __future__ import annotations

import re
from collections import defaultdict

_SPECIAL = frozenset("[](){}|?*+^$.")
_ESC_LIT = frozenset(".()[]{}|?*+^$\\/-:'\"=#<>,;!@%&~` ")
GRAM = 4


def alternatives(pattern: str) -> list[str]:
    """A pattern's top-level alternatives ('a|b(c|d)' -> ['a', 'b(c|d)'])."""
    out: list[str] = []
    depth, cur, i, cls = 0, "", 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            cur += pattern[i : i + 2]
            i += 2
            continue
        if cls:
            cls = ch != "]"
        elif ch == "[":
            cls = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            out.append(cur)
            cur = ""
            i += 1
            continue
        cur += ch
        i += 1
    out.append(cur)
    return out


def literals(alt: str) -> list[str]:
    """Runs of literal text outside any group that every match of the alternative contains."""
    runs: list[str] = []
    cur, i, depth, cls = "", 0, 0, False
    while i < len(alt):
        ch = alt[i]
        if cls:
            i += 2 if ch == "\\" else 1
            cls = ch != "]"
            continue
        lit = ""
        if ch == "\\":
            nxt = alt[i + 1 : i + 2]
            i += 2
            if nxt not in _ESC_LIT:  # \d, \w, \b, \x41, ...: not a literal, and what follows may be its argument
                if cur:
                    runs.append(cur)
                cur = ""
                if nxt in "xuUN0123456789":
                    return runs  # escapes with arguments: claim nothing after them
                continue
            lit = nxt
        elif ch in _SPECIAL:
            i += 1
            if ch == "{":  # a counted quantifier: skip its '{m,n}'
                close = alt.find("}", i)
                i = close + 1 if close >= 0 else len(alt)
            if ch in "?*{" and cur:
                cur = cur[:-1]  # the character before an optional quantifier may be absent
            if cur:
                runs.append(cur)
            cur = ""
            if ch == "[":
                cls = True
            elif ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            continue
        else:
            lit = ch
            i += 1
        if depth:
            continue
        q = alt[i : i + 1]
        if q in ("?", "*", "{"):
            if cur:
                runs.append(cur)
            cur = ""
            continue
        cur += lit
        if q == "+":
            runs.append(cur)
            cur = ""
    if cur:
        runs.append(cur)
    return runs


class Prefilter:
    """``which(text)`` is the set of indices of the patterns that match the text (what searching each
    pattern would say), found by testing only the alternatives whose literal slice the text holds."""

    def __init__(self, patterns: list[str], scoped: re.Pattern[str] | None) -> None:
        self.full = scoped
        self.compiled = [re.compile(p) for p in patterns]
        by_gram: dict[str, list[tuple[int, re.Pattern[str]]]] = defaultdict(list)
        always: list[tuple[int, re.Pattern[str]]] = []
        for idx, pattern in enumerate(patterns):
            flag = ""
            if pattern.startswith("(?i)"):
                flag, pattern = "i", pattern[4:]
            if "(?" in pattern.replace("(?:", "").replace("(?!", "").replace("(?=", "").replace("(?<", ""):
                always.append((idx, self.compiled[idx]))  # inline flags: the pattern as a whole
                continue
            for alt in alternatives(pattern):
                rx = re.compile(f"(?i:{alt})" if flag else alt)
                runs = [r for r in literals(alt) if len(r) >= GRAM and r.isascii()]
                if not runs:
                    always.append((idx, rx))
                    continue
                best = max(runs, key=len).lower()
                mid = (len(best) - GRAM) // 2
                by_gram[best[mid : mid + GRAM]].append((idx, rx))
        self.grams = dict(by_gram)
        self.keys = frozenset(self.grams)
        self.always = always

    def which(self, text: str) -> set[int]:
        if not text.isascii():  # case folding beyond ASCII: search every pattern
            return {i for i, rx in enumerate(self.compiled) if rx.search(text)}
        out: set[int] = set()
        for i, rx in self.always:
            if i not in out and rx.search(text):
                out.add(i)
        low = text.lower()
        n = len(low) - GRAM + 1
        if n > 0:
            grams = self.grams
            for g in self.keys.intersection([low[k : k + GRAM] for k in range(n)]):
                for i, rx in grams[g]:
                    if i not in out and rx.search(text):
                        out.add(i)
        return out

    def matches(self, text: str) -> bool:
        return bool(self.which(text))


_CACHE: dict[tuple[str, ...], Prefilter] = {}


def prefilter(patterns: list[str], scoped: re.Pattern[str] | None) -> Prefilter:
    """The prefilter for a rule set's patterns, built once per distinct set (a classifier per start)."""
    key = tuple(patterns)
    pre = _CACHE.get(key)
    if pre is None:
        if len(_CACHE) > 16:
            _CACHE.clear()
        pre = _CACHE[key] = Prefilter(patterns, scoped)
    return pre
