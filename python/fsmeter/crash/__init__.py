"""Crash and recovery: record a write-heavy run block by block, cut the power at seeded instants,
recover each cut image the way a rebooting machine does, and check it against what fsync promised.

- ``blocklog``: the recorded disk (FUSE + direct-I/O loop) and its write log
- ``cut``: the image a power cut leaves, under a cache model
- ``recovery``: fsck and mount of a cut image, timed
- ``model``: crash campaign files; ``run``: the runner; ``report``: table and HTML
"""
