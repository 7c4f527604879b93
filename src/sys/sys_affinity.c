/* sys_affinity: bind a rank to one core for life, with hwloc (Catamount: one process per core). */
#include "sys.h"

#include <hwloc.h>
#include <sched.h>
#include <stdlib.h>

/* hwloc's I/O and XML plugins (libxml2 with ICU, OpenCL, GL, PCI) are no use for binding; loading
 * them cost each rank 3.5 ms and left those libraries mapped in the user's program. */
#define UNNEEDED_PLUGINS "hwloc_xml_libxml,hwloc_opencl,hwloc_gl,hwloc_pci,hwloc_cuda,hwloc_nvml,hwloc_rsmi,hwloc_levelzero"

bobcat_status_t sys_bind_core(int index, int *core_p)
{
    /* The launcher already bound this rank to one CPU (yod asks Open MPI to when its mapping is
     * the same as ours): keep it, without reading the topology. */
    cpu_set_t mask;
    if (!sched_getaffinity(0, sizeof mask, &mask) && CPU_COUNT(&mask) == 1) {
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &mask)) {
                *core_p = c;
                break;
            }
        return BOBCAT_OK;
    }
    hwloc_topology_t topo;
    /* Only this thread runs (we are in a constructor), so the environment may change briefly. */
    int set_blacklist = !getenv("HWLOC_PLUGINS_BLACKLIST");
    if (set_blacklist)
        setenv("HWLOC_PLUGINS_BLACKLIST", UNNEEDED_PLUGINS, 1);
    int init_rc = hwloc_topology_init(&topo);
    if (set_blacklist)
        unsetenv("HWLOC_PLUGINS_BLACKLIST");
    if (init_rc)
        return BOBCAT_ERR_SYS;
    bobcat_status_t st = BOBCAT_ERR_SYS;
    /* Only the allowed cores matter: cpusets of a container or a Slurm step restrict them. */
    hwloc_topology_set_flags(topo, 0);
    if (hwloc_topology_load(topo)) {
        util_error("hwloc cannot read the topology: %m");
        goto out;
    }
    int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    if (ncores <= 0) {
        util_error("hwloc found no cores");
        goto out;
    }
    hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (unsigned)(index % ncores));
    hwloc_bitmap_t set = hwloc_bitmap_dup(core->cpuset);
    hwloc_bitmap_singlify(set); /* one hardware thread: no migration between SMT siblings either */
    /* This thread, not the process: hwloc binds a process thread by thread through
     * /proc/<pid>/task, and in a PID namespace whose /proc is the host's (`unshare --pid` without
     * --mount-proc, some container setups) that pid names another process or none (ESRCH). In a
     * constructor this is the only thread, and the threads the program starts later inherit it. */
    if (hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD)) {
        util_error("cannot bind to core %u: %m (set BOBCAT_BIND=none to run unbound)", core->logical_index);
    } else {
        *core_p = hwloc_bitmap_first(set); /* the OS index of the CPU, as in the fast path */
        st = BOBCAT_OK;
    }
    hwloc_bitmap_free(set);
out:
    hwloc_topology_destroy(topo);
    return st;
}
