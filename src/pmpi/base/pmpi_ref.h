/* pmpi_ref: handles (datatypes, ops) that pending calls keep past the call that received them.
 *
 * MPI lets a program free a datatype or an op while a nonblocking or persistent call that uses it
 * is pending (MPICH's nonblocking3 frees its op right after MPI_Ireduce), and bobcat applies a
 * user's op later, in its units and its leaders' phase, handing the op's function the program's
 * own datatype handle (a function may compare it with its types, so no duplicate). Such a call
 * references the handles (pmpi_ref) until its request is retired (pmpi_unref). The program's free
 * asks pmpi_ref_free first: a referenced handle is nulled for the program at once and really freed
 * by whoever lets go of the last reference. A handle is kept as its bits (an int in MPICH, a
 * pointer in Open MPI: PMPI_BITS). Callers hold the layer's lock (entry points, progress). */
#ifndef BOBCAT_PMPI_REF_H
#define BOBCAT_PMPI_REF_H

#include <stdint.h>
#include <string.h>

typedef enum { PMPI_REF_TYPE, PMPI_REF_OP } pmpi_ref_kind_t;

static inline uintptr_t pmpi_bits(const void *handle, size_t size)
{
    uintptr_t b = 0;
    memcpy(&b, handle, size < sizeof b ? size : sizeof b);
    return b;
}
#define PMPI_BITS(h) pmpi_bits(&(h), sizeof(h))

void pmpi_ref(pmpi_ref_kind_t kind, uintptr_t h);
/* 1 if that was the last reference to a handle the program has freed: the caller frees it now. */
int pmpi_unref(pmpi_ref_kind_t kind, uintptr_t h);
/* The program frees h: 1 if a pending call references it (the program's handle is to be nulled,
 * the real free waits), 0 if the caller frees it now (not referenced, or freed twice: the MPI's
 * error). */
int pmpi_ref_free(pmpi_ref_kind_t kind, uintptr_t h);

#endif
