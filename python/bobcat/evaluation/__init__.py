"""The evaluation: configurations and machine facts, benchmark runs, campaigns, the results store.

configs, machine, parsers, store, hugepool, runner, shmem_run, campaign. Depends on the launcher
(yod's plan and status lines) and bobcat.paths; nothing imported here, so a caller pays only for
the modules it names.
"""
