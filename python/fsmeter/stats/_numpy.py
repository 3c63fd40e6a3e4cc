"""numpy, imported on first use: `fsmeter run` judges most phases without it (under 10 interval
samples there is no series to compute on), and importing it costs about 50 ms of start-up."""

from __future__ import annotations


class _Numpy:
    def __getattr__(self, name: str):
        import numpy

        return getattr(numpy, name)


np = _Numpy()
