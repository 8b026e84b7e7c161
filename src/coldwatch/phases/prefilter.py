"""A fast 'does any rule match this line?' test for the classifier's hot path.

One alternation of every rule's pattern costs more per line than the rules one by one (Python's
regex engine has no multi-literal search). Most alternatives must contain some literal text; the
prefilter indexes each by one 4-character slice of that text, so a line is tested only against the
alternatives whose slice it contains, plus the few that have no literal of 4 characters. Exact: the
answer is the alternation's answer (non-ASCII lines take the alternation itself)."""

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
    """``matches(text)`` is ``any(re.search(p, text) for p in patterns)``, faster."""

    def __init__(self, patterns: list[str], scoped: re.Pattern[str] | None) -> None:
        self.full = scoped
        by_gram: dict[str, list[str]] = defaultdict(list)
        always: list[str] = []
        for pattern in patterns:
            flag = ""
            if pattern.startswith("(?i)"):
                flag, pattern = "i", pattern[4:]
            if "(?" in pattern.replace("(?:", "").replace("(?!", "").replace("(?=", "").replace("(?<", ""):
                always.append(f"(?{flag}:{pattern})" if flag else f"(?:{pattern})")  # inline flags: keep whole
                continue
            for alt in alternatives(pattern):
                wrapped = f"(?i:{alt})" if flag else f"(?:{alt})"
                runs = [r for r in literals(alt) if len(r) >= GRAM and r.isascii()]
                if not runs:
                    always.append(wrapped)
                    continue
                best = max(runs, key=len).lower()
                mid = (len(best) - GRAM) // 2
                by_gram[best[mid : mid + GRAM]].append(wrapped)
        self.grams = {g: re.compile("|".join(alts)) for g, alts in by_gram.items()}
        self.keys = frozenset(self.grams)
        self.always = re.compile("|".join(always)) if always else None

    def matches(self, text: str) -> bool:
        if not text.isascii():
            return self.full is not None and self.full.search(text) is not None
        if self.always is not None and self.always.search(text):
            return True
        low = text.lower()
        n = len(low) - GRAM + 1
        hits = self.keys.intersection([low[i : i + GRAM] for i in range(n)]) if n > 0 else ()
        grams = self.grams
        return any(grams[g].search(text) for g in hits)
