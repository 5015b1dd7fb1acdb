"""A randomness source with scripted 64-bit words, duck-typing numpy.random.Generator.

Exact samplers read uniform bits as 64-bit words (``integers(..., dtype=uint64)``) and bounded
integers (``integers(low, high)``); scripting them drives a sampler down a chosen path, e.g.
through the exact resolution of an acceptance whose probability underflows in floating point.
"""

import numpy as np


class ScriptedBits:
    def __init__(self, words=(), ints=(), order=None, default_word=0):
        self.words = list(words)
        self.ints = list(ints)
        self.order = order
        self.default_word = default_word

    def _word(self):
        return self.words.pop(0) if self.words else self.default_word

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        if np.dtype(dtype) == np.uint64:
            if size is None:
                return np.uint64(self._word())
            return np.array([self._word() for _ in range(int(np.prod(size)))], np.uint64).reshape(
                size
            )
        high = np.asarray(high)
        if high.ndim == 0 and size is None:
            return self.ints.pop(0)
        return np.array([self.ints.pop(0) for _ in range(high.size)], np.int64)

    def permutation(self, n):
        return np.arange(n) if self.order is None else np.asarray(self.order)
