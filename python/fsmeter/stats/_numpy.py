"""numpy, imported on first use: `fsmeter run` judges most phases without it (under 10 interval
samples there is no series to compute on), and importing it costs about 50 ms of start-up."""

from __future__ import annotations

from typing import TYPE_CHECKING


class _Numpy:
    def __getattr__(self, name: str):
        import numpy

        return getattr(numpy, name)


if TYPE_CHECKING:  # the type checker reads numpy's own types
    import numpy as np
else:
    np = _Numpy()
