/* test_unit: single-process tests of libbobcat's internals: sizes, booleans, the node plan. */
#include <string.h>

#include "../../src/boot/boot.h"
#include "../mp/mp_util.h"

static void sizes(void)
{
    size_t v = 0;
    CHECK(util_parse_size("512M", &v) == BOBCAT_OK && v == (size_t)512 << 20, "512M");
    CHECK(util_parse_size("4k", &v) == BOBCAT_OK && v == 4096, "4k");
    CHECK(util_parse_size("2GiB", &v) == BOBCAT_OK && v == (size_t)2 << 30, "2GiB");
    CHECK(util_parse_size("123", &v) == BOBCAT_OK && v == 123, "123");
    const char *bad[] = {"", "M", "-1", "1X", "12 M", "99999999999999999999", "17179869184G"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(util_parse_size(bad[i], &v) == BOBCAT_ERR_INVAL, "accepted '%s'", bad[i]);
    int b = -1;
    CHECK(util_parse_bool("yes", &b) == BOBCAT_OK && b == 1, "yes");
    CHECK(util_parse_bool("off", &b) == BOBCAT_OK && b == 0, "off");
    CHECK(util_parse_bool("maybe", &b) == BOBCAT_ERR_INVAL, "maybe");
}

static void plan(void)
{
    boot_place_t p;
    /* -F job: 8 ranks at 4 per node (nodes 0,1), then 3 at 2 per node (nodes 2,3; node 3 holds 1). */
    const char *plan = "8:4;3:2";
    CHECK(boot_plan_place(plan, 0, &p) == BOBCAT_OK && p.node == 0 && p.local_rank == 0 && p.local_size == 4, "r0");
    CHECK(boot_plan_place(plan, 5, &p) == BOBCAT_OK && p.node == 1 && p.local_rank == 1 && p.node_first_rank == 4,
          "r5");
    CHECK(boot_plan_place(plan, 9, &p) == BOBCAT_OK && p.node == 2 && p.local_rank == 1 && p.local_size == 2, "r9");
    CHECK(boot_plan_place(plan, 10, &p) == BOBCAT_OK && p.node == 3 && p.local_rank == 0 && p.local_size == 1 &&
              p.world_size == 11, "r10");
    CHECK(boot_plan_place("3:2", 2, &p) == BOBCAT_OK && p.node == 1 && p.local_size == 1, "last node fewer");
    const char *bad[] = {"", "x", "4", "4:", "4:0", "0:2", "4:2;", "4:2;x:1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(boot_plan_place(bad[i], 0, &p) != BOBCAT_OK, "accepted plan '%s'", bad[i]);
    CHECK(boot_plan_place("4:2", 4, &p) != BOBCAT_OK, "rank outside the plan");
}

int main(void)
{
    sizes();
    plan();
    printf("test_unit: %s\n", mp_failures ? "FAILED" : "ok");
    return mp_failures != 0;
}
