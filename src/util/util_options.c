/* util_options: the knobs of options.def read from BOBCAT_* environment variables. */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

extern char **environ;

static util_options_t util_options_cache;
static int util_options_cached;

typedef enum { T_SIZE, T_ENUM, T_BOOL, T_DOUBLE, T_STRING } opt_type_t;

typedef struct {
    const char *name, *def, *category, *doc;
    opt_type_t type;
    size_t offset;
} opt_desc_t;

static const opt_desc_t opt_table[] = {
#define BOBCAT_OPT(NAME, TYPE, DEF, CAT, DOC) {#NAME, DEF, CAT, DOC, T_##TYPE, offsetof(util_options_t, NAME)},
#include "options.def"
#undef BOBCAT_OPT
};
#define N_OPTS (sizeof opt_table / sizeof opt_table[0])

/* Allowed values of the ENUM knobs. */
static const char *const enum_pages[] = {"auto", "huge", "thp", "small", NULL};
static const char *const enum_bind[] = {"core", "none", NULL};
static const char *const enum_windows[] = {"auto", "eager", "lazy", NULL};
static const char *const enum_stats[] = {"0", "off", "1", "rank", "node", NULL};
static const char *const enum_coll_plain[] = {"auto", "inplace", "mpi", NULL};
static const char *const enum_coll_reduce[] = {"auto", "serial", "parallel", "mpi", NULL};
static const char *const enum_coll_allreduce[] = {"auto", "auto-parallel", "serial", "parallel", "fused", "mpi", NULL};
static const char *const enum_coll_bcast[] = {"auto", "inplace", "split", "mpi", NULL};
static const char *const enum_coll_barrier[] = {"auto", "counter", "mpi", NULL};

static const char *const *enum_values(const char *name)
{
    if (!strcmp(name, "PAGES"))
        return enum_pages;
    if (!strcmp(name, "BIND"))
        return enum_bind;
    if (!strcmp(name, "WINDOWS"))
        return enum_windows;
    if (!strcmp(name, "STATS"))
        return enum_stats;
    if (!strcmp(name, "COLL_BARRIER"))
        return enum_coll_barrier;
    if (!strcmp(name, "COLL_ALLREDUCE"))
        return enum_coll_allreduce;
    if (!strcmp(name, "COLL_BCAST"))
        return enum_coll_bcast;
    if (!strcmp(name, "COLL_REDUCE") || !strcmp(name, "COLL_REDUCE_SCATTER"))
        return enum_coll_reduce;
    if (!strncmp(name, "COLL_", 5) && strcmp(name, "COLL_SPIN") && strcmp(name, "COLL_PARALLEL_MIN") &&
        strcmp(name, "COLL_HIER") && strcmp(name, "COLL_SPLIT_MIN") && strcmp(name, "COLL_FUSED_FOLD"))
        return enum_coll_plain;
    return NULL;
}

bobcat_status_t util_parse_size(const char *text, size_t *bytes_p)
{
    if (!text || !*text)
        return BOBCAT_ERR_INVAL;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text || text[0] == '-')
        return BOBCAT_ERR_INVAL;
    unsigned shift = 0;
    switch (tolower((unsigned char)*end)) {
    case 'k': shift = 10; end++; break;
    case 'm': shift = 20; end++; break;
    case 'g': shift = 30; end++; break;
    case 't': shift = 40; end++; break;
    default: break;
    }
    if (shift && (*end == 'i' || *end == 'I'))
        end++;
    if (shift && (*end == 'b' || *end == 'B'))
        end++;
    if (*end)
        return BOBCAT_ERR_INVAL;
    if (shift && v > (~0ULL >> shift))
        return BOBCAT_ERR_INVAL;
    *bytes_p = (size_t)(v << shift);
    return BOBCAT_OK;
}

bobcat_status_t util_parse_bool(const char *text, int *value_p)
{
    static const char *const yes[] = {"1", "yes", "on", "true", NULL};
    static const char *const no[] = {"0", "no", "off", "false", "", NULL};
    for (int i = 0; yes[i]; i++)
        if (!strcasecmp(text, yes[i]))
            return *value_p = 1, BOBCAT_OK;
    for (int i = 0; no[i]; i++)
        if (!strcasecmp(text, no[i]))
            return *value_p = 0, BOBCAT_OK;
    return BOBCAT_ERR_INVAL;
}

