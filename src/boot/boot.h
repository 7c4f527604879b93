/* boot: who is on my node (the plan), and the exchange of heap segments among a node's ranks. */
#ifndef BOBCAT_BOOT_H
#define BOBCAT_BOOT_H

#include <stddef.h>
#include <stdint.h>
#include <bobcat/smartmap.h>
#include "../util/util.h"

typedef struct {
    int world_rank, world_size;
    int node;             /* node index in the plan */
    int local_rank, local_size;
    int node_first_rank;  /* world rank of local rank 0 */
} boot_place_t;

/* Where world rank `rank` sits under `plan` ("n:rpn;n:rpn..."). Errors name what is wrong. */
bobcat_status_t boot_plan_place(const char *plan, int rank, boot_place_t *place_p);

/* World rank and host-local index from the launcher's environment; -1 if absent. */
int boot_env_world_rank(const char *override);
int boot_env_host_local_index(void);

/* What each rank tells its node at bootstrap. */
typedef struct {
    size_t heap_size;
    smap_pages_t pages;
    size_t page_size;
} boot_seg_desc_t;

/* The bootstrap's wire format (SOCK_SEQPACKET records). A client sends a hello with its memfd
 * attached (SCM_RIGHTS). Local rank 0 answers each accepted client with batches carrying every
 * local rank's memfd and description, BOOT_BATCH at a time (the kernel passes at most SCM_MAX_FD,
 * 253, descriptors per message), and a rejected one with one batch of status != 0 and no
 * descriptors. The client acknowledges the last batch, which lets rank 0 keep the descriptors in
 * flight below the per-user limit the kernel enforces (RLIMIT_NOFILE). */
#define BOOT_MAGIC 0x626f6263u /* "bobc" */
#define BOOT_TOKEN_LEN 32
#define BOOT_BATCH 128

typedef struct {
    uint32_t magic;
    int32_t local_rank;
    char token[BOOT_TOKEN_LEN];
    uint64_t heap_size, page_size;
    uint32_t pages;
    int32_t slot_shift; /* the layout the rank computed from its heap; must agree node-wide */
} boot_hello_t;

typedef struct {
    uint32_t magic;
    int32_t status; /* 0 accepted, else a bobcat_status_t */
    int32_t nranks, first, count, slot_shift;
    struct { uint64_t heap_size, page_size; uint32_t pages, pad; } desc[BOOT_BATCH];
} boot_batch_t;

/* Where the bootstrap sockets live: "" (the default) for abstract names, else a directory the
 * node's ranks share (BOBCAT_BOOT_DIR: ranks in different network namespaces). Set once at start,
 * before any exchange; the string must outlive the process's exchanges. */
#define BOOT_DIR_MAX 64
void boot_set_socket_dir(const char *dir);

/* The socket address of a node's bootstrap: "\0bobcat-<job id>-<node>" (abstract), or
 * "<dir>/bobcat-<job id>-<node>" under boot_set_socket_dir. Returns the address length, 0 when the
 * name does not fit sun_path. */
struct sockaddr_un;
unsigned boot_socket_name(struct sockaddr_un *sa_p, const char *job_id, int node);

/* Called once for every local rank r of the node (this rank included), as its segment arrives:
 * `fd` is r's memfd, valid during the call only (the exchange closes it afterwards, so a node of
 * n ranks never holds n descriptors per rank). A non-OK return ends the exchange with it. */
typedef bobcat_status_t (*boot_seg_fn_t)(void *ctx, int local_rank, int fd, const boot_seg_desc_t *desc);

/* Exchange segment fds among the ranks of one node over an abstract unix socket named after the
 * job id and node. Local rank 0 serves; the others connect. Both sides check the peer's uid
 * (SO_PEERCRED) and the job token, and that every rank uses the same slot shift (0 for an
 * exchange that is not of heaps). `own_fd` stays the caller's; fn gets every rank's segment, this
 * rank's too. Cost: rank 0 passes n descriptors to each client, in ceil(n / BOOT_BATCH)
 * messages; every other rank receives n: linear per rank. */
bobcat_status_t boot_node_exchange_each(const char *job_id, const char *token, const boot_place_t *place,
                                        int slot_shift, int own_fd, const boot_seg_desc_t *own, double timeout_s,
                                        boot_seg_fn_t fn, void *ctx);

/* The collecting form (the original interface): on success fds_p[r] and descs_p[r] hold local
 * rank r's segment for every r < local_size (fds_p[own rank] is a dup of own_fd); the caller closes
 * the descriptors. It holds n descriptors at once, so nodes of more ranks than the open-file limit
 * need boot_node_exchange_each. */
bobcat_status_t boot_node_exchange(const char *job_id, const char *token, const boot_place_t *place, int own_fd,
                                   const boot_seg_desc_t *own, double timeout_s, int *fds_p, boot_seg_desc_t *descs_p);

#endif
