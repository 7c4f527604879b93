/* pmpi_ref: the referenced handles (see pmpi_ref.h). A few at a time: a linear table. */
#include "pmpi_ref.h"

#include <stdlib.h>

#include "../../util/util.h"

typedef struct {
    uintptr_t h;
    pmpi_ref_kind_t kind;
    int refs, freed;
} ref_t;
static ref_t *refs;
static int nrefs, caprefs;

static ref_t *find(pmpi_ref_kind_t kind, uintptr_t h)
{
    for (int i = 0; i < nrefs; i++)
        if (refs[i].h == h && refs[i].kind == kind)
            return &refs[i];
    return NULL;
}

void pmpi_ref(pmpi_ref_kind_t kind, uintptr_t h)
{
    ref_t *r = find(kind, h);
    if (!r) {
        if (nrefs == caprefs) {
            int cap = caprefs ? 2 * caprefs : 8;
            ref_t *more = realloc(refs, (size_t)cap * sizeof *refs);
            if (!more)
                util_out_of_memory("the handles pending calls use", (size_t)cap * sizeof *refs);
            refs = more;
            caprefs = cap;
        }
        r = &refs[nrefs++];
        *r = (ref_t){h, kind, 0, 0};
    }
    r->refs++;
}

int pmpi_unref(pmpi_ref_kind_t kind, uintptr_t h)
{
    ref_t *r = find(kind, h);
    if (!r || --r->refs > 0)
        return 0;
    int due = r->freed;
    *r = refs[--nrefs];
    return due;
}

int pmpi_ref_free(pmpi_ref_kind_t kind, uintptr_t h)
{
    ref_t *r = find(kind, h);
    if (!r || r->freed)
        return 0;
    r->freed = 1;
    return 1;
}
