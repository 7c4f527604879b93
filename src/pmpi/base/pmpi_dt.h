/* pmpi_dt: what the MPI layer knows about a datatype, and the one way it packs and unpacks one.
 *
 * Every decision about a user's datatype goes through here (point-to-point and collectives alike):
 *  - layout: `contig` is set only when the type's typemap, read from its envelope and contents,
 *    is one ascending run of bytes and `count` elements tile (extent == size). Size, extent and
 *    true extent alone cannot tell: a vector of stride -1 or a struct with descending members
 *    has size == extent == true extent and a permuted typemap.
 *  - lifetime: MPI lets a program free a datatype while a request still uses it. A request that
 *    keeps a type past the call that received it holds it (pmpi_dt_hold: a PMPI_Type_dup of a
 *    derived type, nothing for a predefined one) and lets go when it is retired.
 *  - packing: through the MPI's own PMPI_Pack/PMPI_Unpack, with MPI_BOTTOM (MPICH rejects a NULL
 *    buffer there) and a byte count that ends inside an element (the MPIs unpack whole elements
 *    only) handled here. The packed form of both MPIs is the typemap's bytes in order, which is
 *    what the engine carries for a contiguous sender, so a packed sender meets a contiguous
 *    receiver and the reverse. */
#ifndef BOBCAT_PMPI_DT_H
#define BOBCAT_PMPI_DT_H

#include <mpi.h>
#include <stddef.h>

/* MPI_Type_get_envelope and MPI_Type_get_contents for the layer's decoders, in the MPI 3.1 layout
 * (ints, addresses, datatypes) for every type, including one made by MPI 4.0's large-count
 * constructors (MPI_Type_contiguous_c ...), whose values then come from MPI_Type_get_contents_c
 * (MPICH raises a fatal error when the plain queries meet such a type: "use
 * MPI_Type_get_envelope_c"). 0, or -1 for a type they cannot read: the MPI's error, a large-count
 * subarray or darray (their large forms reorder the values), a value beyond an int. The envelope
 * always sets *comb (MPI_COMBINER_NAMED only for a predefined type; -1 if the MPI could not say), so
 * a caller can tell a derived type it must free either way. */
int pmpi_type_envelope(MPI_Datatype t, int *ni, int *na, int *nd, int *comb);
int pmpi_type_contents(MPI_Datatype t, int ni, int na, int nd, int *ints, MPI_Aint *addrs, MPI_Datatype *types);


typedef struct {
    MPI_Datatype t;
    MPI_Count size;   /* bytes of data per element */
    MPI_Count lb;     /* true lower bound: where a contiguous run starts, from buf */
    MPI_Count extent;
    int contig;       /* count elements are one run of count * size bytes at buf + lb */
    int predefined;   /* cannot be freed: needs no hold */
} pmpi_dt_info_t;

#define PMPI_DT_CACHE 16
extern pmpi_dt_info_t pmpi_dt_cache[PMPI_DT_CACHE];
extern int pmpi_dt_cache_n;

/* Look the type up and cache it (the cache is cleared whenever a type is freed). */
const pmpi_dt_info_t *pmpi_dt_query(MPI_Datatype t);

/* The cached entry or NULL, with no call (the small-message paths). */
static inline const pmpi_dt_info_t *pmpi_dt_cached(MPI_Datatype t)
{
    for (int i = 0; i < pmpi_dt_cache_n; i++)
        if (pmpi_dt_cache[i].t == t)
            return &pmpi_dt_cache[i];
    return NULL;
}

/* The entry, queried on a miss (valid until the next query or type free). */
static inline const pmpi_dt_info_t *pmpi_dt_get(MPI_Datatype t)
{
    const pmpi_dt_info_t *d = pmpi_dt_cached(t);
    return d ? d : pmpi_dt_query(t);
}

/* A handle a request may keep past the call: the type itself if predefined, else a duplicate the
 * request owns (MPI_DATATYPE_NULL if the MPI refused). pmpi_dt_release frees what hold made. */
MPI_Datatype pmpi_dt_hold(MPI_Datatype t);
void pmpi_dt_release(MPI_Datatype held, MPI_Datatype user);
/* pmpi_dt_hold for an argument a persistent request passes to every start: t itself where nothing
 * is held (MPI_DATATYPE_NULL, or the MPI refused: the start's call reports it). */
MPI_Datatype pmpi_dt_keep(MPI_Datatype t);
/* For a type a user's op is handed later (the op's function gets the program's own handle, which
 * it may compare with its types, so no duplicate): referenced, a program's MPI_Type_free of it
 * waits for the last pmpi_dt_unref. Nothing for predefined types. */
void pmpi_dt_ref(MPI_Datatype t);
void pmpi_dt_unref(MPI_Datatype t);
/* Free the derived types MPI_Type_get_contents returned (n of them; predefined ones are kept). */
void pmpi_dt_free_contents(MPI_Datatype *types, int n);
/* Free a type and forget what the cache knew about it (its handle may be reused). */
int pmpi_dt_free(MPI_Datatype *t);

/* Pack count elements at buf (MPI_BOTTOM allowed) into out (room for count * size bytes).
 * Returns the bytes packed, or -1 (the MPI refused: the caller falls back to the real MPI). */
MPI_Count pmpi_dt_pack(const void *buf, MPI_Count count, MPI_Datatype t, void *out);
/* Lay `bytes` packed bytes out as elements at buf (count of them at most); the last element may be
 * partial: its received bytes are written and the rest of it left as it was. 0 or -1. */
int pmpi_dt_unpack(const void *in, MPI_Count bytes, void *buf, MPI_Count count, MPI_Datatype t);

#endif
