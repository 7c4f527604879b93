"""The benchmarks of bobcat itself, one command each (`python -m bobcat.bench.<name>`): smartmap,
mpi, coll, scaling, ab; common holds what they share (the placement probe, the node settings).
"""
