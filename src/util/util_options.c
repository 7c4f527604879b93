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
    const util_word_t *words; /* ENUM: the words the knob takes, ending with UTIL_V_N */
} opt_desc_t;

static const opt_desc_t opt_table[] = {
#define BOBCAT_OPT(NAME, TYPE, DEF, CAT, DOC) {#NAME, DEF, CAT, DOC, T_##TYPE, offsetof(util_options_t, NAME), NULL},
#define BOBCAT_OPT_ENUM(NAME, DEF, CAT, VALUES, DOC)                                                                  \
    {#NAME, DEF, CAT, DOC, T_ENUM, offsetof(util_options_t, NAME), (const util_word_t[]){VALUES UTIL_V_N}},
#define V(WORD) UTIL_V_##WORD,
#include "options.def"
#undef V
};
#define N_OPTS (sizeof opt_table / sizeof opt_table[0])

static const char *const word_spelling[UTIL_V_N] = {
#define BOBCAT_WORD(WORD, SPELLING) [UTIL_V_##WORD] = SPELLING,
#include "options.def"
};

const char *util_word_name(util_word_t word) { return (unsigned)word < UTIL_V_N ? word_spelling[word] : "?"; }

/* text is one of the '|'-separated spellings of `spelling`. */
static int spelled(const char *spelling, const char *text)
{
    size_t n = strlen(text);
    for (const char *s = spelling;; s++) {
        const char *bar = strchr(s, '|');
        size_t len = bar ? (size_t)(bar - s) : strlen(s);
        if (len == n && !strncmp(s, text, n))
            return 1;
        if (!bar)
            return 0;
        s = bar;
    }
}

/* The words an enum knob takes, as "auto|huge|thp|small" (sep between them), into buf. */
static const char *words_text(const opt_desc_t *d, const char *sep, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int i = 0; d->words && d->words[i] != UTIL_V_N; i++)
        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", i ? sep : "", word_spelling[d->words[i]]);
    return buf;
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
    case T_ENUM:
        for (int i = 0; d->words[i] != UTIL_V_N; i++)
            if (spelled(word_spelling[d->words[i]], text))
                return *(util_word_t *)field = d->words[i], BOBCAT_OK;
        return BOBCAT_ERR_INVAL;
    case T_STRING:
        *(const char **)field = text;
        return BOBCAT_OK;
    }
    return BOBCAT_ERR_INVAL;
}

bobcat_status_t util_option_word(const char *knob, const char *text, util_word_t *word_p)
{
    util_options_t o;
    for (size_t i = 0; i < N_OPTS; i++)
        if (opt_table[i].type == T_ENUM && !strcmp(opt_table[i].name, knob)) {
            if (parse_one(&opt_table[i], text, &o) != BOBCAT_OK)
                return BOBCAT_ERR_INVAL;
            *word_p = *(const util_word_t *)((const char *)&o + opt_table[i].offset);
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
            char allowed[160];
            util_error("BOBCAT_%s='%s' is not a valid %s%s%s", d->name, eq + 1,
                       d->type == T_SIZE ? "size (like 512M or 2G)" : d->type == T_BOOL ? "boolean (1/0, yes/no, on/off)"
                       : d->type == T_DOUBLE ? "non-negative number" : "value",
                       d->words ? ": use " : "", d->words ? words_text(d, "|", allowed, sizeof allowed) : "");
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
                   "Sizes accept `4k`, `2M`, `1G`; booleans `1/yes/on` and `0/no/off`; an enum takes one of the words listed "
                   "after its type (`a/b`: two spellings of one word), any other is an error at start-up. Knobs of category `yod` are set by yod "
                   "for every rank.\n\n| variable | type | default | category | meaning |\n|---|---|---|---|---|\n");
    for (size_t i = 0; i < N_OPTS; i++) {
        const opt_desc_t *d = &opt_table[i];
        char words[160];
        if (markdown) {
            /* the words in code spans, aliases joined by '/': a '|' would end the table's cell */
            char type[200];
            snprintf(type, sizeof type, "%s", type_names[d->type]);
            if (d->words) {
                words_text(d, "`, `", words, sizeof words);
                for (char *c = words; *c; c++)
                    if (*c == '|')
                        *c = '/';
                snprintf(type + strlen(type), sizeof type - strlen(type), ": `%s`", words);
            }
            fprintf(f, "| `BOBCAT_%s` | %s | `%s` | %s | ", d->name, type, d->def, d->category);
            for (const char *c = d->doc; *c; c++) {
                if (*c == '|')
                    fputc('\\', f); /* a bare '|' would split the table's cell */
                fputc(*c, f);
            }
            fputs(" |\n", f);
        } else {
            fprintf(f, "BOBCAT_%-15s %-6s default=%-6s [%s]%s%s%s %s\n", d->name, type_names[d->type],
                    *d->def ? d->def : "\"\"", d->category, d->words ? " {" : "",
                    d->words ? words_text(d, ", ", words, sizeof words) : "", d->words ? "}" : "", d->doc);
        }
    }
    fclose(f);
}
