"""What each write to the index changed, for readers that keep a copy of it in memory.

The vector cache (``vector_cache.py``) holds every chunk's vector as one matrix. Reloading
it after an edit costs the whole index (about 0.3 s at 120,000 chunks), so each write
records the chunk ids it removed and the chunk texts (hashes) that may have gained a
vector, and the cache applies just those. The journal is bounded: when it has forgotten
a generation, or a write changed everything (a new embedder, a rebuild), readers reload.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

MAX_ITEMS = 200_000  # ids and hashes kept in all; past it the oldest entries go


@dataclass(frozen=True)
class Change:
    removed: frozenset[int]  # chunk ids gone
    dirty: frozenset[str]  # chunk text hashes that may now have a vector (new chunk or vector)


@dataclass
class ChangeJournal:
    generation: int = 0  # bumped on every write
    _entries: OrderedDict[int, Change] = field(default_factory=OrderedDict)
    _items: int = 0

    def record(self, removed: Iterable[int] = (), dirty: Iterable[str] = (), *,
               everything: bool = False) -> None:
        """A write happened: what it removed and what may have gained a vector; with
        ``everything``, readers must reload."""
        self.generation += 1
        if everything:
            self._entries.clear()
            self._items = 0
            return
        change = Change(frozenset(removed), frozenset(dirty))
        self._entries[self.generation] = change
        self._items += len(change.removed) + len(change.dirty)
        while self._items > MAX_ITEMS and self._entries:
            _, old = self._entries.popitem(last=False)
            self._items -= len(old.removed) + len(old.dirty)

    def since(self, generation: int) -> Change | None:
        """Everything changed after ``generation``, merged; None if the journal cannot say
        (it forgot some of it, or a write changed everything): reload."""
        wanted = range(generation + 1, self.generation + 1)
        if any(g not in self._entries for g in wanted):
            return None
        removed: set[int] = set()
        dirty: set[str] = set()
        for g in wanted:
            removed |= self._entries[g].removed
            dirty |= self._entries[g].dirty
        return Change(frozenset(removed), frozenset(dirty))
