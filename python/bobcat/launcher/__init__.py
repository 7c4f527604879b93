"""yod and oshrun: the job launcher. plan (the node plan, pure), elf (which MPI a program needs),
launch (the real launcher's command line), job (the job's life), yod and oshrun (the commands).

Standard library only, and nothing imported here: yod's start-up is paid on every job.
Depends on bobcat.paths only.
"""