static bobcat_status_t parse_one(const opt_desc_t *d, const char *text, util_options_t *opts)
{
    char *field = (char *)opts + d->offset;
    switch (d->type) {
    case T_SIZE:
        return util_parse_size(text, (size_t *)field);
    case T_BOOL:
        return util_parse_bool(text, (int *)field);
    case T_DOUBLE: {
        char *end;
        errno = 0;
        double v = strtod(text, &end);
        if (errno || end == text || *end || v < 0)
            return BOBCAT_ERR_INVAL;
        *(double *)field = v;
        return BOBCAT_OK;
    }
    case T_ENUM: {
        const char *const *vals = enum_values(d->name);
        for (int i = 0; vals && vals[i]; i++)
            if (!strcmp(vals[i], text))
                return *(const char **)field = vals[i], BOBCAT_OK;
        return BOBCAT_ERR_INVAL;
    }
    case T_STRING:
        *(const char **)field = text;
        return BOBCAT_OK;
    }
    return BOBCAT_ERR_INVAL;
}

bobcat_status_t util_options_load(util_options_t *opts_p)
{
    util_options_t opts;
    memset(&opts, 0, sizeof opts);
    for (size_t i = 0; i < N_OPTS; i++)
        if (parse_one(&opt_table[i], opt_table[i].def, &opts) != BOBCAT_OK) {
            util_error("internal: bad default for BOBCAT_%s", opt_table[i].name);
            return BOBCAT_ERR_INVAL;
        }
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "BOBCAT_", 7))
            continue;
        const char *name = *e + 7, *eq = strchr(name, '=');
        if (!eq)
            continue;
        size_t len = (size_t)(eq - name);
        const opt_desc_t *d = NULL;
        for (size_t i = 0; i < N_OPTS && !d; i++)
            if (strlen(opt_table[i].name) == len && !strncmp(opt_table[i].name, name, len))
                d = &opt_table[i];
        if (!d) {
            /* BOBCAT_HOME and friends belong to the Python tools, not to the runtime. */
            if (len == 4 && !strncmp(name, "HOME", 4))
                continue;
            util_warn("unknown setting %.*s ignored (see docs/options.md for the knobs)", (int)(len + 7), *e);
            continue;
        }
        if (parse_one(d, eq + 1, &opts) != BOBCAT_OK) {
            const char *const *vals = enum_values(d->name);
            char allowed[128] = "";
            for (int i = 0; vals && vals[i]; i++)
                snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s%s", i ? "|" : "", vals[i]);
            util_error("BOBCAT_%s='%s' is not a valid %s%s%s", d->name, eq + 1,
                       d->type == T_SIZE ? "size (like 512M or 2G)" : d->type == T_BOOL ? "boolean (1/0, yes/no, on/off)"
                       : d->type == T_DOUBLE ? "non-negative number" : "value",
                       vals ? ": use " : "", allowed);
            return BOBCAT_ERR_INVAL;
        }
    }
    *opts_p = opts;
    util_options_cache = opts;
    util_options_cached = 1;
    return BOBCAT_OK;
}

/* The MPI layer lives in another shared object (libbobcat-<mpi>.so) and reads the knobs the
 * constructor already parsed, so unknown-variable warnings are printed once per process. */
BOBCAT_LAYER_API const util_options_t *util_options(void)
{
    if (!util_options_cached) {
        util_options_t o;
        if (util_options_load(&o) != BOBCAT_OK)
            return NULL;
    }
    return &util_options_cache;
}

BOBCAT_EXPORT void bobcat_options_print(int fd, int markdown)
{
    static const char *const type_names[] = {"size", "enum", "bool", "number", "string"};
    FILE *f = fdopen(dup(fd), "w");
    if (!f)
        return;
    if (markdown)
        fprintf(f, "# libbobcat knobs\n\nGenerated from `src/util/options.def` by `bobcat-options --markdown`. "
                   "Each knob is the environment variable `BOBCAT_<NAME>`; unknown `BOBCAT_*` variables get a warning. "
                   "Sizes accept `4k`, `2M`, `1G`; booleans `1/yes/on` and `0/no/off`. Knobs of category `yod` are set by yod "
                   "for every rank.\n\n| variable | type | default | category | meaning |\n|---|---|---|---|---|\n");
    for (size_t i = 0; i < N_OPTS; i++) {
        const opt_desc_t *d = &opt_table[i];
        if (markdown)
            fprintf(f, "| `BOBCAT_%s` | %s | `%s` | %s | %s |\n", d->name, type_names[d->type], d->def, d->category, d->doc);
        else
            fprintf(f, "BOBCAT_%-15s %-6s default=%-6s [%s] %s\n", d->name, type_names[d->type], *d->def ? d->def : "\"\"",
                    d->category, d->doc);
    }
    fclose(f);
}
