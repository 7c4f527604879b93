"""External conformance: test suites nobody on the team wrote, run bare and under yod.
`python -m bobcat.external.pysuites` (mpi4py, shmem4py) and `python -m bobcat.external.mpich`
(MPICH's test/mpi). rank.py runs inside every rank as a script, so no module here may share a
name with one the ranks import (mpi4py, shmem4py, runtests).
"""
