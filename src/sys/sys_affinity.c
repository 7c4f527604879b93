/* sys_affinity: bind a rank to one core for life, with hwloc (Catamount: one process per core). */
#include "sys.h"

#include <hwloc.h>

bobcat_status_t sys_bind_core(int index, int *core_p)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo))
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
    if (hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_PROCESS)) {
        util_error("cannot bind to core %u: %m (set BOBCAT_BIND=none to run unbound)", core->logical_index);
    } else {
        *core_p = (int)core->logical_index;
        st = BOBCAT_OK;
    }
    hwloc_bitmap_free(set);
out:
    hwloc_topology_destroy(topo);
    return st;
}
