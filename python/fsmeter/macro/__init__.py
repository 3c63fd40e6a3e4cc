"""The macro family's data side: a kernel-like source tree generated with a fixed seed and its
archives (tree_gen), the cache that keeps them between trials (cache), and the target's block
device counters (blockdev)."""
