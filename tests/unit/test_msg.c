/* test_msg: the shared-memory layout of the msg engine (src/msg/msg.h) — the sizes and offsets
 * its banner documents, which senders and receivers of one node must agree on. */
#include <stddef.h>
#include <stdio.h>

#include "../../src/msg/msg.h"

static int failures;
#define EXPECT(cond)                                                        \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                     \
        }                                                                   \
    } while (0)

int main(void)
{
    /* node header: one cache line, payload from the next */
    EXPECT(sizeof(msg_node_t) == MSG_LINE);
    EXPECT(offsetof(msg_node_t, next) == 0);
    EXPECT(offsetof(msg_node_t, consumed) == 8);
    EXPECT(offsetof(msg_node_t, kind) == 12);
    EXPECT(offsetof(msg_node_t, from_local) == 14);
    EXPECT(offsetof(msg_node_t, pseq) == 28);
    EXPECT(offsetof(msg_node_t, ctx) == 16);
    EXPECT(offsetof(msg_node_t, src) == 20);
    EXPECT(offsetof(msg_node_t, tag) == 24);
    EXPECT(offsetof(msg_node_t, len) == 32);
    EXPECT(offsetof(msg_node_t, addr) == 40);
    EXPECT(offsetof(msg_node_t, done) == 48);
    EXPECT(offsetof(msg_node_t, pool_next) == 56);
    /* inbox: producers' tail alone on line 0, constants on line 1, the stub node on line 2 */
    EXPECT(offsetof(msg_inbox_t, tail) == 0);
    EXPECT(offsetof(msg_inbox_t, magic) == MSG_LINE);
    EXPECT(offsetof(msg_inbox_t, fboxes) == MSG_LINE + 8);
    EXPECT(offsetof(msg_inbox_t, away) == MSG_LINE + 12);
    EXPECT(offsetof(msg_inbox_t, kick) == MSG_LINE + 16);
    EXPECT(offsetof(msg_inbox_t, stub) == 2 * MSG_LINE);
    EXPECT(sizeof(msg_cell_t) == MSG_LINE);
    EXPECT(offsetof(msg_cell_t, seq) == 0);
    EXPECT(offsetof(msg_cell_t, data) == 24);
    EXPECT(offsetof(msg_chan_t, dack) == 8);
    EXPECT(offsetof(msg_chan_t, cells) == 16);
    EXPECT(offsetof(msg_chan_t, ring) == 24);
    EXPECT(offsetof(msg_chan_t, claim) == 32); /* the receiver's line: with ack and dack */
    EXPECT(offsetof(msg_chan_t, cell) == MSG_LINE);
    EXPECT(sizeof(msg_inbox_t) == 3 * MSG_LINE);
    /* a rendezvous header in a cell: length, buffer, ticket and the aligned detach word fit its
     * data; its len mark is no eager length (the eager limit is at most 1 MiB) */
    EXPECT(MSG_RNDV_DETACH + sizeof(uint64_t) <= MSG_CELL_DATA);
    EXPECT((offsetof(msg_cell_t, data) + MSG_RNDV_DETACH) % sizeof(uint64_t) == 0);
    EXPECT(MSG_CELL_RNDV > (1u << 20));
    /* ticket: done and claim in one word pair the receiver reaches with one line */
    EXPECT(offsetof(msg_ticket_t, done) == 0);
    EXPECT(offsetof(msg_ticket_t, claim) == 4);
    EXPECT(offsetof(msg_ticket_t, bounce) == 8);
    EXPECT(offsetof(msg_ticket_t, push) == 32);
    EXPECT(offsetof(msg_ticket_t, pushed) == 36);
    EXPECT(offsetof(msg_ticket_t, dst) == 40);
    EXPECT(sizeof(msg_ticket_t) <= MSG_LINE);
    /* lock-free atomics: a process must never fall back to a lock shared with nobody */
    EXPECT(__atomic_always_lock_free(sizeof(uint64_t), 0));
    EXPECT(__atomic_always_lock_free(sizeof(uint32_t), 0));
    if (!failures)
        printf("test_msg: layout ok\n");
    return failures ? 1 : 0;
}
