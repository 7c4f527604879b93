/* p2p_complete: whether one request is complete, and its status: an engine send settles (or
 * detaches), an engine receive has matched (its packed bytes laid out), a receive that an off-node
 * message took or a persistent request's started operation is tested in the real MPI. */
#include "p2p.h"

#include <stdlib.h>

int p2p_send_settled(msg_req_t *m, unsigned *polls)
{
    if (bobcat_msg_test(m))
        return 1;
    bobcat_msg_progress();
    /* A receiver that has not matched after this many looks may be computing for long: copy the
     * data aside so the send completes (never for synchronous sends: detach refuses them). */
    if (bobcat_msg_test(m))
        return 1;
    /* A receiver away in the real MPI matches through its helper: wake it now and then. */
    if ((++*polls & 63) == 0)
        bobcat_msg_nudge(m);
    return *polls > P2P_DETACH_POLLS && bobcat_msg_detach(m);
}

/* ---- completion of one request ---- */

/* A persistent request's started operation of the real MPI's (or none: nothing to move). */
static int finish_persist_inner(p2p_req_t *r, MPI_Status *st, int *err_p)
{
    if (r->inner == MPI_REQUEST_NULL) {
        p2p_status_empty(st);
        *err_p = MPI_SUCCESS;
        return 1;
    }
    int flag = 0;
    MPI_Status tmp;
    *err_p = PMPI_Test(&r->inner, &flag, st == MPI_STATUS_IGNORE ? &tmp : st);
    return flag;
}

int p2p_req_test(p2p_req_t *r, MPI_Status *st, int *err_p)
{
    *err_p = MPI_SUCCESS;
    if (r->st_valid) {
        /* MPI_ERROR is left alone: only the multiple-completion calls set it (MPI 3.2.5). */
        p2p_status_set(st, r->st_src, r->st_tag, r->st_bytes, r->st_cancelled);
        *err_p = r->st_err;
        return 1;
    }
    switch (r->kind) {
    case P2P_K_NULL:
        p2p_status_set(st, r->mode == -1 ? MPI_PROC_NULL : MPI_ANY_SOURCE, MPI_ANY_TAG, 0, 0);
        return 1;
    case P2P_K_SEND:
        if (!p2p_send_settled(&r->m, &r->polls))
            return 0;
        r->st_src = MPI_ANY_SOURCE;
        r->st_tag = MPI_ANY_TAG;
        r->st_bytes = 0;
        r->st_err = MPI_SUCCESS;
        r->st_cancelled = 0;
        if (r->pack) {
            free(r->pack);
            r->pack = NULL;
        }
        break;
    case P2P_K_RECV:
    case P2P_K_DEFER:
        if (r->switched) {
            int flag = 0;
            MPI_Status tmp;
            int rc = PMPI_Test(&r->real, &flag, &tmp);
            if (!flag)
                return 0;
            int cancelled = 0;
            MPI_Count bytes = 0;
            PMPI_Test_cancelled(&tmp, &cancelled);
            PMPI_Get_elements_x(&tmp, MPI_BYTE, &bytes);
            r->st_src = tmp.MPI_SOURCE;
            r->st_tag = tmp.MPI_TAG;
            r->st_bytes = bytes;
            r->st_cancelled = cancelled;
            r->st_err = rc != MPI_SUCCESS ? tmp.MPI_ERROR : MPI_SUCCESS;
            if (r->st_err == MPI_SUCCESS && rc != MPI_SUCCESS)
                r->st_err = rc;
            break;
        }
        if (r->kind == P2P_K_DEFER)
            return 0;
        if (!r->m.complete)
            return 0; /* the caller's progress pass would have matched it */
        p2p_offq_remove(r);
        if (r->pack && !r->m.cancelled) {
            /* Non-contiguous receive: the engine delivered packed bytes; lay them out, a partial
             * last element included. */
            pmpi_dt_unpack(r->pack, (MPI_Count)r->m.st_len, r->buf, r->count, r->type);
            free(r->pack);
            r->pack = NULL;
        }
        r->st_src = r->m.st_src;
        r->st_tag = r->m.st_tag;
        r->st_bytes = (MPI_Count)r->m.st_len;
        r->st_cancelled = r->m.cancelled;
        r->st_err = r->m.truncated ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
        break;
    case P2P_K_PERSIST:
        if (!r->active) {
            p2p_status_empty(st);
            return 1;
        }
    {
        /* Test the started operation once, and keep its status until the request is retired:
         * the Test/Wait family may look at a request twice. One of bobcat's leaves its status in
         * its own words (no round trip through an MPI_Status and two PMPI calls per completion). */
        p2p_req_t *in = p2p_req_of(r->inner);
        if (in) {
            int err;
            if (!p2p_req_test(in, MPI_STATUS_IGNORE, &err))
                return 0;
            r->st_src = in->st_src;
            r->st_tag = in->st_tag;
            r->st_bytes = in->st_bytes;
            r->st_cancelled = in->st_cancelled;
            r->st_err = err;
            p2p_req_release(in);
            r->inner = MPI_REQUEST_NULL;
            break;
        }
        MPI_Status tmp;
        int err = MPI_SUCCESS, cancelled = 0;
        MPI_Count bytes = 0;
        if (!finish_persist_inner(r, &tmp, &err))
            return 0;
        PMPI_Test_cancelled(&tmp, &cancelled);
        PMPI_Get_elements_x(&tmp, MPI_BYTE, &bytes);
        r->st_src = tmp.MPI_SOURCE;
        r->st_tag = tmp.MPI_TAG;
        r->st_bytes = bytes;
        r->st_cancelled = cancelled;
        r->st_err = err;
        break;
    }
    case P2P_K_EXT: {
        int err = MPI_SUCCESS;
        if (!r->ext_ops->test(r, &err))
            return 0;
        r->st_src = MPI_ANY_SOURCE;
        r->st_tag = MPI_ANY_TAG;
        r->st_bytes = 0;
        r->st_cancelled = 0;
        r->st_err = err;
        break;
    }
    default:
        return 0;
    }
    r->st_valid = 1;
    p2p_status_set(st, r->st_src, r->st_tag, r->st_bytes, r->st_cancelled);
    *err_p = r->st_err;
    return 1;
}
