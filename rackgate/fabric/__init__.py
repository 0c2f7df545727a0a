"""The fabric checks' orchestration: which node pairs to test and when (triangles, rounds),
ubench07 runs on both sides of a pair, the AccId map, link-training baselines, collectives."""
